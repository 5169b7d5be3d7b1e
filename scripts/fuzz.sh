#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fuzz.sh [SECONDS]: fuzz the uzura device in the sanitizer build with its
# fuzz targets (tests/fuzz-targets.sh): QEMU's generic-fuzz on two NICs,
# the data-path targets, which bring the NICs up as the driver does and
# then post WQEs, send frames in from the wire and step the clock
# (recovery=sr with fault rules; the timing model), and the shm link's
# rings under a hostile peer.  SECONDS (default FUZZ_TIME or 3600) is
# shared out evenly: each target fuzzes for its share of it, one after
# the other, with FUZZ_JOBS (default 2)
# workers, one a core.  FUZZ_TARGETS names fewer targets, which then
# share the time.  New inputs that add coverage are merged into each
# target's corpus in tests/fuzz (corpus, corpus-datapath,
# corpus-datapath-model, corpus-shm-ring); inputs that crash the device
# (ASan, UBSan, a deadly signal, a stall or runaway memory) are kept in
# its crashes directory (crashes, crashes-datapath, ...), where make
# check replays them.  Commit both.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_TIME:-3600}}
jobs=${FUZZ_JOBS:-2}
log() { printf 'fuzz: %s\n' "$*"; }

. "$top/tests/sanitizers.sh"
. "$top/tests/fuzz-targets.sh"
targets=${FUZZ_TARGETS:-$fuzz_targets}
for target in $targets; do
	[ -n "$(fuzz_corpus "$target")" ] || { log "no target $target"; exit 1; }
	fuzz=$(fuzz_cmd "$target")
	[ -x "${fuzz%% *}" ] || { log "no ${fuzz%% *}: run make first"; exit 1; }
done
ntargets=$(wc -w <<< "$targets")
each=$((secs / ntargets))
[ "$each" -gt 0 ] || each=1
found=0

for target in $targets; do
	corpus=$top/tests/fuzz/$(fuzz_corpus "$target")
	crashes=$top/tests/fuzz/$(fuzz_crashes "$target")
	work=$top/build/fuzz/$target
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts" "$corpus" "$crashes"
	cp -a "$corpus/." "$work/corpus/"

	log "$target for $each s, $(ls "$work/corpus" | wc -l) inputs to start"
	# Each worker writes its own log, fuzz-N.log, in $work.
	# shellcheck disable=SC2046
	(cd "$work" && $(fuzz_cmd "$target") $(fuzz_opts "$target") \
		-jobs="$jobs" -workers="$jobs" -max_total_time="$each" \
		-artifact_prefix="$work/artifacts/" "$work/corpus" \
		> "$work/fuzz.log" 2>&1) || true
	execs=0
	for f in "$work"/fuzz-*.log; do
		[ -e "$f" ] || continue
		n=$(grep -ao '^#[0-9][0-9]*' "$f" | tail -n 1 | tr -d '#')
		execs=$((execs + ${n:-0}))
	done
	log "$target: $execs executions"

	# Keep what adds coverage, minimised, in the repository's corpus.
	before=$(ls "$corpus" | wc -l)
	# shellcheck disable=SC2046
	UZURA_FUZZ_PER_CHILD=1 \
		$(fuzz_cmd "$target") $(fuzz_opts "$target") -merge=1 \
		"$corpus" "$work/corpus" > "$work/merge.log" 2>&1 || true
	log "$target: corpus $before -> $(ls "$corpus" | wc -l) inputs"

	for f in "$work"/artifacts/*; do
		[ -e "$f" ] || continue
		# libFuzzer's slow units are wall time, which a busy host
		# inflates; a stall is the harness's own check, on CPU time.
		case ${f##*/} in
		slow-unit-*) log "not kept: ${f##*/} (wall time only)"; continue ;;
		esac
		cp "$f" "$crashes/"
		log "kept $(basename "$f") in tests/fuzz/$(fuzz_crashes "$target")"
		found=1
	done
	if san_reports "$work"/fuzz*.log; then
		log "sanitizer reports in $work/fuzz*.log"
		found=1
	fi
done
[ "$found" = 0 ] && log "no crash"
exit "$found"
