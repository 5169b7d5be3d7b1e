#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# MPI across more nodes than make check boots (make check-large): four
# nodes on the multicast link, each with 2 vCPUs, then eight with 1 GiB
# each (UZURA_LARGE_NODES="4" for four only).  With no MPI settings, the
# programs of tests/guest/mpi with one rank per node, Open MPI and MPICH.
# The packets each node retransmitted are reported, not asserted: the
# multicast link drops a frame when a receiving QEMU falls behind, which
# depends on how busy the host is (./uzura up sizes the sockets so that an
# idle host loses none).  Speaks TAP.
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

for nodes in ${UZURA_LARGE_NODES:-4 8}; do
	mem=2048
	[ "$nodes" -gt 4 ] && mem=1024
	"$uz" down
	t "$nodes nodes boot" env UZURA_MEM=$mem "$uz" up -n "$nodes"
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
