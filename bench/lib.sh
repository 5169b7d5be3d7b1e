# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2154,SC2016
#
# Sourced by bench/run and bench/mpi: their two-node cluster with the
# --virtio-link NIC, the shell functions they send to the guests, and the
# links' set-up.  Expects $uz, $build, $reuse, $keep and log()/die().

# Boot the cluster (or check the running one, --reuse); take it down at
# exit unless --keep.
booted=0
bench_cleanup() {
	if [ "$booted" = 1 ] && [ "$keep" = 0 ]; then
		log "shutting the nodes down"
		"$uz" down
	fi
}
bench_cluster() {
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	if [ "$reuse" = 1 ]; then
		"$uz" run 1 -- 'test -s /run/uzura-virtio-link' 2>/dev/null ||
			die "--reuse: no running cluster with --virtio-link in $build"
	else
		"$uz" up -n 2 --virtio-link || die "the cluster did not boot"
		booted=1
	fi
}

# Shell functions for the guests, sent with each command.
guest_lib='
uzdev() { for n in /sys/class/net/*; do
	[ "$(basename "$(readlink $n/device/driver 2>/dev/null)")" = uzura ] && echo ${n##*/}; done; }
vdev() { cat /run/uzura-virtio-link; }
# The index of the RoCE v2 GID of IPv4 address $2 on RDMA device $1.
gidx() { local h p g
	h=$(printf "%02x%02x:%02x%02x" $(echo $2 | tr . " "))
	p=/sys/class/infiniband/$1/ports/1
	for g in $p/gids/*; do
		[ "$(cat $g)" = "0000:0000:0000:0000:0000:ffff:$h" ] &&
		[ "$(cat $p/gid_attrs/types/${g##*/} 2>/dev/null)" = "RoCE v2" ] &&
		{ echo ${g##*/}; return 0; }
	done; return 1; }
'
grun() { local i=$1; shift; timeout 60 "$uz" run "$i" -- "$guest_lib $*" < /dev/null; }

# bench_links MTU RXE: both links of both nodes at MTU; with RXE=1 also
# Soft-RoCE rxe0 on the virtio-net NIC.
bench_links() {
	local i
	for i in 1 2; do
		grun "$i" "ip link set \$(uzdev) mtu $1 && ip link set \$(vdev) mtu $1" ||
			die "node $i: cannot set MTU $1"
		[ "$2" = 1 ] || continue
		grun "$i" 'modprobe rdma_rxe &&
			{ [ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev $(vdev); }' ||
			die "node $i: cannot set up rxe0"
	done
}
