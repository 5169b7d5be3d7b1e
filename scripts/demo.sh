#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make demo: boot two nodes, show the NIC as each node's driver sees it,
# and shut down cleanly.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
uz=$top/uzura

trap '"$uz" down' EXIT
"$uz" down
"$uz" up -n 2
for i in 1 2; do
	echo
	echo "---- node $i: the uzura PCI function and its driver"
	"$uz" run "$i" -- 'lspci_dev=$(grep -l 0x7a75 /sys/bus/pci/devices/*/device);
		d=$(dirname $lspci_dev); echo "PCI $(basename $d) driver $(basename $(readlink $d/driver))";
		dmesg | grep -i uzura'
done
echo
echo "---- shutting down"
