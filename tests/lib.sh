# SPDX-License-Identifier: GPL-2.0-or-later
#
# Sourced by the cluster suites (tests/*-test.sh): the TAP helper, and shell
# snippets that the guests expand (quote them so the host does not).

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
uz=$top/uzura
n=0
fails=0

# t DESC CMD...: run CMD and print its TAP line.
t() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		fails=$((fails + 1))
	fi
}

# On a node: the uzura netdev, the uzura ib_device, and the index of the
# RoCE v2 GID of the node's 10.77.0.N (N from its hostname, nodeN).
uzdev='$(for n in /sys/class/net/*; do d=$(readlink $n/device/driver) && [ "${d##*/}" = uzura ] && echo ${n##*/}; done)'
ibdev='$(for d in /sys/class/infiniband/*; do
	[ "$(basename "$(readlink $d/device/driver)")" = uzura ] && echo ${d##*/}; done | head -n 1)'
gidx='$(p=/sys/class/infiniband/'"$ibdev"'/ports/1
	want=0000:0000:0000:0000:0000:ffff:0a4d:$(printf %04x $(hostname | tr -dc 0-9))
	for g in $p/gids/*; do
		[ "$(cat $g)" = $want ] &&
		[ "$(cat $p/gid_attrs/types/${g##*/} 2>/dev/null)" = "RoCE v2" ] && echo ${g##*/}
	done | head -n 1)'

# serve NODE PORT NAME CMD: run CMD in the background on NODE, its output
# and then its exit status in /tmp/NAME.log and /tmp/NAME.rc, and wait
# up to a minute until something listens on PORT (TCP or UDP).
serve() {
	"$uz" run "$1" -- "rm -f /tmp/$3.rc
		( ( $4 ) > /tmp/$3.log 2>&1; echo \$? > /tmp/$3.rc ) < /dev/null > /dev/null 2>&1 &
		for k in \$(seq 120); do ss -ltun | grep -q ':$2 ' && exit 0; sleep 0.5; done
		echo 'server did not listen'; exit 1"
}

# served NODE NAME: wait for the server of serve to end, print its output,
# and exit with its status.
served() {
	"$uz" run "$1" -- "for k in \$(seq 60); do [ -s /tmp/$2.rc ] && break; sleep 0.5; done
		cat /tmp/$2.log; exit \$(cat /tmp/$2.rc 2>/dev/null || echo 1)"
}

# mpi_job NAME RANKS [--mpich] FILE ARGS...: run a program of
# tests/guest/mpi through './uzura mpirun' (log in $log/NAME-RANKS.log);
# its TAP lines become comments, and it must pass every check it printed
# (its exit status says so).
mpi_job() {
	local name=$1 np=$2 out=$log/$1-$2.log rc
	shift 2
	timeout 900 "$uz" mpirun -n "$np" "$@" > "$out" 2>&1
	rc=$?
	sed -n -e 's/^not ok/# &/p' -e '/^# /p' "$out" | head -n 20
	echo "# $name, $np ranks: $(grep -c '^ok ' "$out") checks passed," \
	     "$(grep -c '^not ok ' "$out") failed"
	[ "$rc" -eq 0 ] && grep -q '^ok ' "$out" && ! grep -q '^not ok ' "$out"
}
