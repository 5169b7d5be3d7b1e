#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# CRW test: Conditional RDMA Write through the uzuradv direct verbs between
# two nodes.  Boots two nodes, runs tests/guest/crw-test as the target on
# node 2 and as the data source on node 1 (both arrival orders, sizes 0 to
# 1 MiB, tags matched out of order, SQ slot accounting, argument errors,
# a duplicate tag), relays its TAP lines into this stream, checks that the
# NIC's crw_* hw counters moved (when the driver exports them), runs the
# uzuradv example guest-lib/examples/crw-example once, and downs the
# cluster.  Speaks TAP.  UZURA_BUILD picks the build (and cluster) dir.
set -uo pipefail

. "$(dirname "$0")/lib.sh"


skip() {
	n=$((n + 1))
	echo "ok $n # SKIP $1"
}

# relay CMD...: run a TAP-speaking command; its ok/not ok lines join this
# stream under our numbering, the rest become comments.  Returns its status.
relay() {
	local out rc line re='^(not )?ok [0-9]+ ?(.*)$'

	out=$("$@" 2>&1)
	rc=$?
	while IFS= read -r line; do
		if [[ $line =~ $re ]]; then
			n=$((n + 1))
			if [ -n "${BASH_REMATCH[1]}" ]; then
				fails=$((fails + 1))
				echo "not ok $n ${BASH_REMATCH[2]}"
			else
				echo "ok $n ${BASH_REMATCH[2]}"
			fi
		elif [ -n "$line" ]; then
			echo "# $line"
		fi
	done <<< "$out"
	return "$rc"
}

counters=/sys/class/infiniband/uzura0/ports/1/hw_counters

crw_parked() {
	"$uz" run 1 -- "echo \$((\$(cat $counters/crw_parked) + \$(cat $counters/crw_matched_stcrw_first)))"
}

"$uz" down
t "two nodes boot" boot -n 2
t "node 1 and 2: libuzura.so.1 and the plugin link are installed" bash -c "
	'$uz' run 1 -- 'ls /usr/lib/*/libuzura.so.1 && [ -L /usr/lib/*/libibverbs/libuzura-rdmav34.so ]' >/dev/null &&
	'$uz' run 2 -- 'ls /usr/lib/*/libuzura.so.1' >/dev/null"

have_counters=0
"$uz" run 1 -- "[ -r $counters/crw_parked ]" && have_counters=1
before=$([ $have_counters = 1 ] && crw_parked)

t "crw-test server starts on node 2" serve 2 18600 srv "timeout 300 crw-test -g $gidx"
relay "$uz" run 1 -- "timeout 300 crw-test -g $gidx 10.77.0.2"
rc=$?
t "crw-test client (node 1) exits 0" [ "$rc" -eq 0 ]
t "crw-test server (node 2) exits 0" served 2 srv

if [ $have_counters = 1 ]; then
	after=$(crw_parked)
	t "sysfs hw_counters: crw_parked + crw_matched_stcrw_first grew ($before -> $after)" \
		[ "${after:-0}" -gt "${before:-0}" ]
else
	skip "the driver exports no crw_* hw counters ($counters)"
fi

t "crw-example target starts on node 2" serve 2 18601 srv "timeout 120 crw-example -g $gidx"
t "crw-example: the source's CRW completes" bash -c "
	'$uz' run 1 -- 'timeout 120 crw-example -g $gidx 10.77.0.2' |
		grep -q '^source: CRW completed, 64 bytes written$'"
t "crw-example: the target sees the data with the tag as imm" bash -c "
	'$uz' run 2 -- 'for k in \$(seq 60); do [ -s /tmp/srv.rc ] && break; sleep 0.5; done; cat /tmp/srv.log' |
		grep -q '^target: write of 64 bytes, tag 0xc0ffee: \"hello through a conditional write\"$'"

"$uz" down
t "down leaves no cluster state" [ ! -e "${UZURA_BUILD:-$top/build}/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
