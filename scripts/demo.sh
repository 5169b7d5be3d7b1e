#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make demo: a few minutes of what uzura is for.  Boots two nodes, then
# with a line of explanation before each step: the RDMA NIC as each node
# sees it, an RDMA write between the nodes (perftest), a conditional RDMA
# write (the uzuradv example), an MPI job with Open MPI's defaults, the
# same job under injected loss with the retransmission counters moving,
# and where to go next.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
uz=$top/uzura
. "$top/tests/lib.sh"

step() {
	echo
	echo "==== $1"
	shift
	printf '     %s\n' "$@"
	echo
}

# counter NODE NAME: one of the NIC's counters (QMP qom-get).
counter() { "$uz" stats "$1" | awk -v c="$2" '$1 == c { print $2 }'; }

trap '"$uz" down' EXIT
"$uz" down
step "Booting two nodes" \
	"Each node is a QEMU process with an uzura NIC; the NICs share one link," \
	"a socket on 127.0.0.1.  The guests run Debian with the uzura driver and" \
	"verbs provider from this checkout."
"$uz" up -n 2

step "The NIC as each node sees it" \
	"An RDMA device registered with the kernel's RDMA stack (a RoCE v2 port on" \
	"the NIC's own Ethernet interface), used by unmodified libibverbs."
for i in 1 2; do
	"$uz" run "$i" -- "echo \"node $i: \$(ibv_devinfo -d $ibdev | grep -E 'state|active_mtu' | xargs)\"
		echo \"        $uzdev \$(ip -br -4 addr show dev $uzdev | awk '{print \$3}'), \$(ethtool $uzdev | grep Speed | xargs)\""
done

step "An RDMA write between the nodes (perftest ib_write_bw, 64 KiB)" \
	"Node 1 writes into node 2's memory; node 2's CPU takes no part.  The" \
	"device segments, sends, acknowledges and completes it in QEMU."
"$uz" run 2 -- "(timeout 60 ib_write_bw -d $ibdev -x $gidx -n 200 > /dev/null 2>&1 &)
	for k in \$(seq 60); do ss -ltn | grep -q :18515 && exit 0; sleep 0.5; done; exit 1"
"$uz" run 1 -- "timeout 60 ib_write_bw -d $ibdev -x $gidx -n 200 10.77.0.2" |
	grep -E '^ *#bytes|^ *65536'

step "A conditional RDMA write (guest-lib/examples/crw-example.c)" \
	"Node 1 posts a write that names only a tag.  Its NIC holds it until node 2" \
	"offers a buffer for that tag; then the NIC writes the data on its own."
"$uz" run 2 -- "(timeout 60 crw-example -g $gidx > /tmp/crw.log 2>&1 &)
	for k in \$(seq 60); do ss -ltn | grep -q :18601 && exit 0; sleep 0.5; done; exit 1"
"$uz" run 1 -- "timeout 60 crw-example -g $gidx 10.77.0.2"
"$uz" run 2 -- 'sleep 1; cat /tmp/crw.log'

step "An MPI job with Open MPI's defaults (guest-lib/examples/mpi/pingpong.c)" \
	"./uzura mpirun builds the program with mpicc on every node and runs" \
	"'mpirun -np 2' on node 1, with no settings: the image's site configuration" \
	"sends Open MPI to UCX on the uzura NIC, one rank per node."
"$uz" mpirun -- "$top/guest-lib/examples/mpi/pingpong.c" 262144

step "The same job with node 1's NIC dropping 2 % of the frames it sends" \
	"./uzura fault sets fault injection at run time.  Every message still" \
	"arrives and every byte is checked; the go-back-N transport resends" \
	"what was lost, after an ACK timeout or a NAK, and the counters show it."
r0=$(counter 1 retransmits)
t0=$(counter 1 retry_timeouts)
"$uz" fault 1 fault-drop=0.02 fault-seed=7 | grep fault-drop
"$uz" mpirun -- /tmp/uzura-mpi/pingpong 16384
"$uz" fault 1 fault-drop=0 > /dev/null
echo "node 1 NIC: $(($(counter 1 retransmits) - r0)) packets retransmitted," \
     "$(($(counter 1 retry_timeouts) - t0)) retransmission timeouts during the job"

step "Where to go next" \
	"./uzura up -n 2; ./uzura ssh 1       a shell on a node (ibv_devinfo, perftest, mpirun)" \
	"./uzura mpirun -n 4 -- PROG.c        an MPI job across the running nodes" \
	"./uzura stats 1; ./uzura fault 1     the NIC's counters; fault injection" \
	"make check; make bench               the tests; uzura against rxe and TCP" \
	"docs/device-spec.md                  the NIC's design, to read and change"
echo
echo "==== shutting down"
