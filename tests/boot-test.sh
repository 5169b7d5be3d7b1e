#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boot test: two nodes come up, the uzura module is loaded on both and has
# bound the device; the launcher passes exit statuses through, refuses bad
# arguments and a second cluster, and leaves nothing behind.  Speaks TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
uz=$top/uzura
n=0
fails=0

t() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		fails=$((fails + 1))
	fi
}

qemu_procs() { pgrep -f "$top/build/qemu/qemu-system-x86_64" | wc -l; }

"$uz" down
t "bad arguments print usage" bash -c "'$uz' frobnicate 2>&1 | grep -q usage:"
t "bad arguments fail" bash -c "! '$uz' frobnicate 2>/dev/null"
t "up rejects a bad node count" bash -c "! '$uz' up -n 0 2>/dev/null"

t "two nodes boot and answer ssh" "$uz" up -n 2
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
t "node 2: module unloads and reloads" \
	"$uz" run 2 -- 'rmmod uzura && modprobe uzura && grep -q "^uzura " /proc/modules'
t "run passes the exit status through" \
	bash -c "'$uz' run 1 -- 'exit 7'; [ \$? -eq 7 ]"
t "a second up is refused while the cluster runs" \
	bash -c "'$uz' up -n 2 2>&1 | grep -q 'already running'"
t "run on a missing node fails" bash -c "! '$uz' run 3 -- true 2>/dev/null"

"$uz" down
t "down leaves no QEMU process" [ "$(qemu_procs)" -eq 0 ]
t "down leaves no cluster state" [ ! -e "$top/build/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
