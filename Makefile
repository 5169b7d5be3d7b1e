# SPDX-License-Identifier: GPL-2.0-or-later
#
# uzura front door: a thin wrapper over the real builds (QEMU's meson/ninja,
# the host meson project, kbuild, the image builder).  Every step is a quick
# no-op when its output is up to date.

BUILD     := build
CACHE     ?= $(or $(UZURA_CACHE),$(HOME)/.cache/uzura)
QEMU_SRC  := $(BUILD)/qemu-src
QEMU_DIR  := $(BUILD)/qemu
QEMU_SAN_DIR := $(BUILD)/qemu-san
HOST_DIR  := $(BUILD)/host
export UZURA_CACHE := $(CACHE)

.PHONY: all setup sources qemu qemu-release qemu-san host image cluster-parts check check-large lint fuzz demo bench bench-mpi clean distclean help

all: qemu host image

# What a cluster needs: the release QEMU (no sanitizer build), the driver
# and provider, the image.  make demo and the benchmarks build only this.
cluster-parts: qemu-release host image

help:
	@echo "make          build QEMU with the device, the driver, the guest image"
	@echo "make check    build what is missing and run every test"
	@echo "make check-large  MPI on 4-16 nodes, two hosts, the whole MPI suite, slow qtests"
	@echo "make lint     QEMU's and the kernel's checkpatch on the code (make check runs it)"
	@echo "make fuzz     fuzz the device for FUZZ_TIME seconds (default 3600;" \
		"FUZZ_TARGETS: some of tests/fuzz-targets.sh's)"
	@echo "make demo     boot two nodes: RDMA write, CRW, an MPI job, faults"
	@echo "make bench    uzura vs rxe vs TCP benchmark (bench/run; BENCH_ARGS=--quick)"
	@echo "make bench-mpi  MPI latency and bandwidth, uzura vs rxe vs TCP (bench/mpi)"
	@echo "make clean    remove build outputs (keeps downloads and the QEMU tree)"
	@echo "make distclean  remove build/ entirely"

setup:
	@scripts/setup-host.sh

sources: setup
	@scripts/fetch-source.sh qemu trixie 10.0. $(QEMU_SRC)
	@scripts/fetch-source.sh rdma-core trixie 56. $(BUILD)/rdma-core-src
	@echo "versions: QEMU $$(cat $(QEMU_SRC)/.uzura-version)," \
	      "rdma-core $$(cat $(BUILD)/rdma-core-src/.uzura-version)," \
	      "guest kernel $$(scripts/kernel-version.sh)"

qemu: qemu-release qemu-san

qemu-release: sources
	@scripts/build-qemu.sh $(QEMU_SRC) $(QEMU_DIR)

# The sanitizer build: make check's qtests and the fuzzer.
qemu-san: sources
	@scripts/build-qemu.sh --sanitize $(QEMU_SRC) $(QEMU_SAN_DIR)

# The host meson project: the guest driver, the verbs provider (out of the
# rdma-core source), the uzura layer disk and the host unit tests.
host: setup sources
	@[ -f $(HOST_DIR)/build.ninja ] || meson setup $(HOST_DIR) . >/dev/null
	@ninja -C $(HOST_DIR)

image: setup
	@images/build-image.sh $(BUILD)/image

check: all
	@tests/run-all.sh

# QEMU's checkpatch on hw/, the qtests and the QEMU patches, the kernel's
# on the driver (scripts/lint.sh); make check runs it as a suite.
lint: sources
	@scripts/lint.sh

# The suites of tests/large, longer than make check's budget: MPI on 4,
# 8 and 16 nodes, two hosts over VXLAN, the whole MPI suite, slow qtests.
check-large: all
	@tests/run-all.sh --large

# Fuzz the device (scripts/fuzz.sh): new corpus inputs and any crashing
# input land in tests/fuzz/, to commit.
fuzz: qemu-san
	@scripts/fuzz.sh $(FUZZ_TIME)

demo: cluster-parts
	@scripts/demo.sh

# The benchmark (bench/README.md): about 15 minutes; BENCH_ARGS=--quick
# for a short one.
bench: cluster-parts
	@bench/run $(BENCH_ARGS)

# MPI on uzura, rxe and TCP (bench/README.md, "bench/mpi"); BENCH_ARGS=--quick
# for a short one.
bench-mpi: cluster-parts
	@bench/mpi $(BENCH_ARGS)

clean:
	-@[ ! -f $(QEMU_DIR)/build.ninja ] || ninja -C $(QEMU_DIR) -t clean >/dev/null
	-@[ ! -f $(QEMU_SAN_DIR)/build.ninja ] || ninja -C $(QEMU_SAN_DIR) -t clean >/dev/null
	-@$(MAKE) -s -C guest-driver clean 2>/dev/null
	-@$(MAKE) -s -C bench/kmod clean 2>/dev/null
	rm -rf $(HOST_DIR) $(BUILD)/cluster $(BUILD)/image $(BUILD)/test-logs

distclean:
	-@./uzura down
	rm -rf $(BUILD)
