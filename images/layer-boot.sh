#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Boot hook of the uzura layer disk, run by uzura-init as "boot.sh NODE".
# Installs the modules built from the checkout with the module index made
# on the host (depmod in the guest takes half a minute under TCG), loads
# the driver, installs the verbs provider and its man pages and gives the
# uzura interface of node N the address 10.77.0.N/24.
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

# The provider's man pages (uzuradv(7), uzuradv_post_crw(3), ...), where
# man-db looks before /usr/share/man; an alias is a link to its page.  The
# base image (debootstrap minbase) has no man(1): they are there for one
# installed later, or to read with man -l.
for f in "$layer"/man/*.[1-9]; do
	[ -e "$f" ] || [ -L "$f" ] || continue
	d=/usr/local/share/man/man${f##*.}
	mkdir -p "$d"
	rm -f "$d/${f##*/}"
	cp -P "$f" "$d/"
done

# Guest test programs (tests/guest), on the PATH.
if [ -n "$(ls "$layer"/tests/ 2>/dev/null)" ]; then
	cp "$layer"/tests/* /usr/local/bin/
fi

# Huge pages, as an RDMA host's administrator reserves them for software
# that registers hugetlbfs memory (UCX's buffers, rdma-core's tests): 16 of
# 2 MiB, unless the kernel command line reserved its own (hugepages=N).
hp=/proc/sys/vm/nr_hugepages
[ -w $hp ] && [ "$(cat $hp)" = 0 ] && ! grep -qw 'hugepages=[0-9]*' /proc/cmdline &&
	echo 16 > $hp

for n in /sys/class/net/*; do
	[ "$(basename "$(readlink "$n/device/driver" 2>/dev/null)")" = uzura ] || continue
	dev=$(basename "$n")
	# Jumbo frames, as RoCE fabrics are set up: the RoCE path MTU is 4096.
	ip link set "$dev" mtu 9000 up
	ip addr add "10.77.0.$node/24" dev "$dev"
	echo "uzura boot: $dev is 10.77.0.$node"
done

# The site's MPI configuration, as an RDMA cluster's administrator writes
# it once for the site's NIC (docs/mpi.md): MPI and UCX run on the uzura
# device and link, and never on the management NIC, which carries the same
# slirp address on every node.
ibdev=
for d in /sys/class/infiniband/*; do
	[ "$(basename "$(readlink "$d/device/driver" 2>/dev/null)")" = uzura ] &&
		ibdev=${ibdev:-${d##*/}}
done
nodes=1
for arg in $(cat /proc/cmdline); do
	case "$arg" in
	uzura_nodes=*) nodes=${arg#uzura_nodes=} ;;
	esac
done
# Every node by name (the base image's init names eight): mpirun reaches
# the nodes of a larger cluster by these names.
{
	echo "127.0.0.1 localhost"
	for i in $(seq "$((nodes > 8 ? nodes : 8))"); do
		echo "10.77.0.$i node$i"
	done
} > /etc/hosts
if [ -n "$ibdev" ] && [ -d /etc/openmpi ]; then
	# Debian turns UCX off (pml = ^ucx, osc = ^ucx,pt2pt); Open MPI picks
	# UCX over ob1 only for the drivers opal_common_ucx_devices names.
	sed -i -e '/^pml *=/d' -e '/^osc *=/d' -e '/^# uzura site/,$d' \
		/etc/openmpi/openmpi-mca-params.conf
	cat >> /etc/openmpi/openmpi-mca-params.conf <<EOT
# uzura site: UCX on the uzura NIC
opal_common_ucx_devices = uzura
btl_tcp_if_include = 10.77.0.0/24
EOT
	sed -i '/^# uzura site/,$d' /etc/openmpi/prte-mca-params.conf
	cat >> /etc/openmpi/prte-mca-params.conf <<EOT
# uzura site: daemons talk over the uzura link; one rank per node first
oob_tcp_if_include = 10.77.0.0/24
rmaps_default_mapping_policy = node
EOT
	for i in $(seq "$nodes"); do
		echo "node$i slots=$(nproc)"
	done > /etc/openmpi/prte-default-hostfile
fi
# MPICH's hydra (mpirun.mpich): one slot per node in the host file, so
# ranks go round the nodes as with Open MPI above.  MPICH runs over UCX.
if [ -n "$ibdev" ] && command -v mpiexec.hydra > /dev/null; then
	mkdir -p /etc/mpich
	for i in $(seq "$nodes"); do
		echo "node$i:1"
	done > /etc/mpich/hosts
	grep -q HYDRA_HOST_FILE /etc/environment 2>/dev/null ||
		echo HYDRA_HOST_FILE=/etc/mpich/hosts >> /etc/environment
fi
# UCX's fences are strong by default (its new protocols): a remote flush
# of every lane, which rc_verbs can do only with an mlx5 flush key; on any
# other verbs device each fence printed "flush(remote) is not supported"
# and ordered nothing.  A weak fence (IBV_SEND_FENCE on the next WR, which
# uzura honours) is what a plain verbs device can give: docs/mpi.md.
if [ -n "$ibdev" ]; then
	mkdir -p /etc/ucx
	printf 'UCX_NET_DEVICES=%s:1\nUCX_FENCE_MODE=weak\n' "$ibdev" \
		> /etc/ucx/ucx.conf
fi
# mpirun starts its daemons by ssh: a node that cannot be reached (its
# link down) fails the job in seconds rather than after TCP's minutes.
grep -q ConnectTimeout /root/.ssh/config 2>/dev/null ||
	printf 'Host *\n\tConnectTimeout 10\n' >> /root/.ssh/config
# Every node logs in as root: Open MPI refuses root without these.
grep -q OMPI_ALLOW_RUN_AS_ROOT /etc/environment 2>/dev/null ||
	printf 'OMPI_ALLOW_RUN_AS_ROOT=1\nOMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n' \
		>> /etc/environment
