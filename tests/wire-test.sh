#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The wire, as tshark sees it: boots two nodes, captures node 1's side of
# the uzura link with './uzura capture' (a QEMU filter-dump on its netdev)
# while the nodes speak every operation of the NIC to each other (RC SEND,
# WRITE, WRITE with immediate, READ, both atomics, UD to a user QP and the
# RDMA CM's MADs to QP1, CRW with its STCRW), and checks the pcap on the
# host: every RoCEv2 frame decodes as InfiniBand with the headers spec 9.4
# gives its opcode, none is malformed or draws an expert error, every
# ICRC is right (spec 9.7), each opcode family is there, STCRW shows as
# a vendor opcode with its CRWETH, and each frame node 1's NIC sent and
# received is in the pcap exactly once (its counters say how many).  Then
# a timed capture on node 2.  Small iteration counts keep it short under
# TCG.  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
pcap=$log/wire.pcap

# perf NAME PORT ARGS...: a perftest tool, server on node 2.
perf() {
	local tool=$1 port=$2
	shift 2
	local args="-d $ibdev -x $gidx -p $port $*"
	pair "$tool-$port" 2 "$port" "$tool $args" "$tool $args 10.77.0.2"
}

# The sum of node 1's counters whose names match the regex $1.
counters() {
	"$uz" stats 1 | awk -v re="$1" '$1 ~ re { n += $2 } END { print n + 0 }'
}

# The BTH opcodes of the capture, one per line, sorted and unique.
opcodes() { tsh "$pcap" -Y infiniband -T fields -e infiniband.bth.opcode | sort -un; }

# has_ops NUMBER...: the capture holds frames of each of these opcodes.
has_ops() {
	local seen op missing=
	seen=$(opcodes)
	for op in "$@"; do
		grep -qx "$op" <<< "$seen" || missing="$missing $op"
	done
	[ -z "$missing" ] || echo "# no frame with opcode:$missing (seen: $(tr '\n' ' ' <<< "$seen"))"
	[ -z "$missing" ]
}

# Every IB frame's extension headers are those spec 9.4 gives its opcode:
# for each frame, the headers tshark decoded (R RETH, A AETH, T AtomicETH,
# K AtomicAckETH, I ImmDt, V IETH, D DETH, X vendor data), against the
# table below.
headers_as_spec() {
	tsh "$pcap" -Y infiniband -T fields -E occurrence=f \
		-e frame.number -e infiniband.bth.opcode -e infiniband.reth \
		-e infiniband.aeth -e infiniband.atomiceth -e infiniband.atomicacketh \
		-e infiniband.immdt -e infiniband.ieth -e infiniband.deth \
		-e infiniband.vendor > "$log/headers" || return 1
	awk -F'\t' '
	BEGIN {
		split("0:,1:,2:,3:I,4:,5:I,6:R,7:,8:,9:I,10:R,11:RI,12:R,13:A,14:,15:A,16:A,17:A,18:AK,19:T,20:T,22:V,23:V,100:D,101:DI,192:X", t, ",")
		for (i in t) { split(t[i], kv, ":"); want[kv[1]] = kv[2] }
	}
	{
		got = ""
		split("R A T K I V D X", letter, " ")
		for (i = 3; i <= 10; i++) if ($i != "") got = got letter[i - 2]
		if (!($2 in want)) { printf "# frame %s: opcode %s is not in spec 9.4\n", $1, $2; bad++ }
		else if (got != want[$2]) { printf "# frame %s: opcode %s has headers \"%s\", spec 9.4 says \"%s\"\n", $1, $2, got, want[$2]; bad++ }
		n++
	}
	END { printf "# %d frames checked\n", n; exit !(n > 0 && bad == 0) }' "$log/headers"
}

# capture 1 with a FILE relative to the current directory.
capture_relative() {
	(cd "$log" && "$uz" capture 1 wire.pcap > /dev/null) && [ -s "$pcap" ]
}

refused() { ! "$@" 2> /dev/null; }

have_tshark() { command -v tshark > /dev/null; }

icrc_right() { pcap_icrc "$1" > /dev/null; }

all_decoded() { [ "${roce:-0}" -gt 0 ] && [ "$ib" = "$roce" ]; }

# rping: the RDMA CM connects over QP1, then SEND, READ and WRITE Only.
rping_pair() {
	local got
	serve_cm 2 rping "timeout 120 rping -s -a 10.77.0.2 -C 3 -S 64" || return 1
	got=$("$uz" run 1 -- "timeout 120 rping -c -a 10.77.0.2 -C 3 -S 64 -v" 2> /dev/null |
		grep -c 'ping data: rdma-ping-')
	served 2 rping > /dev/null && [ "$got" = 3 ]
}

# What node 1 sent and received (the capture) against its counters.
frames_once() {
	[ "$sent" -gt 0 ] && [ "$sent" = $((tx1 - tx0)) ] && [ "$got" = $((rx1 - rx0)) ]
}

ud_both() {
	has_ops 100 &&
		[ "$(nframes "$pcap" 'infiniband.bth.opcode == 100 && infiniband.bth.destqp > 1')" -gt 0 ] &&
		[ "$(nframes "$pcap" 'infiniband.bth.opcode == 100 && infiniband.bth.destqp == 1 && infiniband.mad')" -gt 0 ]
}

# STCRW's vendor data: the CRWETH of crw-example (tag 0x5eed0000c0ffee,
# a va, an rkey, length 64), then the ICRC.
stcrw_check() {
	[ -n "$stcrw" ] && ! grep -qv '^005eed0000c0ffee.\{24\}00000040.\{8\}$' <<< "$stcrw"
}

# A capture of SECONDS ends by itself: node 2 sees a ping once.
timed_capture() {
	local f=$log/timed.pcap pid
	"$uz" capture 2 "$f" 6 > "$log/timed.out" 2>&1 &
	pid=$!
	for _ in $(seq 25); do [ -s "$f" ] && break; sleep 0.2; done
	"$uz" run 1 -- 'ping -c 2 -i 0.5 -q 10.77.0.2' > /dev/null || return 1
	wait "$pid" || return 1
	[ "$(nframes "$f" 'icmp.type == 8')" = 2 ] &&
		[ "$(nframes "$f" 'icmp.type == 0')" = 2 ] &&
		refused "$uz" capture 2 stop
}

"$uz" down
t "tshark is installed (scripts/setup-host.sh)" have_tshark
t "two nodes boot" boot -n 2

# The counters just before the capture starts and just after it ends:
# the nodes are idle then, so the RoCE frames between are the capture's.
tx0=$(counters '^tx_pkts_')
rx0=$(counters '^rx_pkts_|^rx_malformed$|^icrc_errors$|^rx_no_qp$|^rx_qkey_errors$|^rx_ud_no_wqe$|^rx_ud_too_long$|^rx_stale$')
t "capture 1 FILE: starts, the relative FILE made absolute for QEMU" capture_relative
t "a second capture on node 1 is refused while one runs" \
	refused "$uz" capture 1 "$log/other.pcap"

t "RC SEND Only: ibv_rc_pingpong, 5 x 64 B" pair pp 2 18610 \
	"ibv_rc_pingpong -d $ibdev -g $gidx -p 18610 -n 5 -s 64" \
	"ibv_rc_pingpong -d $ibdev -g $gidx -p 18610 -n 5 -s 64 10.77.0.2"
t "RC SEND First/Middle/Last: ib_send_bw, 5 x 10000 B" perf ib_send_bw 18611 -n 5 -s 10000
t "RDMA WRITE: ib_write_bw, 5 x 10000 B" perf ib_write_bw 18612 -n 5 -s 10000
t "RDMA WRITE with immediate: ib_write_bw --write_with_imm, 5 x 10000 B" \
	perf ib_write_bw 18613 -n 5 -s 10000 --write_with_imm
t "RDMA READ: ib_read_bw, 5 x 10000 B" perf ib_read_bw 18614 -n 5 -s 10000
t "compare and swap: ib_atomic_bw -A CMP_AND_SWAP, 5 iterations" \
	perf ib_atomic_bw 18615 -n 5 -A CMP_AND_SWAP
t "fetch and add: ib_atomic_bw -A FETCH_AND_ADD, 5 iterations" \
	perf ib_atomic_bw 18616 -n 5 -A FETCH_AND_ADD
t "UD SEND: ibv_ud_pingpong, 5 x 1024 B" pair ud 2 18617 \
	"ibv_ud_pingpong -d $ibdev -g $gidx -p 18617 -n 5 -s 1024" \
	"ibv_ud_pingpong -d $ibdev -g $gidx -p 18617 -n 5 -s 1024 10.77.0.2"
t "RDMA CM (MADs to QP1) and SEND/READ/WRITE Only: rping, 3 x 64 B" rping_pair
t "CRW and STCRW: crw-example" pair crw 2 18601 "crw-example -g $gidx" \
	"crw-example -g $gidx 10.77.0.2"

t "capture 1 stop: ends the capture" "$uz" capture 1 stop
tx1=$(counters '^tx_pkts_')
rx1=$(counters '^rx_pkts_|^rx_malformed$|^icrc_errors$|^rx_no_qp$|^rx_qkey_errors$|^rx_ud_no_wqe$|^rx_ud_too_long$|^rx_stale$')
t "node 1 has no capture left: a second stop is refused" refused "$uz" capture 1 stop
# The capture stays for a look with tshark or Wireshark.
keep=${UZURA_BUILD:-$top/build}/test-logs/wire-test.pcap
mkdir -p "${keep%/*}" && cp "$pcap" "$keep" &&
	echo "# the capture: $keep ($(nframes "$pcap" frame) frames)"

roce=$(nframes "$pcap" 'udp.dstport == 4791')
ib=$(nframes "$pcap" 'udp.dstport == 4791 && infiniband.bth')
t "the pcap holds RoCEv2 frames and tshark decodes each as InfiniBand ($ib of $roce)" \
	all_decoded
t "no malformed frame, no expert error (IPv4 checksums checked)" \
	[ "$(nframes "$pcap" '_ws.malformed || _ws.expert.severity >= error')" = 0 ]
icrc=$(pcap_icrc "$pcap")
t "every RoCEv2 frame's ICRC is right (spec 9.7): $icrc" icrc_right "$pcap"
sent=$(nframes "$pcap" 'ip.src == 10.77.0.1 && udp.dstport == 4791')
got=$(nframes "$pcap" 'ip.dst == 10.77.0.1 && udp.dstport == 4791')
t "each RoCE frame node 1 sent and received is in the pcap once: sent $sent (tx_pkts_* +$((tx1 - tx0))), received $got (rx_pkts_* and drops +$((rx1 - rx0)))" \
	frames_once
t "every BTH: TVer 0, P_Key 0xffff, M and the reserved bits 0" \
	[ "$(nframes "$pcap" 'infiniband.bth && (infiniband.bth.tver != 0 || infiniband.bth.p_key != 0xffff || infiniband.bth.m != 0 || infiniband.bth.reserved7 != 0)')" = 0 ]
t "every frame's extension headers are those spec 9.4 gives its opcode" headers_as_spec
t "RC SEND First, Middle, Last and Only (0x00-0x02, 0x04)" has_ops 0 1 2 4
t "RC RDMA WRITE First, Middle, Last and Only (0x06-0x08, 0x0a)" has_ops 6 7 8 10
t "with immediate: RDMA WRITE Last and Only with Immediate (0x09, 0x0b)" has_ops 9 11
t "RC RDMA READ Request, Response First, Middle, Last and Only (0x0c-0x10)" \
	has_ops 12 13 14 15 16
t "RC Acknowledge and ATOMIC Acknowledge (0x11, 0x12)" has_ops 17 18
t "RC CmpSwap and FetchAdd (0x13, 0x14)" has_ops 19 20
t "UD SEND Only (0x64) to a user QP and to QP1 (CM MADs, decoded as such)" ud_both
# STCRW: 0xc0, in the manufacturer-specific range, which tshark shows as
# an unknown opcode followed by vendor data: the 24-byte CRWETH (tag, va,
# rkey, length; spec 9.5) and the 4-byte ICRC.
stcrw=$(tsh "$pcap" -Y 'infiniband.bth.opcode == 0xc0' -T fields -E occurrence=l \
	-e infiniband.vendor)
echo "# STCRW vendor data: $stcrw"
t "STCRW (0xc0) decodes as a vendor opcode: CRWETH with crw-example's tag and 64 B" \
	stcrw_check
t "the CRW's write is an RDMA WRITE Only with the tag's low 32 bits as immediate" \
	[ "$(nframes "$pcap" 'infiniband.bth.opcode == 11 && infiniband.immdt == 00:c0:ff:ee')" -gt 0 ]

t "capture 2 FILE 6: a timed capture on node 2 holds a ping's 2 requests and 2 replies, once each, and ends" \
	timed_capture

"$uz" down
t "down leaves no cluster state" [ ! -e "${UZURA_BUILD:-$top/build}/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
