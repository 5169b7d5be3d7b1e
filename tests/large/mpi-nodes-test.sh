#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# MPI across more nodes than make check boots (make check-large): four
# nodes on the multicast link, each with 2 vCPUs, then eight with 1 GiB
# each (UZURA_LARGE_NODES="4" for four only).  With no MPI settings, the
# programs of tests/guest/mpi with one rank per node, Open MPI and MPICH;
# no node may have retransmitted a packet (the link loses nothing when
# its sockets are large enough, ./uzura up).  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/../lib.sh"

src=$top/tests/guest/mpi
log=$top/build/test-logs/mpi-nodes
rm -rf "$log"
mkdir -p "$log"

# mpi NODES NAME [--mpich] FILE ARGS...
mpi() {
	local nodes=$1 name=$2 out
	shift 2
	out=$log/$name-$nodes.log
	timeout 900 "$uz" mpirun -n "$nodes" "$@" > "$out" 2>&1
	local rc=$?
	sed -n -e 's/^not ok/# &/p' -e '/^# /p' "$out" | head -n 20
	echo "# $name on $nodes nodes: $(grep -c '^ok ' "$out") checks passed," \
	     "$(grep -c '^not ok ' "$out") failed"
	[ "$rc" -eq 0 ] && grep -q '^ok ' "$out" && ! grep -q '^not ok ' "$out"
}

no_retransmits() {
	local i r bad=0
	for i in $(seq 1 "$1"); do
		r=$("$uz" stats "$i" | awk '$1 == "retransmits" { print $2 }')
		echo "# node $i: $r packets retransmitted"
		[ "$r" = 0 ] || bad=1
	done
	[ "$bad" = 0 ]
}

for nodes in ${UZURA_LARGE_NODES:-4 8}; do
	mem=2048
	[ "$nodes" -gt 4 ] && mem=1024
	"$uz" down
	t "$nodes nodes boot" env UZURA_MEM=$mem "$uz" up -n "$nodes"
	t "Open MPI, $nodes ranks: mpi-p2p to 1 MiB" \
		mpi "$nodes" mpi-p2p "$src/mpi-p2p.c" 1048576
	t "Open MPI, $nodes ranks: mpi-coll to 256 KiB" \
		mpi "$nodes" mpi-coll "$src/mpi-coll.c" 262144
	t "Open MPI, $nodes ranks: mpi-rma to 256 KiB" \
		mpi "$nodes" mpi-rma "$src/mpi-rma.c" 262144
	t "MPICH, $nodes ranks: mpi-coll to 64 KiB" \
		mpi "$nodes" mpi-coll-mpich --mpich "$src/mpi-coll.c" 65536
	t "no packet retransmitted on any of the $nodes nodes" no_retransmits "$nodes"
done

"$uz" down
echo "1..$n"
[ "$fails" -eq 0 ]
