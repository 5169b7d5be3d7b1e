#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make demo: boot two nodes, show the NIC as each node's driver sees it,
# send IP traffic over the uzura link, and shut down cleanly.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
uz=$top/uzura
uzdev='$(for n in /sys/class/net/*; do d=$(readlink $n/device/driver) && [ "${d##*/}" = uzura ] && echo ${n##*/}; done)'

trap '"$uz" down' EXIT
"$uz" down
"$uz" up -n 2
for i in 1 2; do
	echo
	echo "---- node $i: the uzura NIC as its driver sees it"
	"$uz" run "$i" -- "dmesg | grep 'uzura RDMA NIC'; ethtool -i $uzdev | head -3;
		ip -br addr show dev $uzdev"
done
echo
echo "---- node 1 pings node 2 over the uzura link"
"$uz" run 1 -- 'ping -c 3 10.77.0.2'
echo
echo "---- the device's counters on node 1 (QMP qom-get)"
for c in tx_frames rx_frames admin_cmds irqs; do
	printf '%s ' "$c"
	printf '{"execute":"qmp_capabilities"}\n{"execute":"qom-get","arguments":{"path":"/machine/peripheral/uz0","property":"%s"}}\n' "$c" |
		socat -t 1 - "UNIX-CONNECT:$top/build/cluster/node1/qmp.sock" |
		sed -n 's/.*"return": \([0-9][0-9]*\).*/\1/p'
done
echo
echo "---- shutting down"
