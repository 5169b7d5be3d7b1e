/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer's coverage counters (clang's inline 8-bit counters): the
 * section of the executable that holds them, which a fuzz target that
 * runs each input in a child process copies back from the child, as
 * QEMU's fork-based fuzzing once did with its own linker script.
 */
#ifndef UZURA_FUZZ_COUNTERS_H
#define UZURA_FUZZ_COUNTERS_H

extern uint8_t __start___sancov_cntrs[] __attribute__((weak));
extern uint8_t __stop___sancov_cntrs[] __attribute__((weak));

#endif /* UZURA_FUZZ_COUNTERS_H */
