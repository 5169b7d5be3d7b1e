#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Live migration of booted nodes (./uzura migrate, docs/usage.md "Moving
# a node"; the device's side is docs/device-spec.md 7.4).  Two nodes on
# the shm link run RDMA traffic with unmodified tools, started on the
# nodes themselves (an ssh session into a node ends when its QEMU does):
# ib_write_bw for a fixed time, node 1 to node 2, with a QP timeout of
# 268 ms (-u 16; its default, 67 ms times 7 retries, lost the connection
# in about 1 run of 3 on a busy 2-core TCG host, whose VMs the copy
# stalls for longer: docs/usage.md, "Moving a node"), and rping with every
# ping's data checked (-V), node 1 to node 2 over the RDMA CM.  Meanwhile
# node 2 moves to a new QEMU twice and node 1 once.  Then an MPI job with
# Open MPI's defaults (UCX over the NIC), mpi-p2p checking every byte it
# receives, runs from node 1 while node 2 moves twice more.  Last, node 1
# writes an NVMe-over-RDMA namespace of node 2 with fio, checking every
# block it wrote (verify=crc32c), while ib_read_bw runs beside it and
# node 2 moves twice again (the stream link's moves are in
# tests/perftest-test.sh, whose cluster is on it).  Every tool
# must end with status 0 and its result, with no error line; each guest's
# kernel and each QEMU's device log must have nothing to say about it.
# Speaks TAP.  UZURA_BUILD picks the build (and cluster) dir.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

log=${UZURA_BUILD:-$top/build}/test-logs/migrate
mkdir -p "$log"
cluster=${UZURA_BUILD:-$top/build}/cluster

# A perftest result row: #bytes, #iterations, then at least two figures.
row='^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+'

"$uz" down
# The traces say, should a tool fail, when each NIC's state came in and
# its link went down and up again, and when a QP's ACK timer fired.
t "two nodes boot" boot -n 2 --trace uzura_migration_loaded \
	--trace uzura_regs_link --trace uzura_req_timeout

# A migration the device refuses (a link flap in progress is state it
# cannot carry yet) says why, and the node runs on in its QEMU.
"$uz" fault 2 flap=600000 > /dev/null
t "a refused migration fails with the device's reason" \
	says "$uz" migrate 2 -- "a link flap is in progress"
"$uz" fault 2 flap=off > /dev/null
t "node 2 runs on in its QEMU after it, its port active again" \
	"$uz" run 2 -- 'for k in $(seq 40); do
		rdma link show | grep -q "state ACTIVE" && exit 0; sleep 0.5; done; exit 1'

t "ib_write_bw server starts on node 2" \
	serve 2 18515 wbw-server "timeout 150 ib_write_bw -d $ibdev -x $gidx -p 18515 -D 36 -u 16"
t "rping server starts on node 2" \
	serve_cm 2 rping-server "timeout 150 rping -s -a 10.77.0.2 -V -C 8000 -S 4096"
t "ib_write_bw client starts on node 1" \
	start 1 wbw-client "timeout 150 ib_write_bw -d $ibdev -x $gidx -p 18515 -D 36 -u 16 10.77.0.2"
t "rping client starts on node 1" \
	start 1 rping-client "timeout 150 rping -c -a 10.77.0.2 -V -C 8000 -S 4096"

sleep 8
t "node 2 migrates under traffic" migrated 2
sleep 5
t "node 2 migrates again" migrated 2
sleep 5
t "node 1 migrates" migrated 1

for s in wbw-server wbw-client rping-server rping-client; do
	node=2
	[[ $s == *client ]] && node=1
	t "$s on node $node exits 0" finished $node $s
done
t "ib_write_bw: the client prints its result row" grep -Eq "$row" "$log/wbw-client.log"
t "ib_write_bw: the server prints its result row" grep -Eq "$row" "$log/wbw-server.log"
t "rping: no data mismatch and no error line" \
	bash -c "! grep -Eiq 'mismatch|error|fail' '$log'/rping-*.log"
# MPI: the job runs through an ssh session into node 1, which stays.
t "mpi-p2p builds on both nodes" "$uz" mpicc "$top/tests/guest/mpi/mpi-p2p.c"
(mpi_job mpi-p2p 2 /tmp/uzura-mpi/mpi-p2p > "$log/mpi-job.tap" 2>&1
	echo $? > "$log/mpi-job.rc") &
sleep 8
t "node 2 migrates under an MPI job" migrated 2
sleep 4
t "node 2 migrates again under it" migrated 2
wait
cat "$log/mpi-job.tap"
t "mpi-p2p, Open MPI defaults: every check passed, no UCX or MPI error line" \
	[ "$(cat "$log/mpi-job.rc")" = 0 ]

# NVMe over RDMA: node 1's fio writes the namespace node 2 exports and
# reads every block back against its CRC32C (as it goes: verify_backlog)
# for 24 s, while ib_read_bw runs beside it and node 2, the target, moves
# twice.
t "nvmet-rdma on node 2 exports a RAM disk" nvmet_up
t "node 1: nvme connect -t rdma finds the namespace" nvme_connect
t "ib_read_bw server starts on node 2" \
	serve 2 18516 rbw-server "timeout 150 ib_read_bw -d $ibdev -x $gidx -p 18516 -D 24 -u 16"
t "ib_read_bw client starts on node 1" \
	start 1 rbw-client "timeout 150 ib_read_bw -d $ibdev -x $gidx -p 18516 -D 24 -u 16 10.77.0.2"
t "fio with verify=crc32c starts on node 1" \
	start 1 fio "d=$nsdev; timeout 150 fio --name=migrate --filename=\$d \
		--direct=1 --ioengine=libaio --rw=randwrite --bs=16k --iodepth=8 \
		--size=32M --time_based --runtime=24 --verify=crc32c \
		--verify_backlog=64 --verify_fatal=1"
sleep 6
t "node 2 migrates under NVMe I/O and RDMA READs" migrated 2
sleep 4
t "node 2 migrates again under them" migrated 2
t "fio on node 1 exits 0" finished 1 fio
t "fio: no I/O or verify error, and it verified what it wrote" bash -c "
	grep -E 'err=|verify|IOPS' '$log/fio.log' | sed 's/^/# /'
	grep -q 'err= 0' '$log/fio.log' && grep -q ' read: IOPS=' '$log/fio.log' &&
		! grep -Eiq 'verify.*(fail|bad)|crc32c.*(fail|bad)' '$log/fio.log'"
for s in rbw-server rbw-client; do
	node=2
	[[ $s == *client ]] && node=1
	t "$s on node $node exits 0" finished $node $s
done
t "ib_read_bw: the client prints its result row" grep -Eq "$row" "$log/rbw-client.log"
t "node 1: nvme disconnect" on 1 "nvme disconnect -n $nqn | grep -q 'disconnected 1'"

for i in 1 2; do
	t "node $i: no kernel warning or uzura error" kernel_quiet "$i"
done
# With --trace, each QEMU's log is trace.log: what is not a trace line
# there is a device error or QEMU's last words, but for the refusal the
# suite asked for.
t "no QEMU logged a device error or died (every generation's log)" bash -c "
	! cat '$cluster'/node*/trace.log* '$cluster'/node*/guest-errors.log* \
		2>/dev/null | grep -Ev '^[0-9]+@[0-9.]+:uzura_|^\$' |
		grep -v 'uzura: a link flap is in progress' |
		sed 's/^/# /' | grep ."

t "node 2 moved six times, node 1 once" bash -c "
	[ \"\$(cat '$cluster/node2/migrations')\" = 6 ] &&
	[ \"\$(cat '$cluster/node1/migrations')\" = 1 ]"
"$uz" stats 1 | grep -E '^(retransmits|retry_timeouts|roce_tx_dropped) ' |
	sed 's/^/# node 1 after the moves: /'
if [ "$fails" -gt 0 ]; then
	for i in 1 2; do
		cat "$cluster/node$i"/trace.log* | sort -t@ -k2 | grep -v '^$' |
			tail -n 40 | sed "s/^/# node $i trace: /"
	done
fi

"$uz" down
t "down leaves no cluster state" [ ! -e "$cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
