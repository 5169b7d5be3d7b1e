#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boot test: two nodes come up, the uzura module is loaded on both and has
# bound the device; the launcher passes exit statuses through, refuses bad
# arguments and a second cluster, and leaves nothing behind.  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/lib.sh"


qemu_procs() { pgrep -f "$top/build/qemu/qemu-system-x86_64" | wc -l; }

"$uz" down
t "bad arguments print usage" bash -c "'$uz' frobnicate 2>&1 | grep -q usage:"
t "bad arguments fail" bash -c "! '$uz' frobnicate 2>/dev/null"
t "up rejects a bad node count" bash -c "! '$uz' up -n 0 2>/dev/null"

# The accelerator: KVM where a probe boot shows the host's KVM runs the
# guest, TCG otherwise (scripts/accel.sh).  On a nested, paravirtual KVM
# /dev/kvm opens but the guest stops at once: the fallback, with its
# reason, is what runs there.
verdict=$("$uz" accel 2>&1)
echo "# uzura accel: $verdict"
t "accel: the probe's verdict is kvm, or tcg with its reason" \
	bash -c '[[ "$1" == kvm || "$1" == "tcg: "?* ]]' _ "$verdict"
t "accel: a QEMU without KVM (the sanitizer build) falls back to TCG" \
	bash -c "UZURA_QEMU='$top/build/qemu-san/qemu-system-x86_64' '$uz' accel |
		grep -qx 'tcg: this QEMU is built without KVM'"
t "up --icount --accel kvm is refused: instruction counting needs TCG" \
	bash -c 'out=$("$1" up --icount --accel kvm 2>&1); rc=$?
		[ $rc -ne 0 ] && grep -q -- "--icount needs TCG" <<< "$out"' _ "$uz"
if [ "$verdict" != kvm ]; then
	t "up --accel kvm is refused here, with the probe's reason" \
		bash -c 'out=$("$1" up --accel kvm 2>&1); rc=$?
			[ $rc -ne 0 ] && grep -qF -- "$2" <<< "$out" &&
			[ ! -e "$3" ]' _ "$uz" "${verdict#tcg: }" "$top/build/cluster"
fi

# A QEMU that exits while up waits for its node: up fails at once with
# QEMU's own last words and takes the cluster down.
qemu_exits() {
	local out pidf=$top/build/cluster/node2/qemu.pid rc k
	out=$(mktemp)
	"$uz" up -n 2 > "$out" 2>&1 &
	for k in $(seq 100); do
		[ -s "$pidf" ] && grep -q 'waiting for ssh' "$out" && break
		sleep 0.2
	done
	kill -TERM "$(cat "$pidf")" 2> /dev/null
	wait $!
	rc=$?
	sed 's/^/# /' "$out" | head -n 8
	grep -q 'node 2: QEMU exited after' "$out" &&
		grep -q 'terminating on signal 15' "$out"
	k=$?
	rm -f "$out"
	[ "$rc" -ne 0 ] && [ "$k" -eq 0 ] && [ "$(qemu_procs)" -eq 0 ] &&
		[ ! -e "$top/build/cluster" ]
}
t "a QEMU that exits during up: up fails with its last lines, nothing left" \
	qemu_exits

# The driver runs under the run-time checks Debian's kernel offers a
# module: SLUB debugging (red zones, poisoning, sanity checks), KFENCE
# sampling every 10 ms, page poisoning; list debugging is built in.
# KASAN, kmemleak, lockdep and DMA-API debugging are not built into
# Debian's kernel.
t "two nodes boot and answer ssh" env \
	UZURA_KERNEL_ARGS="slub_debug=FZPU kfence.sample_interval=10 page_poison=1" \
	"$uz" up -n 2
expect=kvm
[ "$verdict" = kvm ] || expect="tcg (${verdict#tcg: })"
t "status names the accelerator the nodes run on: $expect" \
	bash -c '"$1" status | grep -qxF -- "accelerator: $2"' _ "$uz" "$expect"
for i in 1 2; do
	t "node $i: uzura module loaded" \
		"$uz" run "$i" -- 'grep -q "^uzura " /proc/modules'
	t "node $i: driver bound to the device" \
		"$uz" run "$i" -- 'for d in /sys/bus/pci/devices/*; do
			[ "$(cat $d/vendor):$(cat $d/device)" = 0x1234:0x7a75 ] &&
				readlink $d/driver; done | grep -q "/uzura$"'
	t "node $i: driver reports the device" \
		bash -c "'$uz' run $i -- dmesg | grep -Eq 'uzura RDMA NIC version [0-9]+\.[0-9]+ .* mac 52:54:00:7a:00:0$i, link up'"
	t "node $i: hostname" \
		bash -c "[ \"\$('$uz' run $i -- hostname)\" = node$i ]"
done

# The Ethernet function: IP between the nodes over the uzura link.
for i in 1 2; do
	t "node $i: uzura netdev has 10.77.0.$i" \
		"$uz" run "$i" -- "ip -br addr show dev $uzdev | grep -q 10.77.0.$i/24"
	t "node $i: ethtool -i names the driver" \
		"$uz" run "$i" -- "ethtool -i $uzdev | grep -qx 'driver: uzura'"
done
# The RDMA function: the ib_device on the RoCE port of the uzura netdev.
for i in 1 2; do
	t "node $i: rdma link shows the port ACTIVE on the uzura netdev" \
		"$uz" run "$i" -- "rdma link show | grep 'state ACTIVE' | grep -q \"netdev $uzdev\""
	t "node $i: the GID table holds the RoCE v2 GID of 10.77.0.$i" \
		"$uz" run "$i" -- "p=\$(echo /sys/class/infiniband/*/ports/1)
			for g in \$p/gids/*; do
				[ \"\$(cat \$g)\" = 0000:0000:0000:0000:0000:ffff:0a4d:000$i ] &&
				[ \"\$(cat \$p/gid_attrs/types/\${g##*/})\" = 'RoCE v2' ] && exit 0
			done; exit 1"
	t "node $i: ib_core's GSI QP (QP1) runs on the device" \
		"$uz" run "$i" -- "rdma resource show qp | grep -q 'lqpn 1 .*type GSI'"
done
# The verbs provider: libibverbs finds the device, and RC traffic flows.
for i in 1 2; do
	t "node $i: ibv_devinfo -v shows uzura0 with an active Ethernet port" \
		"$uz" run "$i" -- "ibv_devinfo -v -d uzura0 > /tmp/devinfo &&
			grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo &&
			grep -q 'link_layer:.*Ethernet' /tmp/devinfo"
done
# Its own TAP goes in as comments, out of this stream's numbering.
t "node 1: bad verbs input gets the documented errno (verbs-errors)" \
	bash -c "set -o pipefail; '$uz' run 1 -- verbs-errors | sed 's/^/# /'"
t "node 1: on-demand paging: a fault storm, prefetch, unmapped pages, huge pages (odp-test)" \
	bash -c "set -o pipefail; '$uz' run 1 -- odp-test | sed 's/^/# /'"
t "node 1: XRC: two processes share a domain, SENDs/WRITE/READ to their SRQs, bad input (xrc-test)" \
	bash -c "set -o pipefail; '$uz' run 1 -- xrc-test | sed 's/^/# /'"
t "node 1: device memory: copies, zeroed reuse, DM MRs, WRITE/READ/atomics/SENDs through them, two processes, bad input (dm-test)" \
	bash -c "set -o pipefail; '$uz' run 1 -- dm-test | sed 's/^/# /'"
for pp in rc uc ud srq; do
	t "ibv_${pp}_pingpong node 1 -> node 2 (100 iterations)" bash -c "
		'$uz' run 2 -- '(timeout 120 ibv_${pp}_pingpong -d uzura0 -g $gidx -n 100 > /tmp/pp-server.log 2>&1 &)
			for k in \$(seq 40); do ss -ltn | grep -q :18515 && exit 0; sleep 0.5; done; exit 1' &&
		'$uz' run 1 -- 'timeout 120 ibv_${pp}_pingpong -d uzura0 -g $gidx -n 100 10.77.0.2' &&
		'$uz' run 2 -- 'sleep 1; grep -q \"100 iters\" /tmp/pp-server.log'"
done
t "rping node 1 -> node 2 (RDMA CM over QP1; SEND, READ, WRITE; 5 iterations)" bash -c "
	'$uz' run 2 -- '(timeout 120 rping -s -a 10.77.0.2 -C 5 > /tmp/rping-server.log 2>&1 &)
		for k in \$(seq 40); do rdma resource show cm_id | grep -q \"state LISTEN\" && exit 0; sleep 0.5; done; exit 1' &&
	[ \"\$('$uz' run 1 -- 'timeout 120 rping -c -a 10.77.0.2 -v -C 5' | grep -c 'ping data: rdma-ping-')\" = 5 ]"
t "20 verbs processes killed with live objects leave none behind" \
	"$uz" run 1 -- 'base=$(rdma resource | grep uzura0)
		for k in $(seq 20); do
			(ibv_rc_pingpong -d uzura0 -g 1 > /dev/null 2>&1 &)
			for w in $(seq 40); do rdma resource | grep -q " qp 2 " && break; sleep 0.2; done
			rdma resource | grep -q " qp 2 .* mr 1 ctx 1 " || exit 1
			pkill -9 ibv_rc_pingpong; sleep 0.5
		done
		[ "$(rdma resource | grep uzura0)" = "$base" ]'
t "ping node 2 from node 1 over uzura" "$uz" run 1 -- 'ping -c 3 -W 5 10.77.0.2'
t "ssh node 1 -> node 2 over uzura" \
	bash -c "[ \"\$('$uz' run 1 -- ssh -o BatchMode=yes 10.77.0.2 hostname)\" = node2 ]"
t "TCP over uzura (iperf3, 3 s)" bash -c "
	'$uz' run 2 -- 'iperf3 -s -1 -D' &&
	'$uz' run 1 -- 'iperf3 -c 10.77.0.2 -t 3 -J' > '$top/build/test-logs/iperf3.json' &&
	grep -q '\"bits_per_second\"' '$top/build/test-logs/iperf3.json'"
t "jumbo frames: MTU 9000 and an 8000-byte ping unfragmented" \
	bash -c "'$uz' run 1 -- 'ip link set $uzdev mtu 9000' &&
		'$uz' run 2 -- 'ip link set $uzdev mtu 9000' &&
		'$uz' run 1 -- 'ping -c 2 -W 5 -M do -s 8000 10.77.0.2'"
t "ip -s link counts the frames" \
	"$uz" run 1 -- "[ \$(cat /sys/class/net/$uzdev/statistics/tx_packets) -gt 10 ]"
t "uzura stats shows the NIC's frame counters" \
	bash -c "'$uz' stats 1 | awk '\$1 == \"tx_frames\" && \$2 > 10 { ok = 1 } END { exit !ok }'"
t "uzura fault refuses a probability above 1" \
	bash -c "! '$uz' fault 1 fault-drop=2 2>/dev/null"
t "fault injection: 10 % drop on node 1, TCP still delivers 300 kB, drops counted" \
	bash -c "'$uz' fault 1 fault-drop=0.1 fault-seed=7 | grep '^fault-drop  *0.1$' >/dev/null &&
		[ \"\$('$uz' run 1 -- 'head -c 300000 /dev/zero | ssh -o BatchMode=yes 10.77.0.2 md5sum')\" = \
		  \"\$(head -c 300000 /dev/zero | md5sum)\" ] &&
		'$uz' stats 1 | awk '\$1 == \"fault_drops\" && \$2 > 0 { ok = 1 } END { exit !ok }' &&
		'$uz' fault 1 fault-drop=0 >/dev/null"
t "node 2: module unloads and reloads, and IP works again" \
	"$uz" run 2 -- "rmmod uzura && modprobe uzura && ip link set $uzdev up &&
		ip addr add 10.77.0.2/24 dev $uzdev && ping -c 2 -W 5 10.77.0.1"
t "run passes the exit status through" \
	bash -c "'$uz' run 1 -- 'exit 7'; [ \$? -eq 7 ]"
t "a second up is refused while the cluster runs" \
	bash -c "'$uz' up -n 2 2>&1 | grep -q 'already running'"
t "run on a missing node fails" bash -c "! '$uz' run 3 -- true 2>/dev/null"

# What the kernel's checks report, after everything above ran on both.
kernel_clean() {
	local i out rc=0
	for i in 1 2; do
		out=$("$uz" run "$i" -- "dmesg | grep -E 'BUG[: ]|WARNING:|Oops|general protection|Redzone|Poison overwritten|list_(add|del) corruption|refcount_t:|kfence: .*(invalid|out-of-bounds|use-after-free)'")
		if [ -n "$out" ]; then
			echo "$out" | head -n 20 | sed "s/^/# node $i: /"
			rc=1
		fi
	done
	"$uz" run 1 -- "grep -qw slub_debug=FZPU /proc/cmdline" || rc=1
	return $rc
}
t "the kernel's SLUB, KFENCE and list checks report nothing on either node" \
	kernel_clean

"$uz" down
t "down leaves no QEMU process" [ "$(qemu_procs)" -eq 0 ]
t "down leaves no cluster state" [ ! -e "$top/build/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
