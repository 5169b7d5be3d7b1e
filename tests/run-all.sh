#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run every uzura test suite (--large: those of tests/large only) and
# print one summary line:
#   N passed, N failed
# Each suite speaks TAP; every "ok"/"not ok" line counts as one test.
# Logs go to build/test-logs/.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
logs=$top/build/test-logs
mkdir -p "$logs"
passed=0
failed=0

# run_suite NAME CMD...: run a TAP-speaking suite, count its results.
run_suite() {
	local name=$1 log=$logs/$1.log p f rc
	shift
	echo "== $name"
	"$@" > "$log" 2>&1
	rc=$?
	p=$(grep -cE '^ok ' "$log")
	f=$(grep -cE '^not ok ' "$log")
	# Each result; a failure with the comments its suite printed just
	# before it (the failing tools' output), so that a log of this
	# output alone says why.
	awk '/^#/ { c[n++ % 40] = $0; next }
	     /^(not )?ok / {
		if (/^not ok /)
			for (i = n > 40 ? n - 40 : 0; i < n; i++)
				print "      " c[i % 40]
		print "   " $0; n = 0
	     }' "$log"
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# The suite died before reporting a failure: count that.
		echo "   not ok - $name exited with status $rc (see $log)"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

# make check-large: the suites of tests/large (many nodes), nothing else.
if [ "${1:-}" = --large ]; then
	for t in "$top"/tests/large/*-test.sh; do
		[ -x "$t" ] && run_suite "large-$(basename "$t" -test.sh)" "$t"
	done
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
fi

# Host unit tests: the program the host meson project built from each
# tests/unit/NAME.c (build/host also holds guest programs).
for t in "$top"/tests/unit/*-test.c; do
	t=$top/build/host/$(basename "$t" .c)
	[ -x "$t" ] && run_suite "unit-$(basename "$t")" "$t"
done

# Style: QEMU's and the kernel's checkpatch (make lint).
run_suite lint "$top/scripts/lint.sh"

# The qtests run against the sanitizer build (AddressSanitizer and
# UndefinedBehaviorSanitizer): a report stops QEMU, and any report in a
# log fails the suite.
san=$top/build/qemu-san
. "$top/tests/sanitizers.sh"
export QTEST_QEMU_BINARY=$san/qemu-system-x86_64
export QTEST_QEMU_IMG=/bin/false
for t in "$top"/qtest/*-test.c; do
	t=$(basename "$t" .c)
	run_suite "qtest-$t" "$san/tests/qtest/$t" --tap -k
	if san_reports "$logs/qtest-$t.log" > /dev/null; then
		echo "   not ok - qtest-$t: sanitizer report (see $logs/qtest-$t.log)"
		failed=$((failed + 1))
	fi
done
unset ASAN_OPTIONS UBSAN_OPTIONS

# Cluster suites, one after another (one cluster runs at a time): the boot
# test first, then every other tests/NAME-test.sh, which boots its own nodes.
run_suite boot "$top/tests/boot-test.sh"
for t in "$top"/tests/*-test.sh; do
	[ "$t" != "$top/tests/boot-test.sh" ] && [ -x "$t" ] &&
		run_suite "$(basename "$t" -test.sh)" "$t"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
