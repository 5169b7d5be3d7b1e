#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boot hook of the uzura layer disk, run by uzura-init as "boot.sh NODE".
# Installs the modules built from the checkout with the module index made
# on the host (depmod in the guest takes half a minute under TCG), loads
# the driver, installs the verbs provider and gives the uzura interface of
# node N the address 10.77.0.N/24.
layer=$(dirname "$0")
kdir=/lib/modules/$(uname -r)
node=$1

mkdir -p "$kdir/updates"
cp "$layer"/modules/*.ko "$kdir/updates/"
cp "$layer"/modules-index/modules.* "$kdir/"
modprobe uzura || { echo "uzura boot: cannot load the uzura module"; exit 1; }

# The verbs provider, laid out as Debian's ibverbs-providers does for a
# provider with a direct-verbs library (efa, mlx5): libuzura.so.1 in the
# library directory, the libibverbs plugin a link to it (one copy in a
# process that also links -luzura), and libuzura.so for linking.
if [ -f "$layer"/provider/libuzura.so.1 ]; then
	plugins=$(dirname "$(ls /usr/lib/*/libibverbs/*.so | head -n 1)")
	libdir=$(dirname "$plugins")
	cp "$layer"/provider/libuzura.so.1 "$libdir/"
	ln -sf libuzura.so.1 "$libdir/libuzura.so"
	ln -sf ../libuzura.so.1 "$plugins/libuzura-rdmav34.so"
	cp "$layer"/provider/*.driver /etc/libibverbs.d/
	ldconfig
fi

# Guest test programs (tests/guest), on the PATH.
if [ -n "$(ls "$layer"/tests/ 2>/dev/null)" ]; then
	cp "$layer"/tests/* /usr/local/bin/
fi

for n in /sys/class/net/*; do
	[ "$(basename "$(readlink "$n/device/driver" 2>/dev/null)")" = uzura ] || continue
	dev=$(basename "$n")
	# Jumbo frames, as RoCE fabrics are set up: the RoCE path MTU is 4096.
	ip link set "$dev" mtu 9000 up
	ip addr add "10.77.0.$node/24" dev "$dev"
	echo "uzura boot: $dev is 10.77.0.$node"
done
