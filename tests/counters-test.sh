#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Counters test: the NIC's counters (spec section 10) read in the guest.
# Two nodes come up; on each, the driver shows every counter of the spec's
# index list (10.2) as a port hw counter in sysfs and in `rdma statistic
# show`, with the device's names; traffic moves them by at least what was
# sent; an idle NIC shows in the guest what qom-get shows on the host;
# CE marks a fault rule makes on node 1's writes make CNPs that node 1's
# QPs take; ./uzura cc shows and sets congestion control's knobs.
# Honours UZURA_BUILD (a private cluster directory).  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT


hw=/sys/class/infiniband/uzura0/ports/1/hw_counters

# The spec's index list, in index order: "| i | `UZ_CNT_X` | `name` |".
sed -n 's/^| [0-9][0-9]* | `UZ_CNT_[A-Z_]*` | `\([a-z_]*\)` |$/\1/p' \
	"$top/docs/device-spec.md" > "$tmp/spec"

# counters I FILE: node I's hw counters as "name value" lines, by name.
counters() {
	"$uz" run "$1" -- "cd $hw && for f in *; do
		[ \$f = lifespan ] || echo \$f \$(cat \$f); done" | sort > "$2"
}

# value NAME FILE
value() { awk -v c="$1" '$1 == c { print $2 }' "$2"; }

# moved NAME BEFORE AFTER MIN: counter NAME moved by at least MIN.
moved() {
	local d
	d=$(($(value "$1" "$3") - $(value "$1" "$2")))
	echo "# $1 moved by $d (at least $4)"
	[ "$d" -ge "$4" ]
}

# same_delta NAME1 BEFORE1 AFTER1 NAME2 BEFORE2 AFTER2
same_delta() {
	[ $(($(value "$1" "$3") - $(value "$1" "$2"))) -eq \
	  $(($(value "$4" "$6") - $(value "$4" "$5"))) ]
}

# agree I: node I's idle NIC shows the same RoCE counters in the guest
# (hw_counters) as on the host (qom-get).
agree() {
	local c g h
	"$uz" stats "$1" > "$tmp/host$1" && counters "$1" "$tmp/guest$1" || return 1
	for c in tx_pkts_send rx_pkts_send tx_bytes_send rx_bytes_send \
		 tx_pkts_ack rx_pkts_ack cqes xlat_hits; do
		h=$(value $c "$tmp/host$1")
		g=$(value $c "$tmp/guest$1")
		echo "# node $1: $c guest $g host $h"
		[ -n "$g" ] && [ "$g" = "$h" ] || return 1
	done
}

"$uz" down
t "the spec lists the counters by index (82 or more)" \
	[ "$(wc -l < "$tmp/spec")" -ge 82 ]
t "two nodes boot" boot -n 2

for i in 1 2; do
	t "node $i: hw_counters holds exactly the spec's counters" \
		bash -c "'$uz' run $i -- 'ls $hw' | grep -vx lifespan | sort > '$tmp/ls$i' &&
			sort '$tmp/spec' | cmp -s - '$tmp/ls$i'"
	t "node $i: they are the device's counters (uzura stats, qom-get)" \
		bash -c "'$uz' stats $i | awk '{ print \$1 }' | sort | cmp -s - '$tmp/ls$i'"
	t "node $i: rdma statistic show lists them in index order" \
		bash -c "'$uz' run $i -- 'rdma statistic show link uzura0/1' |
			tr ' ' '\n' | grep -xf '$tmp/spec' | cmp -s - '$tmp/spec'"
done

counters 1 "$tmp/a0"
counters 2 "$tmp/b0"
t "ping node 2 from node 1 over uzura (10 packets)" \
	"$uz" run 1 -- 'ping -c 10 -i 0.2 -W 5 10.77.0.2 > /dev/null'
t "ibv_rc_pingpong node 1 -> node 2 (100 iterations of 4096 bytes)" bash -c "
	'$uz' run 2 -- '(timeout 120 ibv_rc_pingpong -d uzura0 -g $gidx -n 100 > /tmp/pp-server.log 2>&1 &)
		for k in \$(seq 40); do ss -ltn | grep -q :18515 && exit 0; sleep 0.5; done; exit 1' &&
	'$uz' run 1 -- 'timeout 120 ibv_rc_pingpong -d uzura0 -g $gidx -n 100 10.77.0.2' > /dev/null &&
	'$uz' run 2 -- 'sleep 1; grep -q \"100 iters\" /tmp/pp-server.log'"
counters 1 "$tmp/a1"
counters 2 "$tmp/b1"
t "node 1: tx_frames and rx_frames moved by the pings" \
	eval 'moved tx_frames "$tmp/a0" "$tmp/a1" 10 &&
		moved rx_frames "$tmp/a0" "$tmp/a1" 10'
# Each side sent 100 messages: at least a packet each (4 at path MTU 1024).
t "node 1: tx_pkts_send and rx_pkts_send moved by the messages" \
	eval 'moved tx_pkts_send "$tmp/a0" "$tmp/a1" 100 &&
		moved rx_pkts_send "$tmp/a0" "$tmp/a1" 100'
t "node 2: rx_pkts_send and tx_pkts_send moved by the messages" \
	eval 'moved rx_pkts_send "$tmp/b0" "$tmp/b1" 100 &&
		moved tx_pkts_send "$tmp/b0" "$tmp/b1" 100'
t "node 1: the SEND bytes sent are at least the payload" \
	moved tx_bytes_send "$tmp/a0" "$tmp/a1" 409600
t "what node 1 sent, node 2 received: SEND packets and bytes, ACKs" \
	eval 'same_delta tx_pkts_send "$tmp/a0" "$tmp/a1" rx_pkts_send "$tmp/b0" "$tmp/b1" &&
		same_delta tx_bytes_send "$tmp/a0" "$tmp/a1" rx_bytes_send "$tmp/b0" "$tmp/b1" &&
		same_delta tx_pkts_ack "$tmp/a0" "$tmp/a1" rx_pkts_ack "$tmp/b0" "$tmp/b1" &&
		moved tx_pkts_ack "$tmp/a0" "$tmp/a1" 1'

# Idle now: the guest reads what qom-get reports on the host.
for i in 1 2; do
	t "node $i: guest and host agree on the idle NIC's RoCE counters" agree $i
done
t "node 1: rdma statistic show reports what sysfs does" bash -c "
	v=\$('$uz' run 1 -- 'rdma statistic show link uzura0/1' | tr ' ' '\n' |
		grep -A1 -x tx_pkts_send | tail -n 1)
	echo \"# rdma statistic: tx_pkts_send \$v\"
	[ -n \"\$v\" ] && [ \"\$v\" = \"\$('$uz' run 1 -- cat $hw/tx_pkts_send)\" ]"
t "node 1: each read after the lifespan queries the device again" \
	"$uz" run 1 -- "a=\$(cat $hw/admin_cmds); sleep 0.1; b=\$(cat $hw/admin_cmds)
		echo \"# admin_cmds \$a then \$b\"; [ \$b -gt \$a ]"
t "node 1: 20 reads of every counter all succeed" \
	"$uz" run 1 -- "n=\$(ls $hw | wc -l); for k in \$(seq 20); do
		[ \$(grep -c . $hw/* | grep -c ':1\$') -eq \$n ] || exit 1; done"

# Congestion control (spec 9.1.2): a fault rule on node 1 marks its
# requests CE as a congested switch would; node 2 counts them and answers
# with CNPs, node 1's QP takes them and cuts its rate, and the job ends.
ce_marked() {
	counters 1 "$tmp/c0" && counters 2 "$tmp/d0" || return 1
	"$uz" fault 1 rule 'kind=request prob=0.2 ce' > /dev/null || return 1
	"$uz" run 2 -- "(timeout 120 ib_write_bw -d uzura0 -x $gidx -n 200 -s 65536 > /tmp/ce-server.log 2>&1 &)
		for k in \$(seq 40); do ss -ltn | grep -q :18515 && exit 0; sleep 0.5; done; exit 1" &&
		"$uz" run 1 -- "timeout 120 ib_write_bw -d uzura0 -x $gidx -n 200 -s 65536 10.77.0.2" \
			> "$tmp/ce-client.log" 2>&1
	local rc=$?
	"$uz" fault 1 rules clear > /dev/null
	grep -E '^ *65536 ' "$tmp/ce-client.log" | sed 's/^/# /'
	counters 1 "$tmp/c1" && counters 2 "$tmp/d1" || return 1
	[ "$rc" -eq 0 ] &&
		moved np_ecn_marked_roce_packets "$tmp/d0" "$tmp/d1" 1 &&
		moved np_cnp_sent "$tmp/d0" "$tmp/d1" 1 &&
		moved rp_cnp_handled "$tmp/c0" "$tmp/c1" 1 &&
		same_delta np_cnp_sent "$tmp/d0" "$tmp/d1" rp_cnp_handled "$tmp/c0" "$tmp/c1"
}
t "CE marks on node 1's writes: node 2 sends CNPs, node 1 takes them (hw_counters)" \
	ce_marked
# Here-strings, not pipes: grep -q leaves early and the writer gets EPIPE.
t "uzura cc shows the knobs and refuses a value out of range" bash -c "
	grep -qx 'rpg_time_reset *300' <<< \"\$('$uz' cc 1)\" &&
	grep -qx 'rpg_ai_rate *10' <<< \"\$('$uz' cc 1 rpg_ai_rate=10)\" &&
	! '$uz' cc 1 rpg_gd=99 2> /dev/null &&
	grep -q 'rpg_gd takes 1..15' <<< \"\$('$uz' cc 1 rpg_gd=99 2>&1)\" &&
	grep -qx 'rpg_gd *11' <<< \"\$('$uz' cc 1)\""

"$uz" down
t "down leaves no cluster state" \
	[ ! -e "${UZURA_BUILD:-$top/build}/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
