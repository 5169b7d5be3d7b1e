#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# MPI across more nodes than make check boots (make check-large): 4, 8
# and 16 nodes on the switched fabric (docs/fabric.md), with the memory
# ./uzura up gives each (2 GiB and 2 vCPUs up to 8 nodes, 1 GiB and 1
# vCPU above; UZURA_LARGE_NODES="4" for four only).  With no MPI settings, the
# programs of tests/guest/mpi with one rank per node, Open MPI and MPICH.
# The packets each node retransmitted are reported, not asserted: with no
# port rate set the switch queues nothing, but a node whose QEMU falls
# behind on a busy host times a request out.  Speaks TAP.
set -uo pipefail

. "$(dirname "$0")/../lib.sh"

src=$top/tests/guest/mpi
log=$top/build/test-logs/mpi-nodes
rm -rf "$log"
mkdir -p "$log"

retransmits() {
	local i
	for i in $(seq 1 "$1"); do
		echo "# node $i: $("$uz" stats "$i" |
			awk '$1 == "retransmits" { print $2 }') packets retransmitted"
	done
}

booted() {
	"$uz" up -n "$1" > "$log/up-$1.log" 2>&1
	local rc=$?
	sed 's/^/# /' "$log/up-$1.log"
	[ "$rc" -eq 0 ] && grep -q 'on the fabric link' "$log/up-$1.log"
}

for nodes in ${UZURA_LARGE_NODES:-4 8 16}; do
	"$uz" down
	t "$nodes nodes boot on the switched fabric" booted "$nodes"
	t "Open MPI, $nodes ranks: mpi-p2p to 1 MiB" \
		mpi_job mpi-p2p "$nodes" "$src/mpi-p2p.c" 1048576
	t "Open MPI, $nodes ranks: mpi-coll to 256 KiB" \
		mpi_job mpi-coll "$nodes" "$src/mpi-coll.c" 262144
	t "Open MPI, $nodes ranks: mpi-rma to 256 KiB" \
		mpi_job mpi-rma "$nodes" "$src/mpi-rma.c" 262144
	t "MPICH, $nodes ranks: mpi-coll to 64 KiB" \
		mpi_job mpi-coll-mpich "$nodes" --mpich "$src/mpi-coll.c" 65536
	retransmits "$nodes"
done

"$uz" down
echo "1..$n"
[ "$fails" -eq 0 ]
