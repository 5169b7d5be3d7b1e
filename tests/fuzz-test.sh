#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The device under its fuzz targets (tests/fuzz-targets.sh), in the
# sanitizer build (scripts/fuzz.sh is the long run, make fuzz): for each
# target, every kept crash input and every corpus input replays with no
# report, then 20 seconds of fuzzing from a fixed seed find nothing (80
# seconds for the four).  TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
. "$top/tests/sanitizers.sh"
. "$top/tests/fuzz-targets.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
secs=${FUZZ_TEST_TIME:-20}

# nonempty DIR: DIR holds a file (no ls | grep -q, which pipefail fails
# when grep leaves before ls is done).
nonempty() {
	[ -n "$(ls "$1" 2> /dev/null)" ]
}

# clean LOG: no sanitizer report, no crash artifact.  Otherwise the
# harness's and the sanitizers' own lines say what happened, and the
# artifacts go, so that the next run is judged on its own.
clean() {
	if ! san_reports "$1" > /dev/null && ! ls "$work"/art/* > /dev/null 2>&1; then
		return 0
	fi
	grep -a -E 'ERROR|SUMMARY|runtime error|stall|hung' "$1" | head -n 12 |
		sed 's/^/# /'
	rm -f "$work"/art/*
	return 1
}

# replay TARGET DIR NAME: every input in DIR runs once, with no report.
replay() {
	local target=$1 dir=$2 log=$work/$3.log
	mkdir -p "$work/art"
	# shellcheck disable=SC2046
	$(fuzz_cmd "$target") $(fuzz_opts "$target") \
		-artifact_prefix="$work/art/" "$dir"/* > "$log" 2>&1
	local rc=$?
	clean "$log" && [ "$rc" -eq 0 ]
}

# seeded TARGET: seed 1 for $secs s from a copy of its corpus.
seeded() {
	local target=$1 log=$work/$1-seeded.log
	rm -rf "$work/corpus"
	mkdir -p "$work/art" "$work/corpus"
	cp -a "$top/tests/fuzz/$(fuzz_corpus "$target")/." "$work/corpus/"
	# shellcheck disable=SC2046
	$(fuzz_cmd "$target") $(fuzz_opts "$target") -seed=1 \
		-max_total_time="$secs" -artifact_prefix="$work/art/" \
		"$work/corpus" > "$log" 2>&1
	local rc=$?
	grep -h 'DONE' "$log" | sed 's/^/# /'
	clean "$log" && [ "$rc" -eq 0 ]
}

for target in $fuzz_targets; do
	f=$(fuzz_cmd "$target")
	[ -x "${f%% *}" ] || { echo "Bail out! no ${f%% *}"; exit 1; }
done
for target in $fuzz_targets; do
	crashes=tests/fuzz/$(fuzz_crashes "$target")
	corpus=tests/fuzz/$(fuzz_corpus "$target")
	if nonempty "$top/$crashes"; then
		t "$target: the kept crash inputs ($crashes) replay with no report" \
			replay "$target" "$top/$crashes" "$target-crashes"
	else
		echo "# $target: no crash input kept in $crashes"
	fi
	if nonempty "$top/$corpus"; then
		t "$target: the corpus ($corpus) replays with no report" \
			replay "$target" "$top/$corpus" "$target-corpus"
	else
		echo "# $target: no corpus in $corpus"
	fi
	t "$target, seed 1, $secs s: no crash and no sanitizer report" \
		seeded "$target"
done
echo "1..$n"
[ "$fails" -eq 0 ]
