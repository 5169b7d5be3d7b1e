# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2154,SC2016
#
# Sourced by bench/run, bench/mpi and bench/faults: their two-node cluster with the
# --virtio-link NIC, the shell functions they send to the guests, and the
# links' set-up.  Expects $uz, $build, $reuse, $keep and log()/die(), and
# takes ./uzura up's --nic options from the array nic_args if it is set.

# Boot the cluster (or check the running one, --reuse); take it down at
# exit unless --keep.
booted=0
bench_cleanup() {
	# A run stopped while the main loops were at SCHED_FIFO (bench/rate).
	if [ "${prio_set:-0}" = 1 ]; then
		"$uz" prio default > /dev/null 2>&1
	fi
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
		# shellcheck disable=SC2206
		"$uz" up -n 2 --virtio-link ${nic_args[@]+"${nic_args[@]}"} ||
			die "the cluster did not boot"
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

# mpirun's flags for each transport (besides -np 2), for bench/mpi and
# bench/faults.  uzura: none, the image's site configuration chooses UCX on
# uzura0.  rxe: UCX forced (Open
# MPI prefers it over ob1 only for the drivers opal_common_ucx_devices
# names, and rxe0 has no PCI driver to name) on rxe0, with UCX's defaults;
# UCX 1.18's UD transport drops every packet from a device that does not
# report the RoCE L3 type in the work completion's sl, as rxe does not
# (docs/mpi.md), so this one is expected to fail on Debian trixie, and the
# failure is a finding of the run.  rxe-rc: RC for the data, UD only to
# connect (UCX_TLS=rc_v: rc_verbs alone has no transport to connect with,
# "no auxiliary transport"), with UD's GID check off so that it works on
# rxe.  tcp-virtio: no UCX at all: ob1 over the TCP BTL on the virtio
# link, one-sided by osc rdma over the same BTL (Open MPI 5 emulates RDMA
# with active messages there).
declare -gA mflags
mflags[uzura]=""
mflags[rxe]="--mca pml ucx --mca osc ucx -x UCX_NET_DEVICES=rxe0:1"
mflags[rxe-rc]="${mflags[rxe]} -x UCX_TLS=rc_v,self,sm -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
mflags[tcp-virtio]="--mca pml ob1 --mca osc rdma --mca btl self,tcp --mca btl_tcp_if_include 10.78.0.0/24"
