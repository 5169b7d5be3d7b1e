# SPDX-License-Identifier: GPL-2.0-or-later
#
# Sourced where the sanitizer build of QEMU runs (tests/run-all.sh for the
# qtests, tests/fuzz-test.sh, scripts/fuzz.sh): the sanitizers' options,
# and what one of their reports looks like.  Leak checking is off: QEMU
# frees little at exit.

export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# san_reports FILE...: print the report lines in FILE as TAP comments;
# true when there is one.
san_reports() {
	grep -hE 'runtime error:|ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|deadly signal|ERROR: uzura-datapath-fuzz' "$@" |
		head -n 20 | sed 's/^/# /' | grep .
}
