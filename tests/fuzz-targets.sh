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

fuzz_targets="generic-fuzz-uzura uzura-datapath-fuzz uzura-datapath-model-fuzz"

# fuzz_corpus TARGET, fuzz_crashes TARGET: its directories in tests/fuzz.
fuzz_corpus() {
	case $1 in
	generic-fuzz-uzura) echo corpus ;;
	uzura-datapath-fuzz) echo corpus-datapath ;;
	uzura-datapath-model-fuzz) echo corpus-datapath-model ;;
	esac
}

fuzz_crashes() {
	case $1 in
	generic-fuzz-uzura) echo crashes ;;
	uzura-datapath-fuzz) echo crashes-datapath ;;
	uzura-datapath-model-fuzz) echo crashes-datapath-model ;;
	esac
}

# fuzz_opts TARGET: its libFuzzer options.  The data-path targets run each
# input in a child of the process that did the bring-up (the prologue,
# 157 MiB resident under ASan).  The child checks itself: over 50 ms of
# CPU on one input (UZURA_FUZZ_STALL_MS) is a stall, and resident memory
# 64 MiB past the parent's (UZURA_FUZZ_RSS_MB) a leak; either stops it
# with a crash input and a stack.  libFuzzer counts its -timeout in whole
# seconds: 5 s catches a child that hangs without burning CPU.  Its
# -rss_limit_mb watches the parent alone, which grows by ASan's
# quarantine of freed memory (up to 256 MiB) and libFuzzer's own corpus:
# 1024 MiB stops a runaway there.  -malloc_limit_mb=64: any single
# allocation over 64 MiB, in parent or child.
fuzz_opts() {
	case $1 in
	generic-fuzz-uzura) ;;
	*) echo "-rss_limit_mb=1024 -malloc_limit_mb=64 -timeout=5" \
		"-max_len=4096" ;;
	esac
}
