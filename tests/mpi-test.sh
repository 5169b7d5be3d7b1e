#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# MPI as users run it: mpirun with no settings on the command line, the
# image's site configuration choosing UCX on the uzura NIC.  The programs
# of tests/guest/mpi check every byte they move (point-to-point 0 B..4 MiB,
# collectives, one-sided in every synchronisation mode); they are built
# in the guests with the guest's mpicc by './uzura mpirun'.  Then UCX's
# own ucx_perftest over each UCT transport the NIC offers, every test kind
# ucx_info says the transport supports; a rank killed mid-job; a job
# started while the link is down.  Speaks TAP.
#
# make check runs the core of it; with UZURA_TEST_FULL=1 (make check-large,
# tests/large/mpi-full-test.sh) it also runs more ranks per node, MPICH's
# collectives and every UCT test kind rather than one of each data path.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

src=$top/tests/guest/mpi
log=$top/build/test-logs/mpi
rm -rf "$log"
mkdir -p "$log"

# Sum of node $1's receive packet counters of the RC data path.
rc_rx() {
	"$uz" stats "$1" | awk '$1 ~ /^rx_pkts_(send|write|read_resp|read_req|atomic)$/ { s += $2 }
		END { print s + 0 }'
}

full=${UZURA_TEST_FULL:-0}

# large DESC CMD...: a test of the full suite only.
large() {
	[ "$full" = 1 ] && t "$@"
}

# The UCT test kinds make check runs: latency, each zero-copy data path
# and the atomics; the full suite runs every kind.
uct_core='^(am_lat short|am_bw zcopy|put_bw zcopy|get_bw zcopy|fadd short|cswap short)'

# A job with no settings moves its data through the uzura NIC.
on_rdma() {
	local before after
	before=$(rc_rx 2)
	mpi_job mpi-p2p 2 "$src/mpi-p2p.c" 1048576 || return 1
	after=$(rc_rx 2)
	echo "# node 2 received $((after - before)) RC packets during the job"
	[ $((after - before)) -gt 1000 ]
}

# uperf TL TEST LAYOUT [ARGS...]: ucx_perftest over one UCT transport of
# the uzura device, server on node 2, client on node 1.
port=14000
uperf() {
	local tl=$1 test=$2 layout=$3 ok=1
	shift 3
	port=$((port + 1))
	local args="-P 0 -p $port -d $ibdev:1 -x $tl"
	local name=$log/uct-$tl-$test-$layout
	serve 2 "$port" uperf "timeout 60 ucx_perftest $args" > "$name.server" 2>&1 || ok=0
	[ $ok = 1 ] && { "$uz" run 1 -- "timeout 60 ucx_perftest 10.77.0.2 $args \
		-t $test -D $layout -w 20 $*" > "$name.client" 2>&1 || ok=0; }
	served 2 uperf >> "$name.server" 2>&1 || ok=0
	grep -q '^Final:' "$name.client" || ok=0
	# Exit 0 and a result are not enough: UCX may have logged errors.
	! grep -Eq "$mpi_errors" "$name.client" "$name.server" || ok=0
	if [ $ok = 0 ]; then
		sed 's/^/# client: /' "$name.client" | tail -n 15
		sed 's/^/# server: /' "$name.server" | tail -n 15
		return 1
	fi
	sed 's/^Final: */# final: /p; d' "$name.client"
}

# The UCT tests a transport supports, from its capabilities in ucx_info -d:
# lines of "TEST LAYOUT ARGS".
uct_tests() {
	"$uz" run 1 -- "ucx_info -d" | awk -v tl="$1" '
		/Transport:/ { on = ($3 == tl) }
		on && /Device:/ { on = ($3 ~ /^uzura/) }
		on && /am_short:/   { print "am_lat short"; print "am_bw short" }
		on && /am_bcopy:/   { print "am_bw bcopy -s 1024" }
		on && /am_zcopy:/   { print "am_bw zcopy -s 2048" }
		on && /put_short:/  { print "put_lat short"; print "put_bw short" }
		on && /put_bcopy:/  { print "put_bw bcopy -s 4096" }
		on && /put_zcopy:/  { print "put_bw zcopy -s 65536 -n 200" }
		on && /get_bcopy:/  { print "get bcopy -s 4096" }
		on && /get_zcopy:/  { print "get_bw zcopy -s 65536 -n 200" }
		on && /atomic_add:.*64/  { print "add_lat short"; print "add_mr short" }
		on && /atomic_fadd:.*64/ { print "fadd short" }
		on && /atomic_swap:.*64/ { print "swap short" }
		on && /atomic_cswap:.*64/ { print "cswap short" }' | sort -u
}

# A rank killed mid-job: mpirun ends with an error rather than hanging,
# and the killed rank's node holds no verbs objects of the job.
kill_rank() {
	local base
	base=$("$uz" run 2 -- "rdma resource | grep $ibdev") || return 1
	"$uz" run 1 -- "rm -f /tmp/kill.rc; (timeout 300 mpirun -np 2 /tmp/uzura-mpi/mpi-p2p 4194304 \
		> /tmp/kill.log 2>&1; echo \$? > /tmp/kill.rc) < /dev/null > /dev/null 2>&1 &" ||
		return 1
	"$uz" run 2 -- 'for k in $(seq 120); do p=$(pgrep -f "^/tmp/uzura-mpi/mpi-p2p") && break; sleep 0.5; done
		[ -n "$p" ] && sleep 3 && kill -9 $p' || return 1
	"$uz" run 1 -- 'for k in $(seq 120); do [ -s /tmp/kill.rc ] && break; sleep 1; done
		echo "# mpirun exit status $(cat /tmp/kill.rc 2>/dev/null || echo none)"
		grep -m 3 -i "exited\|killed\|signal" /tmp/kill.log | sed "s/^/# /"
		[ -s /tmp/kill.rc ] && [ "$(cat /tmp/kill.rc)" != 0 ] && [ "$(cat /tmp/kill.rc)" != 124 ]' ||
		return 1
	"$uz" run 2 -- "for k in \$(seq 40); do [ \"\$(rdma resource | grep $ibdev)\" = '$base' ] && exit 0
		sleep 0.5; done; rdma resource | sed 's/^/# now: /'; echo '# before: $base'; exit 1"
}

# With node 2's link down, the front door refuses at once and a plain
# mpirun on node 1 fails with an error instead of hanging.
link_down() {
	local out rc
	"$uz" fault 2 link=off > /dev/null || return 1
	out=$("$uz" mpirun -- /tmp/uzura-mpi/mpi-p2p 1024 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# uzura mpirun: /'
	[ "$rc" -ne 0 ] && grep -q "node 2's link is off" <<< "$out" || return 1
	"$uz" run 1 -- 'timeout 240 mpirun -np 2 /tmp/uzura-mpi/mpi-p2p 1024 > /tmp/down.log 2>&1
		rc=$?; grep -av "^ok" /tmp/down.log | grep -a . | head -n 6 | sed "s/^/# mpirun: /"
		echo "# mpirun exit status $rc"; [ $rc -ne 0 ] && [ $rc -ne 124 ]'
}

# The front door's bad input: a rank count of 0, a C file that is not
# there, one that does not compile; each refused with its reason.
front_door_errors() {
	local bad out
	out=$("$uz" mpirun -n 0 -- /bin/true 2>&1) && return 1
	echo "# $out"
	grep -q -- "-n takes a number of ranks" <<< "$out" || return 1
	out=$("$uz" mpicc "$log/no-such-file.c" 2>&1) && return 1
	grep -q "usage:" <<< "$out" || return 1
	bad=$log/broken.c
	echo 'int main(void) { return undeclared; }' > "$bad"
	out=$("$uz" mpirun -- "$bad" 2>&1) && return 1
	echo "$out" | grep -m 1 "uzura:" | sed 's/^/# /'
	grep -q "uzura: mpicc failed on a node" <<< "$out"
}

link_up() {
	"$uz" fault 2 link=on > /dev/null && sleep 2 &&
		mpi_job mpi-p2p 2 "$src/mpi-p2p.c" 65536
}

"$uz" down
t "two nodes boot" boot -n 2
t "site configuration: a job with no settings runs its data over the uzura NIC" on_rdma
t "mpi-p2p, Open MPI defaults, 2 ranks on 2 nodes, 0 B..4 MiB" mpi_job mpi-p2p 2 "$src/mpi-p2p.c"
t "mpi-coll, Open MPI defaults, 2 ranks on 2 nodes, to 1 MiB" mpi_job mpi-coll 2 "$src/mpi-coll.c" 1048576
t "mpi-rma, Open MPI defaults, 2 ranks on 2 nodes (fence, PSCW, lock)" \
	mpi_job mpi-rma 2 "$src/mpi-rma.c"
large "mpi-p2p, 4 ranks on 2 nodes (shared memory and RDMA), to 1 MiB" \
	mpi_job mpi-p2p 4 "$src/mpi-p2p.c" 1048576
large "mpi-coll, 3 ranks on 2 nodes" mpi_job mpi-coll 3 "$src/mpi-coll.c" 262144
# Not mpi-rma with 4 ranks on 2 nodes: 1 run in 3 UCX 1.18 aborts in
# MPI_Win_unlock (ucp_ep_flush_internal: Assertion `cfg_index !=
# UCP_WORKER_CFG_INDEX_NULL'), an assertion of UCX's own (docs/mpi.md).

# MPICH (Debian's is built on UCX, ch4:ucx) with its defaults: hydra
# takes the site's host file, UCX the site's device.
t "mpi-p2p, MPICH defaults, 2 ranks on 2 nodes, 0 B..4 MiB" \
	mpi_job mpi-p2p-mpich 2 --mpich "$src/mpi-p2p.c"
large "mpi-coll, MPICH defaults, 2 ranks on 2 nodes, to 1 MiB" \
	mpi_job mpi-coll-mpich 2 --mpich "$src/mpi-coll.c" 1048576
t "mpi-rma, MPICH defaults, 2 ranks on 2 nodes (fence, PSCW, lock)" \
	mpi_job mpi-rma-mpich 2 --mpich "$src/mpi-rma.c"
large "mpi-p2p, MPICH, 4 ranks on 2 nodes, to 1 MiB" \
	mpi_job mpi-p2p-mpich 4 --mpich "$src/mpi-p2p.c" 1048576

for tl in rc_verbs ud_verbs; do
	mapfile -t tests < <(uct_tests "$tl")
	t "ucx_info -d lists $tl on the uzura device, with ${#tests[@]} test kinds" \
		[ "${#tests[@]}" -gt 0 ]
	for line in "${tests[@]}"; do
		[ "$full" = 1 ] || [[ $line =~ $uct_core ]] || continue
		read -r test layout args <<< "$line"
		t "ucx_perftest $tl $test $layout${args:+ $args}" \
			uperf "$tl" "$test" "$layout" -n 500 ${args:-}
	done
done
# UCP, UCX's protocol layer, with its defaults: wire-up and lanes chosen
# by UCX on the site's devices.
ucp() {
	local test=$1 size=$2 out
	port=$((port + 1))
	serve 2 "$port" ucp "timeout 60 ucx_perftest -P 0 -p $port" || return 1
	out=$("$uz" run 1 -- "timeout 60 ucx_perftest 10.77.0.2 -P 0 -p $port \
		-t $test -s $size -n 50 -w 5" 2>&1)
	grep -E '^Final:|ERROR|Fatal' <<< "$out" | sed 's/^/# /'
	grep -q '^Final:' <<< "$out" && ! grep -Eq "$mpi_errors" <<< "$out"
}

t "ucx_perftest UCP tag_lat 8 B with UCX's defaults" ucp tag_lat 8
t "ucx_perftest UCP tag_bw 1 MiB with UCX's defaults" ucp tag_bw 1048576
t "ucx_perftest UCP put_bw 1 MiB with UCX's defaults" ucp ucp_put_bw 1048576
t "ucx_perftest UCP get 64 KiB with UCX's defaults" ucp ucp_get 65536

# libfabric's own tools on its verbs provider over the uzura device, with
# data checks (-c), server on node 2: FI_EP_MSG (RC through the RDMA CM),
# FI_EP_DGRAM (UD) and FI_EP_RDM (rxm over verbs, the endpoint MPICH's
# and Open MPI's OFI components use; rxm sizes its CQ by the universe,
# 256 by default, which asks for more than 131072 CQEs).
fabric() {
	local ep=$1 dom=$2 prov=${3:-verbs} out
	port=$((port + 1))
	serve 2 "$port" "fi-$ep" \
		"timeout 60 fi_pingpong -p '$prov' -e $ep -d $dom -B $port -c -I 50" || return 1
	out=$("$uz" run 1 -- "timeout 60 fi_pingpong -p '$prov' -e $ep -d $dom -P $port -c -I 50 \
		10.77.0.2" 2>&1)
	echo "$out" | sed -n 's/^/# /; 2p; $p'
	# A result row for every size, the largest included.
	grep -Eq '^[0-9.]+[km]? +50 +=50 ' <<< "$out" &&
		! grep -qi error <<< "$out"
}

fabric_info() {
	"$uz" run 1 -- "d=$ibdev; fi_info -p verbs | grep -q \"domain: \$d\$\""
}

t "fi_info lists the uzura device under libfabric's verbs provider" fabric_info
t "fi_pingpong FI_EP_MSG on verbs (RC over the RDMA CM), every size" \
	fabric msg "$ibdev"
t "fi_pingpong FI_EP_DGRAM on verbs (UD), every size" \
	fabric dgram "$ibdev-dgram"
t "fi_pingpong FI_EP_RDM on verbs;ofi_rxm with its default universe, every size" \
	fabric rdm "$ibdev" "verbs;ofi_rxm"

t "uzura mpirun and mpicc refuse bad input with the reason" front_door_errors
t "a rank killed with SIGKILL: mpirun fails, no verbs objects left on its node" kill_rank
t "a job with node 2's link down fails with an error, not a hang" link_down
t "the same job runs once the link is back" link_up

"$uz" down
echo "1..$n"
[ "$fails" -eq 0 ]
