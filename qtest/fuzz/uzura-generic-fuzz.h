/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The uzura NIC's entry in QEMU's generic-fuzz configurations
 * (tests/qtest/fuzz/generic_fuzz_configs.h includes it inside its table):
 * qemu-fuzz-x86_64 --fuzz-target=generic-fuzz-uzura.
 *
 * Two NICs share a hub, so what one sends the other receives: the fuzzer
 * drives both NICs' registers and doorbells, and every ring, command,
 * WQE and page list the devices read by DMA; frames reach the other NIC's
 * receive path both as RoCEv2 the device built and as raw frames from the
 * Ethernet function's transmit queue, which may be anything.
 */
{
    .name = "uzura",
    .args = "-machine q35 -nodefaults "
            "-netdev hubport,id=p0,hubid=0 -netdev hubport,id=p1,hubid=0 "
            "-device uzura,netdev=p0,mac=52:54:00:7a:00:01 "
            "-device uzura,netdev=p1,mac=52:54:00:7a:00:02",
    .objects = "uzura*",
},
