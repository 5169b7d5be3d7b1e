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
