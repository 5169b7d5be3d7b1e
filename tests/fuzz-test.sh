#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The device under QEMU's generic-fuzz target, in the sanitizer build
# (scripts/fuzz.sh is the long run, make fuzz): every kept crash input and
# every corpus input replays with no report, then one minute of fuzzing
# from a fixed seed finds nothing.  TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
fuzz=$top/build/qemu-san/qemu-fuzz-x86_64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=detect_leaks=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
n=0 fails=0

t() {
	local name=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name"
		fails=$((fails + 1))
	fi
}

# clean LOG: no sanitizer report, no crash artifact.
clean() {
	local pat='runtime error:|ERROR: (Address|UndefinedBehavior)Sanitizer|deadly signal'

	if grep -qE "$pat" "$1"; then
		grep -E "$pat" "$1" | head -n 20 | sed 's/^/# /'
		return 1
	fi
	! ls "$work"/art/* > /dev/null 2>&1
}

replay() {
	local dir=$1 log=$work/$2.log
	mkdir -p "$work/art"
	ls "$dir" | grep -q . || return 0
	"$fuzz" --fuzz-target=generic-fuzz-uzura -artifact_prefix="$work/art/" \
		"$dir"/* > "$log" 2>&1 && clean "$log"
}

seeded() {
	local log=$work/seeded.log
	mkdir -p "$work/art" "$work/corpus"
	cp -a "$top/tests/fuzz/corpus/." "$work/corpus/"
	"$fuzz" --fuzz-target=generic-fuzz-uzura -seed=1 -max_total_time=60 \
		-artifact_prefix="$work/art/" "$work/corpus" > "$log" 2>&1 || return 1
	grep -h 'DONE' "$log" | sed 's/^/# /'
	clean "$log"
}

[ -x "$fuzz" ] || { echo "Bail out! no $fuzz"; exit 1; }
t "the kept crash inputs (tests/fuzz/crashes) replay with no report" \
	replay "$top/tests/fuzz/crashes" crashes
t "the corpus (tests/fuzz/corpus) replays with no report" \
	replay "$top/tests/fuzz/corpus" corpus
t "generic-fuzz-uzura, seed 1, 60 s: no crash and no sanitizer report" seeded
echo "1..$n"
[ "$fails" -eq 0 ]
