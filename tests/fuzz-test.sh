#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The device under QEMU's generic-fuzz target, in the sanitizer build
# (scripts/fuzz.sh is the long run, make fuzz): every kept crash input and
# every corpus input replays with no report, then one minute of fuzzing
# from a fixed seed finds nothing.  TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
. "$top/tests/sanitizers.sh"
fuzz=$top/build/qemu-san/qemu-fuzz-x86_64
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# clean LOG: no sanitizer report, no crash artifact.
clean() {
	! san_reports "$1" && ! ls "$work"/art/* > /dev/null 2>&1
}

# replay DIR NAME: every input in DIR runs once, with no report.
replay() {
	local dir=$1 log=$work/$2.log
	mkdir -p "$work/art"
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
if ls "$top/tests/fuzz/crashes" | grep -q .; then
	t "the kept crash inputs (tests/fuzz/crashes) replay with no report" \
		replay "$top/tests/fuzz/crashes" crashes
else
	echo "# no crash input kept in tests/fuzz/crashes"
fi
t "the corpus (tests/fuzz/corpus) replays with no report" \
	replay "$top/tests/fuzz/corpus" corpus
t "generic-fuzz-uzura, seed 1, 60 s: no crash and no sanitizer report" seeded
echo "1..$n"
[ "$fails" -eq 0 ]
