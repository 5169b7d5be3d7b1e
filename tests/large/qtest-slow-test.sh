#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The qtest cases registered only under glib's -m slow (g_test_slow()),
# against the sanitizer build, as make check runs the others: today the
# 2^24-message wrap of the WQE cache (harden), about a minute under ASan.
# Each case is found by comparing a qtest's -l listing with and without
# -m slow, so a new slow case needs no change here.  Speaks TAP.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
san=$top/build/qemu-san
log=$top/build/test-logs/qtest-slow
rm -rf "$log"
mkdir -p "$log"
. "$top/tests/sanitizers.sh"
export QTEST_QEMU_BINARY=$san/qemu-system-x86_64
export QTEST_QEMU_IMG=/bin/false
n=0
fails=0

for src in "$top"/qtest/*-test.c; do
	t=$san/tests/qtest/$(basename "$src" .c)
	[ -x "$t" ] || { echo "# no $t: run make first"; exit 1; }
	mapfile -t slow < <(comm -13 <("$t" -l | grep "^/" | sort) \
		<("$t" -l -m slow | grep "^/" | sort))
	for path in "${slow[@]}"; do
		n=$((n + 1))
		out=$log/$(basename "$t")-${path##*/}.log
		if "$t" -m slow -p "$path" > "$out" 2>&1 &&
			! san_reports "$out" > /dev/null; then
			echo "ok $n - $(basename "$t") $path (-m slow)"
		else
			sed 's/^/# /' "$out" | tail -n 20
			echo "not ok $n - $(basename "$t") $path (-m slow)"
			fails=$((fails + 1))
		fi
	done
done

echo "1..$n"
[ "$n" -gt 0 ] && [ "$fails" -eq 0 ]
