#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Interoperability with Linux Soft-RoCE (rxe), the reference RoCEv2
# implementation: boots node 1 with its uzura NIC and node 2 as a
# Soft-RoCE node ('./uzura up --rxe 2': a virtio-net NIC on the same link
# with rxe0 on it), and runs unmodified verbs, perftest and RDMA CM tools
# between them in both directions: RC, UC and UD pingpong, SEND, WRITE, WRITE
# with immediate, READ, both atomics, UD SEND, a latency test and rping.
# Then losses aimed by node 1's fault rules at each recovery path between
# the two (READ responses, WRITE packets and atomic ACKs, lost on the way
# out of or into the uzura NIC), each of which must be repaired, and the
# same with node 1 in selective-repeat mode.  Node 1's side of the link is
# captured throughout: tshark must decode every frame of both senders, none
# malformed, and every ICRC must be right.  CRW is uzura's own and is not
# tried here.  docs/interop-rxe.md says what was found.  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
pcap=$log/interop.pcap

# perf SERVER-NODE TOOL PORT ARGS...: a perftest tool between the nodes.
# READs and atomics take -o 16: perftest 25.01 sets the requester's
# max_rd_atomic to the peer's own limit (rxe: 128), which a NIC with a
# lower one (uzura and ConnectX: 16) refuses.
perf() {
	local s=$1 tool=$2 port=$3
	shift 3
	local args="-d $ibdev -x $gidx -p $port $*"
	pair "$tool-$port" "$s" "$port" "$tool $args" "$tool $args 10.77.0.$s"
}

pingpong() {
	local s=$1 kind=$2 port=$3
	shift 3
	local args="-d $ibdev -g $gidx -p $port $*"
	pair "$kind-$port" "$s" "$port" "ibv_${kind}_pingpong $args" \
		"ibv_${kind}_pingpong $args 10.77.0.$s"
}

rping_pair() {
	local s=$1 c=$((3 - $1)) got
	serve_cm "$s" "rping$s" "timeout 120 rping -s -a 10.77.0.$s -C 3 -S 64" || return 1
	got=$("$uz" run "$c" -- "timeout 120 rping -c -a 10.77.0.$s -C 3 -S 64 -v" 2> /dev/null |
		grep -c 'ping data: rdma-ping-')
	served "$s" "rping$s" > /dev/null && [ "$got" = 3 ]
}

# rping_lossy RULE SERVER-NODE: rping of 16 KiB, its data checked (-V),
# the server READing the client's buffer, with node 1's fault rule RULE.
rping_lossy() {
	local rule=$1 s=$2 c=$((3 - $2)) got acted ok=1
	"$uz" fault 1 rules clear > /dev/null &&
		"$uz" fault 1 rule "$rule" > /dev/null || return 1
	serve_cm "$s" "rpl$s" "timeout 120 rping -s -a 10.77.0.$s -C 3 -S 16384 -V" || ok=0
	got=$("$uz" run "$c" -- "timeout 120 rping -c -a 10.77.0.$s -C 3 -S 16384 -V -v" 2>&1 |
		grep -c -e 'ping data: rdma-ping-' -e mismatch)
	served "$s" "rpl$s" > /dev/null || ok=0
	acted=$("$uz" fault 1 | sed -n 's/.*# matched [0-9]*, acted \([0-9]*\)$/\1/p')
	"$uz" fault 1 rules clear > /dev/null
	echo "# rule '$rule': acted ${acted:-?}; $got lines of checked ping data"
	[ $ok = 1 ] && [ "$acted" = 1 ] && [ "$got" = 3 ]
}

# Node 1's counter $1.
counter() { "$uz" stats 1 | awk -v c="$1" '$1 == c { print $2 }'; }

# lossy RULE COUNTER SERVER-NODE TOOL PORT ARGS...: with node 1's fault
# rule RULE, a perftest tool must complete, the rule must have acted once
# and node 1's COUNTER must have grown.
lossy() {
	local rule=$1 cnt=$2 before after acted ok=1
	shift 2
	"$uz" fault 1 rules clear > /dev/null &&
		"$uz" fault 1 rule "$rule" > /dev/null || return 1
	before=$(counter "$cnt")
	perf "$@" || ok=0
	after=$(counter "$cnt")
	acted=$("$uz" fault 1 | sed -n 's/.*# matched [0-9]*, acted \([0-9]*\)$/\1/p')
	"$uz" fault 1 rules clear > /dev/null
	echo "# rule '$rule': acted ${acted:-?}; $cnt $before -> $after"
	[ $ok = 1 ] && [ "$acted" = 1 ] && [ "${after:-0}" -gt "${before:-0}" ]
}

rxe_node() {
	"$uz" run 2 -- "d=\$(cat /run/uzura-rxe) &&
		[ \"\$(cat /sys/class/net/\$d/address)\" = 52:54:00:7a:00:02 ] &&
		[ \"\$(readlink -f /sys/class/net/\$d/device/driver)\" = /sys/bus/virtio/drivers/virtio_net ] &&
		ip -4 -o addr show dev \$d | grep -q ' 10.77.0.2/24 ' &&
		rdma link show rxe0/1 | grep -q \"state ACTIVE .*netdev \$d\" &&
		[ \"$ibdev\" = rxe0 ] && [ -n \"$gidx\" ] &&
		! ls -l /sys/class/infiniband/*/device/driver 2> /dev/null | grep -q uzura"
}

same_mtu() {
	local i
	for i in 1 2; do
		"$uz" run "$i" -- "ibv_devinfo -d $ibdev | grep -q 'active_mtu:.*4096'" ||
			return 1
	done
}

refused() { ! "$@" 2> /dev/null; }

# The rest of a READ: node 2 (rxe) asked again for the last 4 KiB of a
# 16 KiB READ only (a READ request whose PSN is inside the earlier READ's),
# and node 1 answered it with a READ Response Only at that PSN.
read_rest() {
	local psns p
	psns=$(tsh "$pcap" -Y 'ip.src == 10.77.0.2 && infiniband.bth.opcode == 12 && infiniband.reth.dmalen == 4096' \
		-T fields -e infiniband.bth.psn) || return 1
	echo "# READ rests asked by rxe at PSN: $(tr '\n' ' ' <<< "$psns")"
	[ -n "$psns" ] || return 1
	for p in $psns; do
		[ "$(nframes "$pcap" "ip.src == 10.77.0.1 && infiniband.bth.opcode == 16 && infiniband.bth.psn == $p")" -gt 0 ] ||
			return 1
	done
}

both_senders() {
	[ "$(nframes "$pcap" 'ip.src == 10.77.0.1 && infiniband.bth')" -gt 0 ] &&
		[ "$(nframes "$pcap" 'ip.src == 10.77.0.2 && infiniband.bth')" -gt 0 ]
}

icrc_right() { pcap_icrc "$1" > /dev/null; }

all_decoded() { [ "${roce:-0}" -gt 0 ] && [ "$ib" = "$roce" ]; }

# Frames node 1 dropped as bad: ICRC errors and malformed.
bad_frames() {
	"$uz" stats 1 | awk '$1 == "icrc_errors" || $1 == "rx_malformed" { n += $2 } END { print n + 0 }'
}

# Selective repeat on node 1 against rxe: its requests carry the bit that
# asks for SACKs (a reserved BTH bit, spec 9.5.1), which rxe must ignore.
sr_lossy() {
	local ok=1
	"$uz" fault 1 recovery=sr > /dev/null || return 1
	lossy 'op=write-middle nth=2 drop' nak_seq_rcvd 2 ib_write_bw 18706 -n 20 -s 16384 || ok=0
	"$uz" fault 1 recovery=gbn > /dev/null || ok=0
	[ "$(nframes "$pcap" 'ip.src == 10.77.0.1 && infiniband.bth.reserved7 != 0')" -gt 0 ] || ok=0
	[ $ok = 1 ]
}

"$uz" down
t "two nodes boot, node 2 a Soft-RoCE node (up --rxe 2)" boot -n 2 --rxe 2
t "node 2: no uzura device; rxe0 ACTIVE on the link's virtio-net NIC (52:54:00:7a:00:02, 10.77.0.2/24) with a RoCE v2 GID" \
	rxe_node
t "status marks node 2 as Soft-RoCE; stats and fault refuse it" bash -c "
	'$uz' status | grep -q '^node2 running .*(Soft-RoCE)\$' &&
	! '$uz' status | grep -q '^node1 .*Soft-RoCE' &&
	! '$uz' stats 2 2> /dev/null && ! '$uz' fault 2 2> /dev/null"
t "uzura0 and rxe0 both at active MTU 4096" same_mtu

bad0=$(bad_frames)
t "capture of node 1's side of the link starts" "$uz" capture 1 "$pcap"

port=18620
for s in 2 1; do
	if [ $s = 2 ]; then dir="uzura -> rxe"; else dir="rxe -> uzura"; fi
	port=$((port + 20))
	t "$dir: ibv_rc_pingpong, 5 x 4096 B" pingpong $s rc $port -n 5
	t "$dir: ibv_ud_pingpong, 5 x 1024 B" pingpong $s ud $((port + 1)) -n 5 -s 1024
	t "$dir: ibv_uc_pingpong, 5 x 4096 B" pingpong $s uc $((port + 10)) -n 5
	t "$dir: ib_write_bw -c UC, 5 x 10000 B" perf $s ib_write_bw $((port + 11)) -c UC -n 5 -s 10000
	t "$dir: ib_send_bw, 5 x 10000 B" perf $s ib_send_bw $((port + 2)) -n 5 -s 10000
	t "$dir: ib_write_bw, 5 x 10000 B" perf $s ib_write_bw $((port + 3)) -n 5 -s 10000
	t "$dir: ib_write_bw --write_with_imm, 5 x 10000 B" \
		perf $s ib_write_bw $((port + 4)) -n 5 -s 10000 --write_with_imm
	t "$dir: ib_read_bw -o 16, 5 x 10000 B" perf $s ib_read_bw $((port + 5)) -n 5 -s 10000 -o 16
	t "$dir: ib_atomic_bw -o 16, compare and swap, 10 iterations" \
		perf $s ib_atomic_bw $((port + 6)) -n 10 -o 16 -A CMP_AND_SWAP
	t "$dir: ib_atomic_bw -o 16, fetch and add, 10 iterations" \
		perf $s ib_atomic_bw $((port + 7)) -n 10 -o 16 -A FETCH_AND_ADD
	t "$dir: ib_send_bw -c UD, 5 x 1024 B" perf $s ib_send_bw $((port + 8)) -c UD -n 5 -s 1024
	t "$dir: ib_write_lat, 20 iterations" perf $s ib_write_lat $((port + 9)) -n 20
	t "$dir: rping (RDMA CM over QP1), 3 x 64 B" rping_pair $s
done

# Losses, each aimed at one frame by a rule on node 1 (docs/device-spec.md
# 7.5.2); "out" is lost as the uzura NIC sends it, "in" as it arrives.
t "rxe reads from uzura, READ Response Last lost out: rxe asks for the rest, uzura answers" \
	lossy 'op=read-response-last nth=1 drop' duplicates 1 ib_read_bw 18700 -n 20 -o 16 -s 16384
t "... the rest: a READ request inside the first READ's PSNs, answered by a READ Response Only" \
	read_rest
t "rping -V, rxe reads 16 KiB from uzura, READ Response Last lost out: the data is right" \
	rping_lossy 'op=read-response-last nth=1 drop' 2
t "rping -V, uzura reads 16 KiB from rxe, READ Response Middle lost in: the data is right" \
	rping_lossy 'dir=rx op=read-response-middle nth=1 drop' 1
t "uzura reads from rxe, READ Response Middle lost in: uzura sends the READ again, rxe answers" \
	lossy 'dir=rx op=read-response-middle nth=1 drop' retry_timeouts 2 ib_read_bw 18701 -n 20 -o 16 -s 16384
t "uzura writes to rxe, WRITE Middle lost out: rxe NAKs the sequence, uzura goes back" \
	lossy 'op=write-middle nth=2 drop' nak_seq_rcvd 2 ib_write_bw 18702 -n 20 -s 16384
t "rxe writes to uzura, WRITE Middle lost in: uzura NAKs the sequence, rxe goes back" \
	lossy 'dir=rx op=write-middle nth=2 drop' nak_seq_sent 1 ib_write_bw 18703 -n 20 -s 16384
t "rxe's atomics to uzura, atomic ACK lost out: rxe sends it again, uzura answers from its saved result" \
	lossy 'op=atomic-ack nth=2 drop' duplicates 1 ib_atomic_bw 18704 -n 20 -o 16
t "uzura's atomics to rxe, atomic ACK lost in: uzura sends it again, rxe answers" \
	lossy 'dir=rx op=atomic-ack nth=2 drop' retry_timeouts 2 ib_atomic_bw 18705 -n 20 -o 16
t "uzura in selective repeat (recovery=sr) writes to rxe, WRITE Middle lost out: rxe ignores the SACK bit and NAKs, uzura goes back" \
	sr_lossy

t "capture of node 1 stops" "$uz" capture 1 stop
keep=${UZURA_BUILD:-$top/build}/test-logs/rxe-interop-test.pcap
mkdir -p "${keep%/*}" && cp "$pcap" "$keep" &&
	echo "# the capture: $keep ($(nframes "$pcap" frame) frames)"

roce=$(nframes "$pcap" 'udp.dstport == 4791')
ib=$(nframes "$pcap" 'udp.dstport == 4791 && infiniband.bth')
t "tshark decodes every RoCEv2 frame as InfiniBand ($ib of $roce)" all_decoded
t "frames of both senders: uzura's and rxe's" both_senders
t "no malformed frame, no expert error (IPv4 checksums checked)" \
	[ "$(nframes "$pcap" '_ws.malformed || _ws.expert.severity >= error')" = 0 ]
icrc=$(pcap_icrc "$pcap")
t "every ICRC is right, uzura's and rxe's (spec 9.7): $icrc" icrc_right "$pcap"
t "node 1 dropped no frame for a bad ICRC or as malformed" [ "$(bad_frames)" = "$bad0" ]

"$uz" down
t "down leaves no cluster state" [ ! -e "${UZURA_BUILD:-$top/build}/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
