#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fuzz.sh [SECONDS]: fuzz the uzura device with QEMU's generic-fuzz target
# (qtest/fuzz/uzura-generic-fuzz.h) in the sanitizer build, for SECONDS
# (default FUZZ_TIME or 3600), on both cores.  New inputs that add
# coverage are merged into tests/fuzz/corpus; inputs that crash the
# device (ASan, UBSan, a deadly signal) are kept in tests/fuzz/crashes,
# where make check replays them.  Commit both.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_TIME:-3600}}
fuzz=$top/build/qemu-san/qemu-fuzz-x86_64
work=$top/build/fuzz
log() { printf 'fuzz: %s\n' "$*"; }

[ -x "$fuzz" ] || { log "no $fuzz: run make first"; exit 1; }
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp -a "$top/tests/fuzz/corpus/." "$work/corpus/"
. "$top/tests/sanitizers.sh"

log "generic-fuzz-uzura for $secs s, $(ls "$work/corpus" | wc -l) inputs to start"
# Two workers, one a core; each writes its own log, fuzz-N.log, here.
(cd "$work" && "$fuzz" --fuzz-target=generic-fuzz-uzura -jobs=2 -workers=2 \
	-max_total_time="$secs" -artifact_prefix="$work/artifacts/" \
	"$work/corpus" > "$work/fuzz.log" 2>&1) || true
execs=0
for f in "$work"/fuzz-*.log; do
	n=$(grep -o '^#[0-9]*' "$f" | tail -n 1 | tr -d '#')
	execs=$((execs + ${n:-0}))
done
log "$execs executions in all"

# Keep what adds coverage, minimised, in the repository's corpus.
before=$(ls "$top/tests/fuzz/corpus" | wc -l)
"$fuzz" --fuzz-target=generic-fuzz-uzura -merge=1 "$top/tests/fuzz/corpus" \
	"$work/corpus" > "$work/merge.log" 2>&1 || true
log "corpus: $before -> $(ls "$top/tests/fuzz/corpus" | wc -l) inputs"

found=0
for f in "$work"/artifacts/*; do
	[ -e "$f" ] || continue
	cp "$f" "$top/tests/fuzz/crashes/"
	log "kept $(basename "$f") in tests/fuzz/crashes"
	found=1
done
if san_reports "$work"/fuzz*.log; then
	log "sanitizer reports in $work/fuzz*.log"
	found=1
fi
[ "$found" = 0 ] && log "no crash"
exit "$found"
