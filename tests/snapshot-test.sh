#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cluster snapshots (./uzura snapshot save, up --from; docs/usage.md,
# "Saving a cluster").  Two nodes run rping with every ping's data checked
# (-V) when the cluster is saved; the cluster runs on, and what it does
# after the save is not in the snapshot.  Then it is taken down and
# resumed: the files written before the save are there and those written
# after are not, the guests' uptime goes on from where it was, their
# clocks are the host's, rping finishes every ping over the RC connection
# it had (frames on the link at the save are lost, and RC resends them),
# and new RDMA connections work; node 1's fault rule came with it, with
# its counts.  A save the device refuses (a link flap in progress) says
# why and leaves the cluster running; a snapshot of another
# build, and one that does not exist, are refused and start nothing.
# Speaks TAP.  UZURA_BUILD picks the build (and cluster) dir.
set -uo pipefail

. "$(dirname "$0")/lib.sh"

b=${UZURA_BUILD:-$top/build}
log=$b/test-logs/snapshot
mkdir -p "$log"
cluster=$b/cluster
snap=${UZURA_SNAPSHOTS:-$b/snapshots}/snapshot-test
qemu_procs() { pgrep -f "$b/qemu/qemu-system-x86_64" | wc -l; }

# uptime_of NODE: the guest's uptime in whole seconds.
uptime_of() { "$uz" run "$1" -- 'cut -d. -f1 /proc/uptime'; }

"$uz" down
rm -rf "$snap"
t "two nodes boot" boot -n 2

t "rping server starts on node 2" \
	serve_cm 2 rping-server "timeout 240 rping -s -a 10.77.0.2 -V -C 3000 -S 4096"
t "rping client starts on node 1" \
	start 1 rping-client "timeout 240 rping -c -a 10.77.0.2 -V -C 3000 -S 4096"
sleep 4
t "node 1 gets a fault rule that counts the ACKs it receives" \
	"$uz" fault 1 rule 'dir=rx kind=ack nth=1000000000 drop'
t "a file written before the save" \
	"$uz" run 2 -- 'head -c 64 /dev/urandom | base64 > /root/before && sync'
before=$("$uz" run 2 -- 'cat /root/before')
up_saved=$(uptime_of 2)

t "rping still runs when the save begins" \
	"$uz" run 1 -- '[ ! -e /tmp/rping-client.rc ] && pgrep -x rping'
t "snapshot save under RDMA traffic" bash -c "
	'$uz' snapshot save snapshot-test > '$log/save.log' 2>&1; rc=\$?
	sed 's/^/# /' '$log/save.log'
	[ \$rc -eq 0 ] && grep -q '^uzura: saved 2 nodes as snapshot-test' '$log/save.log'"
saved_at=$(date +%s)
t "the snapshot holds each node's state, disk and console" bash -c "
	for i in 1 2; do
		[ -s '$snap'/node\$i.state ] && [ -s '$snap'/node\$i.qcow2 ] &&
			[ -s '$snap'/node\$i-console.log ] || exit 1
	done"
t "snapshot list shows it, resumable on this build" \
	bash -c "'$uz' snapshot list | grep -E '^snapshot-test .* 2 nodes, shm link, up -n 2 .*\(this build\)$'"
t "the cluster runs on after the save: ping over uzura" \
	"$uz" run 1 -- 'ping -c 2 -W 5 10.77.0.2'
t "a file written after the save" "$uz" run 2 -- 'echo after > /root/after && sync'

# A link flap in progress is state the device cannot carry yet: the save
# is refused, by name, and both nodes run on.
"$uz" fault 1 flap=600000 > /dev/null
t "a save the device refuses fails, naming the link flap" \
	says "$uz" snapshot save refused -- "a link flap is in progress"
t "nothing is left of the refused snapshot" \
	bash -c "[ ! -e '${snap%/*}/refused' ] && [ ! -e '${snap%/*}/.refused.new' ]"
"$uz" fault 1 flap=off > /dev/null
t "both nodes run on after the refused save" bash -c "
	for i in 1 2; do
		python3 '$top/scripts/uzura_qmp.py' '$cluster'/node\$i/qmp.sock \
			raw query-status | grep -q '\"status\": \"running\"' || exit 1
		'$uz' run \$i -- true || exit 1
	done"

"$uz" down
t "down: no QEMU left" [ "$(qemu_procs)" -eq 0 ]
# The guests' clocks stand still from the save: at least 10 s behind
# the host's, unless up --from sets them (checked to 5 s below).
while [ $(($(date +%s) - saved_at)) -lt 10 ]; do sleep 1; done
t "up --from resumes the saved cluster" bash -c "
	'$uz' up --from snapshot-test > '$log/resume.log' 2>&1; rc=\$?
	sed 's/^/# /' '$log/resume.log'
	[ \$rc -eq 0 ] && grep -q 'resuming snapshot-test: nodes 1-2 of 2 on the shm link' '$log/resume.log'"
t "the file written before the save is there, the same" \
	bash -c "[ \"\$('$uz' run 2 -- 'cat /root/before')\" = '$before' ]"
t "the file written after the save is not" "$uz" run 2 -- '[ ! -e /root/after ]'
t "node 2's uptime goes on from the save" \
	bash -c "[ \"\$('$uz' run 2 -- 'cut -d. -f1 /proc/uptime')\" -ge $up_saved ]"
t "the guests' clocks are the host's again" bash -c "
	for i in 1 2; do
		d=\$(( \$('$uz' run \$i -- 'date +%s') - \$(date +%s) ))
		echo \"# node \$i: clock \$d s from the host's\"
		[ \${d#-} -le 5 ] || exit 1
	done"
t "node 1's fault rule came with it, with the ACKs it counted" bash -c "
	'$uz' fault 1 > '$log/fault.txt' && sed 's/^/# /' '$log/fault.txt' &&
	grep -q 'dir=rx kind=ack nth=1000000000 .*drop' '$log/fault.txt' &&
	grep -Eq '# matched [1-9][0-9]*, acted 0' '$log/fault.txt'"
"$uz" fault 1 rules clear > /dev/null
t "rping client on node 1 exits 0" finished 1 rping-client
t "rping server on node 2 exits 0" finished 2 rping-server
t "rping: no data mismatch and no error line (its exit status says all 3000 pings came)" bash -c "
	! grep -Eiq 'mismatch|error|fail' '$log'/rping-*.log"
t "a new RC connection after the resume (ibv_rc_pingpong, 100 iterations)" bash -c "
	'$uz' run 2 -- '(timeout 120 ibv_rc_pingpong -d uzura0 -g $gidx -n 100 > /tmp/pp.log 2>&1 &)
		for k in \$(seq 40); do ss -ltn | grep -q :18515 && exit 0; sleep 0.5; done; exit 1' &&
	'$uz' run 1 -- 'timeout 120 ibv_rc_pingpong -d uzura0 -g $gidx -n 100 10.77.0.2'"
t "a resumed node moves to a new QEMU (./uzura migrate 2) and runs on there" \
	bash -c "set -o pipefail; '$uz' migrate 2 | sed 's/^/# /' && '$uz' run 2 -- true &&
		python3 '$top/scripts/uzura_qmp.py' '$cluster/node2/qmp.sock' \
			raw query-status | grep -q '\"status\": \"running\"'"
t "a second up is refused while the resumed cluster runs" \
	says "$uz" up --from snapshot-test -- "already running"
for i in 1 2; do
	t "node $i: no kernel warning or uzura error" kernel_quiet "$i"
done
t "no QEMU logged a device error or died" bash -c "
	! cat '$cluster'/node*/guest-errors.log 2>/dev/null | grep . |
		sed 's/^/# /' | grep ."
"$uz" down

# Another build: the snapshot records what it was made from.
echo 0123456789abcdef > "$snap/build"
t "up --from a snapshot of another build is refused" \
	says "$uz" up --from snapshot-test -- "was made on another build"
t "the refused resume started nothing" \
	bash -c "[ '$(qemu_procs)' = 0 ] && [ ! -e '$cluster' ]"
t "snapshot list says it cannot resume" \
	bash -c "'$uz' snapshot list | grep -E '^snapshot-test .*\(another build: cannot resume\)$'"
t "up --from a snapshot that does not exist is refused" \
	says "$uz" up --from no-such-snapshot -- "no snapshot no-such-snapshot"
t "up --from takes no other option" \
	says "$uz" up --from snapshot-test -n 3 -- "takes no other option"
t "snapshot rm deletes it" \
	bash -c "'$uz' snapshot rm snapshot-test && [ ! -e '$snap' ]"

echo "1..$n"
[ "$fails" -eq 0 ]
