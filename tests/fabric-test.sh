#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The switched fabric (scripts/fabric.sh, docs/fabric.md): three nodes on
# a Linux bridge in the cluster's own network namespace, one boot.  The
# bridge learns each node's MAC and sends unicast only to its port (the
# third node's NIC counts no frame addressed to another); port settings
# that do not parse or are out of range are refused and change nothing; a
# port rate makes a queue form at the port toward its node, seen in
# './uzura fabric'; with a low ECN threshold on that port (RED, or the
# BPF marker where the kernel has no RED) frames arrive marked CE, in a
# capture and in the
# receiving NIC's np_ecn_marked_roce_packets; MPI point-to-point with its
# data checked runs through
# that port with go-back-N and with selective repeat; a port that goes
# down for 2 s under RDMA writes is a loss the transport recovers from;
# node 3 moves to a new QEMU under RDMA writes and its port, settings and
# all, follows it; down leaves no namespace, bridge or tap behind.  Needs CAP_NET_ADMIN (root).  TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
# The launcher's state directory (as ./uzura finds it) and fabric
# helpers, for names.
state=${UZURA_CLUSTER:-${UZURA_BUILD:-$top/build}/cluster}
die() { echo "$*" >&2; exit 1; }
. "$top/scripts/fabric.sh"

src=$top/tests/guest/mpi
log=$top/build/test-logs/fabric
rm -rf "$log"
mkdir -p "$log"

why=$(fabric_why_not)
if [ -n "$why" ]; then
	echo "1..0 # SKIP no fabric on this host: $why"
	exit 0
fi
ns=$(fabric_ns)

counter() {
	"$uz" stats "$1" | awk -v c="$2" '$1 == c { print $2 }'
}

# port_stat I FIELD: FIELD (Sent, dropped, overlimits) of port I's root
# qdisc as './uzura fabric' shows it.
port_stat() {
	"$uz" fabric | awk -v p="port$1 " -v f="$2" '
		index($0, p) == 1 { on = 1; next }
		on && !/^    / { exit }
		on { for (i = 1; i < NF; i++) if ($i == f || $i == "(" f) {
			v = $(i + 1); gsub(/[^0-9]/, "", v); print v; exit } }'
}

# write_bw FROM TO N: ib_write_bw of N x 64 KiB from node FROM to node TO.
write_bw() {
	serve "$2" 18515 bw "timeout 300 ib_write_bw -d $ibdev -x $gidx -n $3 -s 65536" &&
		"$uz" run "$1" -- "timeout 300 ib_write_bw -d $ibdev -x $gidx -n $3 -s 65536 10.77.0.$2" \
			> "$log/write-bw-$1-$2.log" 2>&1 &&
		"$uz" run "$2" -- 'for k in $(seq 60); do [ -s /tmp/bw.rc ] && exit $(cat /tmp/bw.rc); sleep 1; done; exit 1'
}

booted() {
	boot -n 3 > "$log/up.log" 2>&1
	local rc=$?
	cat "$log/up.log" | sed 's/^/# /'
	[ "$rc" -eq 0 ] && grep -q 'on the fabric link' "$log/up.log"
}

learned() {
	local i fdb
	fdb=$(ip netns exec "$ns" bridge fdb show br br0)
	for i in 1 2 3; do
		grep -q "^52:54:00:7a:00:0$i dev port$i master br0" <<< "$fdb" ||
			return 1
	done
	"$uz" fabric > "$log/fabric.txt" &&
		[ "$(grep -c '^port[1-3] (to node [1-3])' "$log/fabric.txt")" -eq 3 ]
}

# refused WHY SETTING...: setting port 2 so fails, saying WHY, and the
# fabric's settings are as they were.
refused() {
	local why=$1 before after err
	shift
	before=$("$uz" fabric | grep '^port')
	err=$("$uz" fabric port 2 "$@" 2>&1) && return 1
	after=$("$uz" fabric | grep '^port')
	echo "# $*: $err"
	grep -q -- "$why" <<< "$err" && grep -q 'nothing changed' <<< "$err" &&
		[ "$before" = "$after" ]
}

bad_settings() {
	refused 'not a rate' rate=fast &&
		refused 'not a rate' rate=10 &&
		refused 'out of range' rate=1kbit &&
		refused 'out of range' limit=1 &&
		refused 'not a size' limit=lots &&
		refused 'not KMIN,KMAX,PMAX' ecn=1k &&
		refused 'KMAX above' ecn=100k,10k,0.1 &&
		refused 'percentage' loss=200% &&
		refused 'not a time' delay=soon &&
		refused 'not a port setting' colour=red &&
		# One bad setting among good ones: none of them is taken.
		refused 'not a size' rate=10mbit limit=lots
}

# isolated: node 2's NIC sees none of the frames between nodes 1 and 3.
isolated() {
	local before after sent0 sent1
	before=$(counter 2 rx_not_ours)
	sent0=$(counter 1 tx_pkts_write)
	write_bw 1 3 100 || return 1
	after=$(counter 2 rx_not_ours)
	sent1=$(counter 1 tx_pkts_write)
	echo "# node 1 sent $((sent1 - sent0)) RDMA WRITE packets; node 2" \
	     "counted $((after - before)) frames addressed to another"
	[ $((sent1 - sent0)) -ge 1600 ] && [ "$after" -eq "$before" ]
}

# queued: a 50 Mbit/s port toward node 3 holds back node 1's writes.
queued() {
	"$uz" fabric port 3 rate=50mbit limit=512k > /dev/null || return 1
	write_bw 1 3 100 || return 1
	"$uz" fabric | sed -n '/^port3/,/^port\|^forwarding/p' | sed 's/^/# /'
	[ "$(port_stat 3 overlimits)" -gt 0 ]
}

# ecn_marked: ECN marking at 10..40 KiB of queue on the 50 Mbit/s port
# toward node 3 (RED, or the fabric's BPF marker on a kernel without
# sch_red): node 1's writes arrive there marked CE, node 3 answers with
# CNPs, and node 1's QP takes them (DCQCN, on by default).  tshark, with
# scripts/wireshark/roce-cnp.lua, decodes each CNP node 3 sent: BECN set,
# its reserved bytes zero, to node 1's QP.  Node 1's traced rate
# (uzura_rp_rate, turned on for the run with ./uzura trace) goes down
# on a CNP and back up on the limiter's timer or byte counter.
ecn_marked() {
	local before after ce cnp0 cnp1 rp0 rp1 cnps good tlog off rates
	"$uz" fabric port 3 ecn=10k,40k,1 > /dev/null || return 1
	cnp0=$(counter 3 np_cnp_sent)
	rp0=$(counter 1 rp_cnp_handled)
	before=$(counter 3 np_ecn_marked_roce_packets)
	"$uz" capture 3 "$log/ecn.pcap" > /dev/null || return 1
	tlog=$("$uz" trace 1 uzura_rp_rate=on | sed -n 's/^log: //p')
	[ -f "$tlog" ] || return 1
	off=$(stat -c %s "$tlog")
	write_bw 1 3 100
	local rc=$?
	"$uz" trace 1 uzura_rp_rate=off > /dev/null
	"$uz" capture 3 stop > /dev/null
	rates=$(tail -c +$((off + 1)) "$tlog" | rate_down_up)
	after=$(counter 3 np_ecn_marked_roce_packets)
	cnp1=$(counter 3 np_cnp_sent)
	rp1=$(counter 1 rp_cnp_handled)
	ce=$(nframes "$log/ecn.pcap" 'udp.dstport == 4791 && ip.dsfield.ecn == 3')
	cnps=$(nframes "$log/ecn.pcap" 'infiniband.bth.opcode == 0x81')
	good=$(nframes "$log/ecn.pcap" -X "lua_script:$top/scripts/wireshark/roce-cnp.lua" \
		'roce_cnp.becn && roce_cnp.destqp > 0 && ip.src == 10.77.0.3 && !roce_cnp.nonzero && !roce_cnp.short')
	"$uz" fabric | sed -n '/^port3/,/^port\|^forwarding/p' | sed 's/^/# /'
	echo "# node 3 counted $((after - before)) CE-marked RoCE packets;" \
	     "the capture holds ${ce:-no} CE frames; node 3 sent" \
	     "$((cnp1 - cnp0)) CNPs, node 1 handled $((rp1 - rp0));" \
	     "the capture holds ${cnps:-no} CNPs, ${good:-none} decoded whole;" \
	     "node 1's traced rate: $rates"
	"$uz" fabric port 3 ecn=off > /dev/null
	[ "$rc" -eq 0 ] && [ "$after" -gt "$before" ] && [ "${ce:-0}" -gt 0 ] &&
		[ "$cnp1" -gt "$cnp0" ] && [ "$rp1" -gt "$rp0" ] &&
		[ "${cnps:-0}" -eq $((cnp1 - cnp0)) ] && [ "${good:-0}" -eq "$cnps" ] &&
		[[ "$rates" == "down then up"* ]]
}

# rate_down_up: from uzura_rp_rate lines ("qpn Q WHY: rate OLD -> NEW
# kb/s, ..."), "down then up (C cuts, I increases, lowest L kb/s)" when a
# QP's rate was cut by a CNP and later raised by its timer or byte
# counter; else what was seen.
rate_down_up() {
	awk '/uzura_rp_rate / {
		for (i = 1; i <= NF; i++) if ($i == "qpn") break
		q = $(i + 1); why = $(i + 2); o = $(i + 4); n = $(i + 6)
		if (why == "cnp:" && n + 0 < o + 0) {
			cut[q] = 1; cuts++
			if (low == "" || n + 0 < low) low = n + 0
		}
		if ((why == "timer:" || why == "bytes:") && n + 0 > o + 0) {
			incs++
			if (cut[q]) up = 1
		}
	}
	END {
		printf "%s (%d cuts, %d increases, lowest %s kb/s)\n",
			up ? "down then up" : cuts ? "down only" : "no cut",
			cuts, incs, low == "" ? "-" : low
	}'
}

p2p() {
	local i
	for i in 1 2 3; do
		"$uz" fault "$i" recovery="$1" > /dev/null || return 1
	done
	mpi_job "mpi-p2p-$1" 3 "$src/mpi-p2p.c" 262144
	local rc=$?
	for i in 1 2 3; do
		echo "# node $i: $(counter "$i" retransmits) packets retransmitted"
	done
	return "$rc"
}

# flapped: port 3 goes down for 2 s in the middle of a 12-second
# ib_write_bw from node 1 to node 3 (a per-try timeout of 1 s, -u 18, so
# 7 retries span the gap): the frames are lost at the port, node 1
# retransmits, and both sides finish with no error once the port is back.
flapped() {
	local r0 r1 w0 k client rc
	r0=$(counter 1 retransmits)
	serve 3 18516 flap "timeout 120 ib_write_bw -d $ibdev -x $gidx -D 12 -u 18 -s 65536 -p 18516" ||
		return 1
	w0=$(counter 1 tx_pkts_write)
	"$uz" run 1 -- "timeout 120 ib_write_bw -d $ibdev -x $gidx -D 12 -u 18 -s 65536 -p 18516 10.77.0.3" \
		> "$log/flap-client.log" 2>&1 &
	client=$!
	# Down once the writes flow, not while perftest sets up over TCP.
	for k in $(seq 120); do
		[ "$(counter 1 tx_pkts_write)" -gt $((w0 + 100)) ] && break
		sleep 0.5
	done
	ip -n "$ns" link set port3 down && sleep 2 && ip -n "$ns" link set port3 up
	wait "$client"
	rc=$?
	"$uz" run 3 -- 'for k in $(seq 60); do [ -s /tmp/flap.rc ] && exit $(cat /tmp/flap.rc); sleep 1; done; exit 1' ||
		rc=1
	r1=$(counter 1 retransmits)
	echo "# node 1 retransmitted $((r1 - r0)) packets across the 2 s the port was down"
	grep -E '^ *65536 ' "$log/flap-client.log" | sed 's/^/# /'
	[ "$rc" -eq 0 ] && [ "$r1" -gt "$r0" ] &&
		! grep -qi 'error\|failed' "$log/flap-client.log"
}

# Node 3 moves to a new QEMU (./uzura migrate) under ib_write_bw from
# node 1: the new QEMU's tap joins the bridge as a spare port beside the
# old one, takes its name and its settings (the 100 Mbit/s rate) once the
# old QEMU is gone, and the writes finish.  A QP timeout of 268 ms (-u 16)
# as in the migration suite.
moved() {
	local rc ok=1
	serve 3 18515 mv "timeout 300 ib_write_bw -d $ibdev -x $gidx -D 20 -u 16" ||
		return 1
	start 1 mv-client "timeout 300 ib_write_bw -d $ibdev -x $gidx -D 20 -u 16 10.77.0.3" ||
		return 1
	sleep 5
	"$uz" migrate 3 > "$log/migrate.log" 2>&1
	rc=$?
	sed 's/^/# /' "$log/migrate.log"
	[ $rc -eq 0 ] || ok=0
	finished 1 mv-client || ok=0
	served 3 mv > "$log/mv-server.log" 2>&1 || ok=0
	grep -E '^ *65536 ' "$log/mv-client.log" | sed 's/^/# /'
	grep -Eq '^ *65536 ' "$log/mv-client.log" || ok=0
	ip -n "$ns" link show port3 | grep -q '[<,]UP[,>].* master br0 ' || ok=0
	! ip -n "$ns" link show spare3 > /dev/null 2>&1 || ok=0
	tc -n "$ns" qdisc show dev port3 | grep -q 'rate 100Mbit' || ok=0
	[ "$(cat "$state/node3/migrations")" = 1 ] || ok=0
	[ $ok = 1 ]
}

clean_after_down() {
	"$uz" down || return 1
	! ip netns list | grep -q "^$ns\\b" &&
		! ip -o link show | grep -q "uz$(fabric_id)"
}

"$uz" down
t "three nodes boot on the switched fabric" booted
t "the fabric has a port per node and has learned each node's MAC" learned
t "port settings that do not parse or are out of range are refused; nothing changes" \
	bad_settings
t "unicast isolation: node 2 sees none of node 1's writes to node 3" isolated
t "a 50 Mbit/s port makes a queue form toward node 3 (tc's overlimits)" queued
missing=$(fabric_qdisc_missing ecn=1)
if [ -n "$missing" ]; then
	n=$((n + 1))
	echo "ok $n - ECN marking marks node 1's writes CE on the way to node 3 # SKIP this kernel has no sch_$missing and there is no clang for the BPF marker"
else
	if fabric_has_red; then how=RED; else how="the BPF marker (no sch_red)"; fi
	t "ECN marking, $how, marks node 1's writes CE on the way to node 3 (capture, NIC counter); CNPs flow back" \
		ecn_marked
fi
"$uz" fabric port 3 rate=100mbit limit=1m > /dev/null
t "MPI point-to-point to 256 KiB, checked, through a 100 Mbit/s port: go-back-N" \
	p2p gbn
t "the same with selective repeat" p2p sr
t "port 3 down for 2 s under ib_write_bw: node 1 retransmits, both finish" \
	flapped
t "node 3 moves under ib_write_bw: its new port takes port3's name and 100 Mbit/s" \
	moved
t "port settings go back to the defaults with =off" bash -c "
	'$uz' fabric port 3 rate=off limit=off > /dev/null &&
	'$uz' fabric | grep -qx 'port3 (to node 3): rate=off limit=off ecn=off delay=off loss=off'"
t "down removes the namespace, the bridge and the taps" clean_after_down
echo "1..$n"
[ "$fails" -eq 0 ]
