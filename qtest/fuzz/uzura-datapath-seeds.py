#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# uzura-datapath-seeds.py DIR: write the seed inputs of the data-path fuzz
# targets (qtest/fuzz/uzura-datapath-fuzz.c) into DIR, one file each.
# Each seed is a short scenario in the targets' action encoding: one
# feature of the data path driven the way a user would drive it (a
# message of each kind on each transport, tag matching, XRC, windows,
# fast registration, ODP, device memory, selective repeat after a loss,
# frames from the wire of every kind), which the fuzzer then mutates.
# The encoding is the C file's: keep the two in step.
import os
import struct
import sys

# Actions: the first byte modulo 32 (uzf_actions[]).
SEND, RECV, INJECT, CLOCK, POLL, TM, SHADOW, DOORBELL, QP, PROP, RAW, \
    ADMIN = 0, 8, 12, 18, 21, 24, 26, 27, 28, 29, 30, 31

# QPs (uzf_act_send's senders[] and the QP_* order).
A0, A1, B0, B1, TM_CLI, TM_SRV, UC0, UC1, UD0, UD1, XRC_INI, XRC_TGT, \
    RAW0, RAW1 = range(14)
SENDER = {A0: 0, A1: 1, B0: 2, B1: 3, TM_CLI: 4, TM_SRV: 5, UC0: 6, UC1: 7,
          UD0: 8, UD1: 9, XRC_INI: 10, RAW0: 16, RAW1: 17}

# Work request opcodes: indexes in uzf_rc_ops[] (UC: uzf_uc_ops[]).
W_SEND, W_SEND_IMM, W_SEND_INV, W_WRITE, W_WRITE_IMM, W_READ, W_CMP_SWP, \
    W_FETCH_ADD, W_LOCAL_INV, W_REG_MR, W_BIND_MW, W_FLUSH, \
    W_ATOMIC_WRITE, W_CRW, W_STCRW = range(15)
UC_SEND, UC_SEND_IMM, UC_WRITE, UC_WRITE_IMM = range(4)

# Keys (UzfNode.keys[]).
K_MAIN, K_SMALL, K_ODP, K_DM, K_MW1, K_MW2, K_FAST, K_DMA = range(8)

SIGNALED, SOLICITED, FENCE, INLINE = 1, 2, 4, 8


def u8(v):
    return struct.pack('<B', v & 0xff)


def u16(v):
    return struct.pack('<H', v & 0xffff)


def u32(v):
    return struct.pack('<I', v & 0xffffffff)


def u64(v):
    return struct.pack('<Q', v & 0xffffffffffffffff)


def sge(key, off, length):
    return u8(key) + u16(off) + u16(length)


def send(qp, op, sges=(), flags=SIGNALED, rkey=K_MAIN, roff=0, imm=0,
         tag=0, crw_len=0, misc=0, extra=b''):
    """A WQE on @qp's SQ; @extra: the opcode's own fields, in order."""
    b = u8(SEND) + u8(SENDER[qp]) + u8(op) + u8(flags)
    b += u8(misc | len(sges))
    for s in sges:
        b += sge(*s)
    b += u8(rkey) + u16(roff) + u32(imm) + u8(tag) + u16(crw_len)
    return b + extra


def recv(target, sges=(), misc=0):
    """A receive WQE: 0..6 the RQs of A0 A1 B0 TM_CLI UC0 UD0 UD1, 7 uz1's
    SRQ, 8 its XRC SRQ, 9 its TM SRQ, 10 uz0's SRQ, 11, 12 the RQs of the
    raw QPs RAW0, RAW1."""
    b = u8(RECV) + u8(target) + u8(misc | len(sges))
    for s in sges:
        b += sge(*s)
    return b


def clock(shift, mult=0):
    return u8(CLOCK) + u8(shift << 3 | mult)


def poll(how=0):
    return u8(POLL) + u8(how)


def tm(opcode, index, tag=0, s=(K_MAIN, 0, 0), flags=1, nsge=1, mask=0):
    b = u8(TM) + u8(opcode) + u8(mask << 6 | nsge << 2 | flags)
    b += u8(index) + u8(0)
    if opcode == 1:
        b += u8(tag) + sge(*s)
    return b


def inject(qp, opsel, misc=0, bad=0, psn=0, fields=b''):
    """A frame from the wire for @qp; @fields: what the opcode reads
    after the PSN delta, in order (see uzf_act_inject)."""
    return u8(INJECT) + u8(qp) + u8(opsel) + u8(misc) + u8(bad) + \
        u8(psn) + fields


def qp_state(b, qi, extra=b''):
    return u8(QP) + u8(b) + u8(qi) + extra


def prop(b, extra=b''):
    return u8(PROP) + u8(b) + extra


def settle(n=3):
    """Let frames, ACKs and timers run: clock steps of 1 us, 4 ms and
    134 ms (past an ACK timeout), with polls."""
    steps = [clock(10), clock(22), clock(26, 1)]
    return b''.join(steps[k % 3] + poll() for k in range(n))


# Request opcode selectors (uzf_rc_req[]), response ones (uzf_rc_resp[],
# with bit 7 set for an RC QP).
R_SEND_FIRST, R_SEND_ONLY, R_SEND_ONLY_IMM, R_WRITE_FIRST, R_WRITE_MIDDLE, \
    R_WRITE_ONLY, R_READ, R_CMP_SWP, R_FETCH_ADD, R_SEND_INV, R_FLUSH, \
    R_ATOMIC_WRITE, R_STCRW = 0, 4, 5, 6, 7, 10, 12, 13, 14, 16, 17, 18, 19
P_READ_FIRST, P_READ_MIDDLE, P_READ_LAST, P_READ_ONLY, P_ACK, \
    P_ATOMIC_ACK, P_SACK = 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86


def seeds():
    s = {}
    data = [(K_MAIN, 0, 3000)]
    s['rc-write'] = send(A0, W_WRITE, data, rkey=K_MAIN, roff=100) + \
        settle()
    s['rc-send'] = recv(1, [(K_MAIN, 0, 4096)]) + \
        send(A0, W_SEND_IMM, data, imm=0x1234) + settle()
    s['rc-read'] = send(A0, W_READ, [(K_MAIN, 0, 2500)], rkey=K_MAIN,
                        roff=512) + settle()
    s['rc-atomics'] = send(A0, W_CMP_SWP, [(K_MAIN, 0, 8)], roff=64,
                           extra=u64(0) + u64(5)) + \
        send(A0, W_FETCH_ADD, [(K_MAIN, 8, 8)], roff=72,
             extra=u64(3) + u64(0)) + \
        send(A0, W_ATOMIC_WRITE, [], roff=80, extra=u64(7) + u64(0)) + \
        send(A0, W_FLUSH, [], roff=0, extra=u8(1) + u16(4096)) + settle()
    s['rc-inline'] = send(A1, W_WRITE, [], flags=SIGNALED | INLINE,
                          roff=300, extra=u16(100)) + settle()
    s['rc-mtu256-srq'] = recv(7, [(K_MAIN, 0, 8192)]) + \
        recv(7, [(K_MAIN, 8192, 8192)]) + \
        send(B0, W_SEND, [(K_MAIN, 0, 5000)]) + \
        send(B0, W_WRITE, [(K_MAIN, 0, 6000)], roff=2000) + \
        settle(2) + clock(24) + settle(3) + clock(24) + settle(2)
    s['rc-loss-sr'] = send(A0, W_WRITE, [(K_MAIN, 0, 9000)]) + \
        send(A0, W_WRITE, [(K_MAIN, 0, 4000)], roff=9000) + settle(2) + \
        clock(25) + settle(3) + clock(25) + settle(2)
    s['rc-crw'] = send(A0, W_CRW, [(K_MAIN, 0, 1000)], tag=1) + poll() + \
        send(A1, W_STCRW, [], rkey=K_MAIN, roff=2048, tag=1,
             crw_len=4096) + settle() + \
        send(A1, W_STCRW, [], rkey=K_MAIN, roff=0, tag=2, crw_len=512) + \
        poll() + send(A0, W_CRW, [(K_MAIN, 0, 200)], tag=2) + settle()
    s['mw'] = send(A1, W_WRITE, [(K_MAIN, 0, 512)], rkey=K_MW1, roff=64) + \
        send(A0, W_BIND_MW, [], misc=0x20, roff=8192,
             extra=u8(0x33) + u16(4096) + u8(6)) + settle(1) + \
        send(A1, W_READ, [(K_MAIN, 0, 256)], rkey=K_MW2, roff=0) + \
        settle(1) + send(A1, W_SEND_INV, [(K_MAIN, 0, 16)], misc=0) + \
        recv(0, [(K_MAIN, 0, 64)]) + \
        send(A0, W_LOCAL_INV, [], misc=0x20) + settle()
    s['fast-reg'] = send(A0, W_REG_MR, [], roff=0,
                         extra=u8(0x44) + u16(8192) + u8(0x0f) + u8(2)) + \
        settle(1) + send(A1, W_WRITE, [(K_MAIN, 0, 5000)], rkey=K_FAST,
                         roff=10) + settle() + \
        send(A1, W_SEND_INV, [(K_MAIN, 0, 16)], misc=0x20) + \
        recv(0, [(K_MAIN, 0, 64)]) + settle()
    s['odp'] = send(A1, W_WRITE, [(K_MAIN, 0, 6000)], rkey=K_ODP,
                    roff=100) + settle(2) + clock(12) + settle(3) + \
        send(A0, W_READ, [(K_ODP, 0, 3000)], rkey=K_MAIN) + settle(3) + \
        send(A1, W_READ, [(K_MAIN, 0, 3000)], rkey=K_ODP, roff=4000) + \
        poll(8) + settle(3)
    s['dm-dma'] = send(A1, W_WRITE, [(K_MAIN, 0, 3000)], rkey=K_DM,
                       roff=10) + \
        send(A1, W_READ, [(K_DMA, 0, 2000)], rkey=K_DM, roff=0) + \
        send(A0, W_WRITE, [(K_DM, 0, 1000)], rkey=K_DMA, roff=0) + \
        settle()
    s['uc'] = recv(4, [(K_MAIN, 0, 4096)]) + \
        send(UC1, UC_WRITE_IMM, [(K_MAIN, 0, 2500)], roff=100) + \
        send(UC1, UC_SEND, [(K_MAIN, 0, 2000)]) + \
        recv(7, [(K_MAIN, 0, 4096)]) + \
        send(UC0, UC_SEND_IMM, [(K_MAIN, 0, 3000)]) + settle()
    s['ud'] = recv(6, [(K_MAIN, 0, 2048)]) + recv(5, [(K_MAIN, 0, 2048)]) + \
        send(UD0, 0, [(K_MAIN, 0, 1000)], extra=u8(0)) + \
        send(UD1, 1, [(K_MAIN, 0, 500)], extra=u8(0x10)) + settle()
    s['xrc'] = recv(8, [(K_MAIN, 0, 4096)]) + \
        send(XRC_INI, W_SEND, [(K_MAIN, 0, 3000)]) + \
        send(XRC_INI, W_WRITE, [(K_MAIN, 0, 3000)], roff=100) + \
        send(XRC_INI, W_READ, [(K_MAIN, 0, 3000)], roff=100) + settle()
    s['tm'] = recv(9, [(K_MAIN, 32768, 4096)]) + \
        recv(9, [(K_MAIN, 36864, 4096)]) + recv(3, [(K_MAIN, 40960, 256)]) + \
        tm(1, 2, tag=3, s=(K_MAIN, 45056, 4096)) + \
        send(TM_CLI, W_SEND, [(K_MAIN, 0, 400)]) + settle(1) + \
        send(TM_CLI, W_SEND, [(K_MAIN, 64, 32)]) + settle(2) + \
        send(TM_CLI, W_SEND, [(K_MAIN, 128, 100)]) + settle(1) + \
        send(TM_CLI, W_SEND, [(K_MAIN, 256, 300)]) + settle(1) + \
        tm(2, 2) + tm(3, 0) + settle(2)
    # Frames from the wire.
    s['wire-requests'] = recv(1, [(K_MAIN, 0, 4096)]) + \
        inject(A1, R_SEND_ONLY, fields=u8(K_MAIN) + u16(200)) + \
        inject(A1, R_WRITE_ONLY, psn=0, fields=u8(K_MAIN) + u16(64) +
               u16(300) + u16(300)) + \
        inject(A1, R_READ, fields=u8(K_MAIN) + u16(0) + u16(2000)) + \
        inject(A1, R_CMP_SWP, fields=u8(K_MAIN) + u16(8) + u64(1) +
               u64(0)) + \
        inject(A1, R_FETCH_ADD, fields=u8(K_MAIN) + u16(16) + u64(1) +
               u64(0)) + settle()
    s['wire-write-multi'] = \
        inject(B1, R_WRITE_FIRST, fields=u8(K_MAIN) + u16(0) + u16(600) +
               u16(256)) + \
        inject(B1, R_WRITE_MIDDLE, fields=u8(K_MAIN) + u16(256)) + \
        inject(B1, 8, fields=u8(K_MAIN) + u16(88)) + settle()
    s['wire-sr-hole'] = \
        inject(A1, R_WRITE_ONLY, misc=0x20, psn=2,
               fields=u8(K_MAIN) + u16(0) + u16(100) + u16(100)) + \
        inject(A1, R_WRITE_ONLY, misc=0x20, psn=1,
               fields=u8(K_MAIN) + u16(100) + u16(100) + u16(100)) + \
        inject(A1, R_WRITE_ONLY, misc=0x20, psn=0,
               fields=u8(K_MAIN) + u16(200) + u16(100) + u16(100)) + \
        settle()
    # With uz1's cable out, the responses come from the wire alone.
    s['wire-responses'] = prop(9) + send(A0, W_READ, [(K_MAIN, 0, 3000)]) + \
        poll() + inject(A0, P_READ_FIRST, psn=0xfe,
                        fields=u8(0) + u8(0) + u16(0) + u16(1024)) + \
        inject(A0, P_READ_MIDDLE, psn=0xff, fields=u8(0) + u16(1024)) + \
        inject(A0, P_READ_LAST, psn=0, fields=u8(0) + u8(0) + u16(0) +
               u16(952)) + \
        send(A0, W_WRITE, [(K_MAIN, 0, 100)]) + \
        inject(A0, P_ACK, fields=u8(0) + u8(4) + u16(0)) + \
        inject(A0, P_ACK, fields=u8(0) + u8(3) + u16(0)) + \
        inject(A0, P_SACK, fields=u8(0) + u8(0) + u16(0) + u8(0) +
               u8(1)) + \
        send(A0, W_FETCH_ADD, [(K_MAIN, 0, 8)], extra=u64(1) + u64(0)) + \
        inject(A0, P_ATOMIC_ACK, fields=u8(0) + u8(0) + u16(0) + u64(9)) + \
        settle() + prop(9 | 0x80)
    s['wire-ud-uc-xrc'] = recv(6, [(K_MAIN, 0, 4096)]) + \
        inject(UD1, 0, fields=u8(0) + u16(100)) + \
        recv(7, [(K_MAIN, 0, 4096)]) + \
        inject(UC1, 4, fields=u8(0) + u16(100)) + \
        recv(8, [(K_MAIN, 0, 4096)]) + \
        inject(XRC_TGT, R_SEND_ONLY, fields=u8(0) + u16(100)) + \
        inject(XRC_TGT, R_WRITE_ONLY, fields=u8(0) + u16(0) + u16(64) +
               u16(64)) + settle()
    s['wire-tm'] = recv(9, [(K_MAIN, 32768, 4096)]) + \
        inject(TM_SRV, R_SEND_ONLY, misc=0x03, fields=u8(0) + u16(200)) + \
        inject(TM_SRV, R_SEND_ONLY, misc=0x11, fields=u8(0) + u16(48)) + \
        inject(TM_SRV, R_SEND_ONLY, misc=0x00, fields=u8(0) + u16(64)) + \
        settle(3)
    s['wire-stcrw'] = send(A0, W_CRW, [(K_MAIN, 0, 300)], tag=3) + poll() + \
        inject(A0, R_STCRW, fields=u8(0) + u8(3) + u8(K_MAIN) + u16(0) +
               u16(4096)) + settle()
    s['wire-flawed'] = \
        inject(A1, R_SEND_ONLY, bad=0xe0, fields=u8(0) + u16(10)) + \
        inject(A1, R_SEND_ONLY, bad=0xe4, fields=u8(0) + u16(10)) + \
        inject(A1, R_SEND_ONLY, bad=0xe9, fields=u8(0) + u16(10)) + \
        inject(A1, R_SEND_ONLY, bad=0xec, fields=u8(0) + u16(10) +
               u16(50) + u8(0x77)) + \
        inject(A1, R_SEND_ONLY, bad=0xf4, psn=0x7f, fields=u8(0) + u8(0) +
               u16(10)) + \
        inject(A1, R_SEND_ONLY, bad=0xf8, fields=u8(0) + u16(10)) + \
        inject(A1, R_SEND_ONLY, bad=0xfd, fields=u8(0) + u16(10)) + \
        poll()
    s['model-ctl'] = recv(11, [(K_MAIN, 0, 256)]) + \
        recv(12, [(K_MAIN, 0, 256)]) + b''.join(
            inject(A1, 0, bad=0xf0, psn=k, fields=u32(1000 * k))
            for k in range(6)) + settle()
    s['raw-send'] = recv(12, [(K_MAIN, 0, 2048)]) + \
        send(RAW0, 0, [(K_MAIN, 0, 100)]) + \
        send(RAW0, 0, [(K_MAIN, 0, 8)]) + settle()
    s['qp-states'] = qp_state(0, A1) + settle(1) + \
        qp_state(4 | 0, A0, u8(3 | 7 << 3 | 7 << 5) + u8(14) + u8(1) +
                 u32(0x100) + u32(0x200)) + \
        send(A0, W_WRITE, [(K_MAIN, 0, 100)]) + settle(1) + \
        qp_state(1, B0) + qp_state(2, B0) + \
        qp_state(4, UC1, u8(3) + u8(0) + u8(0) + u32(5) + u32(6)) + \
        qp_state(4, UD0, u8(3) + u8(0) + u8(0) + u32(5) + u32(6)) + \
        qp_state(4, XRC_INI, u8(3) + u8(14) + u8(1) + u32(5) + u32(6)) + \
        settle(1)
    s['props'] = prop(0, u8(2) + u8(3) + u8(1) + u8(2) + u8(13) + u8(0) +
                      u8(0)) + \
        send(A0, W_WRITE, [(K_MAIN, 0, 3000)]) + settle(2) + \
        prop(2) + prop(3 | 0x80) + prop(4, u8(200)) + \
        prop(6, u8(20)) + prop(8) + settle(2) + prop(8 | 0x80) + \
        prop(10, u16(100)) + prop(12, u16(0)) + prop(14, u8(50)) + \
        send(A1, W_WRITE, [(K_MAIN, 0, 3000)]) + settle(3)
    s['doorbells'] = send(A0, W_WRITE, [(K_MAIN, 0, 100)], misc=0x40) + \
        u8(SHADOW) + u8(0) + u8(0) + \
        u8(DOORBELL) + u8(0) + u8(0) + u8(1) + \
        u8(DOORBELL) + u8(4) + u8(1) + u8(0x81) + \
        u8(DOORBELL) + u8(10) + u8(0) + u8(0) + u16(0xff8) + u32(0) + \
        u8(RAW) + u8(0) + bytes(64) + settle(1) + \
        u8(ADMIN) + u8(0) + u8(0) + u8(0) + u8(0) + \
        u8(ADMIN) + u8(2) + u8(0) + u8(3) + \
        u8(ADMIN) + u8(4) + u8(0) + u8(0) + poll(1 | 32 | 64)
    return s


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(out, 'seed-' + name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
