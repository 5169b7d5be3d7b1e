# SPDX-License-Identifier: GPL-2.0-or-later
#
# Sourced by scripts/fuzz.sh (make fuzz) and tests/fuzz-test.sh: the fuzz
# targets of the device in the sanitizer build's qemu-fuzz-x86_64, each
# with its corpus and its kept crash inputs under tests/fuzz/, and the
# libFuzzer options it runs with.
#
#   generic-fuzz-uzura         QEMU's generic-fuzz on two NICs
#                              (qtest/fuzz/uzura-generic-fuzz.h)
#   uzura-datapath-fuzz        the data path after a driver's bring-up,
#                              recovery=sr, fault rules loaded
#   uzura-datapath-model-fuzz  the same with the timing model on
#                              (qtest/fuzz/uzura-datapath-fuzz.c)
#   shm-ring-fuzz              the shm link's rings driven by a hostile
#                              peer (tests/unit/shm-ring-fuzz.c), a host
#                              program of the sanitizer build
#
# Needs $top.

fuzz_targets="generic-fuzz-uzura uzura-datapath-fuzz uzura-datapath-model-fuzz shm-ring-fuzz"

# fuzz_cmd TARGET: the command that fuzzes it, before libFuzzer's options.
fuzz_cmd() {
	case $1 in
	shm-ring-fuzz) echo "$top/build/qemu-san/shm-ring-fuzz" ;;
	*) echo "$top/build/qemu-san/qemu-fuzz-x86_64 --fuzz-target=$1" ;;
	esac
}

# fuzz_corpus TARGET, fuzz_crashes TARGET: its directories in tests/fuzz.
fuzz_corpus() {
	case $1 in
	generic-fuzz-uzura) echo corpus ;;
	uzura-datapath-fuzz) echo corpus-datapath ;;
	uzura-datapath-model-fuzz) echo corpus-datapath-model ;;
	shm-ring-fuzz) echo corpus-shm-ring ;;
	esac
}

fuzz_crashes() {
	case $1 in
	generic-fuzz-uzura) echo crashes ;;
	uzura-datapath-fuzz) echo crashes-datapath ;;
	uzura-datapath-model-fuzz) echo crashes-datapath-model ;;
	shm-ring-fuzz) echo crashes-shm-ring ;;
	esac
}

# fuzz_opts TARGET: its libFuzzer options.  The data-path targets run
# inputs in children of the process that did the bring-up (the prologue,
# 157 MiB resident under ASan).  A child checks itself: over 50 ms of
# CPU in one action of an input (UZURA_FUZZ_STALL_MS: a doorbell, a
# frame, a deadline of the clock) or one turn of the main loop after it
# is a stall of QEMU's main loop, when a new child running the same
# inputs stalls again (CPU time is noisy on a busy host); a heap holding
# 64 MiB more than as the child started (UZURA_FUZZ_RSS_MB) is a leak,
# or memory a peer can pin; either stops it with a stack, and the parent
# saves what it ran as a crash input.  The heap in use is counted, not
# resident memory, which ASan's quarantine of freed memory inflates by
# an amount that depends on the parent's history.  The parent waits 20 s
# for a child's answer (a nice-19 worker beside a booting cluster can get
# no CPU for seconds), under libFuzzer's -timeout of 60 s, which covers
# a stall's rerun.  Its -rss_limit_mb watches the parent alone, which
# grows by ASan's quarantine of freed memory (up to 256 MiB) and
# libFuzzer's own corpus: 1024 MiB stops a runaway there.
# -malloc_limit_mb=64: any single allocation over 64 MiB, in parent or
# child.  -entropic=0: libFuzzer's entropic schedule spent more time
# weighing the 36,000 features than the children spent running inputs
# (46 against 75 inputs a second, measured).
fuzz_opts() {
	case $1 in
	generic-fuzz-uzura) ;;
	shm-ring-fuzz) echo "-max_len=4096 -timeout=10" ;;
	*) echo "-rss_limit_mb=1024 -malloc_limit_mb=64 -timeout=60" \
		"-max_len=4096 -entropic=0" ;;
	esac
}

# A fork costs the data-path targets about 10 ms, an input under 1 ms:
# each child runs 64 inputs in a row (73 inputs a second with one a
# child, 659 with 32, 856 with 128, measured on one core).  An input
# after a child's first starts from the state the earlier ones left; a
# failure is saved as the batch and replays as one.  libFuzzer's merge
# (scripts/fuzz.sh) runs each input in a child of its own, so the corpus
# keeps only what an input reaches from the bring-up.
export UZURA_FUZZ_PER_CHILD=${UZURA_FUZZ_PER_CHILD:-64}
