#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A cluster across two hosts (make check-large): two network namespaces
# stand for the hosts, uzh-a and uzh-b, with a veth pair as their
# underlay (10.99.0.1 and 10.99.0.2, MTU 9100).  A launcher in each runs
# half of four nodes (./uzura up -n 4 --nodes 1-2 --vxlan 10.99.0.2 and
# --nodes 3-4 --vxlan 10.99.0.1, each with its own UZURA_CLUSTER), their
# fabrics joined by VXLAN.  Node 1 reaches node 4 (ping, RDMA), and
# mpirun on node 1, with no settings, runs four ranks across both hosts.
# nsenter switches only the network namespace, so the launchers' own
# namespaces are seen by everyone.  Needs root.  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/../lib.sh"

src=$top/tests/guest/mpi
log=$top/build/test-logs/multihost
rm -rf "$log"
mkdir -p "$log"

# on A|B CMD...: CMD as host A's or B's launcher would run it.
on() {
	local h=$1
	shift
	nsenter --net=/run/netns/uzh-$h env UZURA_CLUSTER="$top/build/cluster-$h" "$@"
}

cleanup() {
	on a "$uz" down > /dev/null 2>&1
	on b "$uz" down > /dev/null 2>&1
	ip netns del uzh-a 2> /dev/null
	ip netns del uzh-b 2> /dev/null
}

hosts() {
	ip netns add uzh-a && ip netns add uzh-b &&
		ip -n uzh-a link add uzh0 mtu 9100 type veth peer name uzh1 mtu 9100 netns uzh-b &&
		ip -n uzh-a addr add 10.99.0.1/24 dev uzh0 &&
		ip -n uzh-b addr add 10.99.0.2/24 dev uzh1 &&
		ip -n uzh-a link set uzh0 up && ip -n uzh-b link set uzh1 up &&
		ip -n uzh-a link set lo up && ip -n uzh-b link set lo up &&
		ip -n uzh-a link show uzh0 | grep -q LOWER_UP
}

# up A|B RANGE REMOTE: boot that host's share, in the background.
up() {
	on "$1" "$uz" up -n 4 --nodes "$2" --vxlan "$3" > "$log/up-$1.log" 2>&1
}

booted() {
	local pa pb rc=0
	up a 1-2 10.99.0.2 & pa=$!
	up b 3-4 10.99.0.1 & pb=$!
	wait "$pa" || rc=1
	wait "$pb" || rc=1
	sed 's/^/# a: /' "$log/up-a.log"
	sed 's/^/# b: /' "$log/up-b.log"
	return "$rc"
}

# Node 1 (host A) pings node 4 (host B), and RDMA-writes to it.
reach() {
	on a "$uz" run 1 -- 'ping -c 3 -W 5 10.77.0.4' > "$log/ping.log" 2>&1 || return 1
	on b "$uz" run 4 -- "(timeout 120 ib_write_bw -d $ibdev -x $gidx -n 50 -s 65536 > /tmp/bw.log 2>&1 &)
		for k in \$(seq 60); do ss -ltn | grep -q :18515 && exit 0; sleep 0.5; done; exit 1" &&
		on a "$uz" run 1 -- "timeout 120 ib_write_bw -d $ibdev -x $gidx -n 50 -s 65536 10.77.0.4" \
			> "$log/write-bw.log" 2>&1
}

# mpirun on node 1 over all four: the program is built on each host's
# nodes by its launcher, then run from host A.
mpi() {
	local prog
	prog=$(on a "$uz" mpicc "$src/mpi-coll.c") &&
		on b "$uz" mpicc "$src/mpi-coll.c" > /dev/null || return 1
	timeout 900 nsenter --net=/run/netns/uzh-a env UZURA_CLUSTER="$top/build/cluster-a" \
		"$uz" mpirun -n 4 -- "$prog" 65536 > "$log/mpi-coll.log" 2>&1
	local rc=$?
	echo "# mpi-coll, 4 ranks on two hosts: $(grep -c '^ok ' "$log/mpi-coll.log") checks" \
	     "passed, $(grep -c '^not ok ' "$log/mpi-coll.log") failed," \
	     "$(grep -Ec "$mpi_errors" "$log/mpi-coll.log") error lines"
	[ "$rc" -eq 0 ] && grep -q '^ok ' "$log/mpi-coll.log" &&
		! grep -q '^not ok ' "$log/mpi-coll.log" &&
		! grep -Eq "$mpi_errors" "$log/mpi-coll.log"
}

# gone: down on both hosts leaves neither fabric namespace, nor a tap or
# VXLAN device in the hosts' namespaces.
gone() {
	local h id left=
	on a "$uz" down && on b "$uz" down || return 1
	for h in a b; do
		id=$(printf '%s' "$(realpath -m "$top/build/cluster-$h")" |
			sha1sum | cut -c1-6)
		ip netns list | grep -q "^uzura-$id\\b" && left="$left uzura-$id"
		ip -n "uzh-$h" -o link show | grep -q "uz$id" &&
			left="$left uz$id* in uzh-$h"
	done
	[ -z "$left" ] || echo "# left:$left"
	[ -z "$left" ]
}

# small_mtu: over an underlay of MTU 1500, up refuses VXLAN with the
# reason, before any node starts, and leaves nothing behind.
small_mtu() {
	local err rc
	ip netns add uzh-c && ip -n uzh-c link add uzh2 type veth peer name uzh3 &&
		ip -n uzh-c addr add 10.98.0.1/24 dev uzh2 &&
		ip -n uzh-c link set uzh2 up && ip -n uzh-c link set uzh3 up || return 1
	err=$(nsenter --net=/run/netns/uzh-c env UZURA_CLUSTER="$top/build/cluster-c" \
		"$uz" up -n 2 --nodes 1-1 --vxlan 10.98.0.2 2>&1)
	rc=$?
	echo "# $err"
	nsenter --net=/run/netns/uzh-c env UZURA_CLUSTER="$top/build/cluster-c" "$uz" down
	[ "$rc" -ne 0 ] && grep -q 'MTU 1500; VXLAN needs 9050' <<< "$err" &&
		! ip -n uzh-c -o link show | grep -q 'vx' &&
		[ -z "$(ls "$top/build/cluster-c" 2> /dev/null)" ]
	rc=$?
	ip netns del uzh-c
	rm -rf "$top/build/cluster-c" "$top/build/cluster-c.logs"
	return "$rc"
}

cleanup
trap cleanup EXIT
t "an underlay of MTU 1500 is refused for VXLAN, leaving nothing" small_mtu
t "two namespace-hosts with a veth underlay" hosts
t "each boots its two of four nodes, fabrics joined by VXLAN" booted
t "node 1 (host A) pings and RDMA-writes node 4 (host B)" reach
t "mpirun on node 1: MPI collectives, 4 ranks across both hosts" mpi
t "down on both leaves no fabric namespace" gone
echo "1..$n"
[ "$fails" -eq 0 ]
