#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# lint.sh: the style checks a maintainer runs first, as TAP (make lint,
# and a suite of make check).
#
# - QEMU's scripts/checkpatch.pl on the device, its qtests and fuzz
#   targets and the shm netdev, by their paths in the QEMU tree the build
#   overlays (build/qemu-src), so that QEMU's rules for tests/ apply to
#   the qtests; and on each patch of scripts/qemu-patches.
# - The kernel's scripts/checkpatch.pl (of the guest kernel's 6.12 source,
#   Debian's linux-source-6.12, from which only checkpatch and its data
#   are kept) on the driver, its uapi header and the hardware interface
#   headers.
#
# Any error or warning fails the check it belongs to; what checkpatch
# said comes first, as TAP comments.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
qsrc=$top/build/qemu-src
cache=${UZURA_CACHE:-$HOME/.cache/uzura}
n=0 failed=0

# check NAME CMD...: one TAP result; checkpatch's findings as comments.
check() {
	local name=$1 out
	shift
	n=$((n + 1))
	out=$("$@" 2>&1 | grep -E '^[^ ]+:[0-9]+: (ERROR|WARNING|CHECK):' || true)
	if [ -z "$out" ]; then
		echo "ok $n - $name"
	else
		printf '%s\n' "$out" | sed 's/^/# /'
		echo "not ok $n - $name: $(printf '%s\n' "$out" | wc -l) findings"
		failed=$((failed + 1))
	fi
}

# The kernel's checkpatch.pl, kept in the download cache.
kernel_checkpatch() {
	local dir=$cache/linux-checkpatch/6.12 deb tmp
	if [ ! -x "$dir/scripts/checkpatch.pl" ]; then
		tmp=$(mktemp -d)
		(cd "$tmp" && apt-get download -qq linux-source-6.12 >/dev/null 2>&1) || {
			rm -rf "$tmp"
			echo "lint: cannot download linux-source-6.12 (apt-get update?)" >&2
			return 1
		}
		deb=$(ls "$tmp"/linux-source-6.12_*.deb)
		mkdir -p "$dir"
		dpkg-deb --fsys-tarfile "$deb" |
			tar -xO --wildcards './usr/src/linux-source-6.12.tar.*' |
			tar -xJ -C "$dir" --strip-components=1 \
				linux-source-6.12/scripts/checkpatch.pl \
				linux-source-6.12/scripts/spelling.txt \
				linux-source-6.12/scripts/const_structs.checkpatch
		rm -rf "$tmp"
	fi
	echo "$dir/scripts/checkpatch.pl"
}

[ -x "$qsrc/scripts/checkpatch.pl" ] || {
	echo "Bail out! no QEMU tree at build/qemu-src (make sources)"
	exit 1
}
kcp=$(kernel_checkpatch) || { echo "Bail out! no kernel checkpatch.pl"; exit 1; }

echo "TAP version 13"
echo "1..6"

# QEMU: -f on the files as they appear in the QEMU tree (symbolic links
# into this repository), --terse for one line per finding.
qcp() { (cd "$qsrc" && scripts/checkpatch.pl --no-signoff --terse -f "$@"); }
check "QEMU checkpatch: the device (hw/rdma/uzura)" \
	qcp $(cd "$qsrc" && ls hw/rdma/uzura/*.[ch] hw/rdma/uzura/*/*.[ch])
check "QEMU checkpatch: the qtests (tests/qtest/uzura*, libqos/uzura*)" \
	qcp $(cd "$qsrc" && ls tests/qtest/uzura*.[ch] tests/qtest/libqos/uzura*.[ch])
check "QEMU checkpatch: the fuzz targets (tests/qtest/fuzz/uzura*)" \
	qcp $(cd "$qsrc" && ls tests/qtest/fuzz/uzura*.[ch])
check "QEMU checkpatch: the shm netdev (net/shm*)" \
	qcp $(cd "$qsrc" && ls net/shm*.[ch])
check "QEMU checkpatch: the QEMU patches (scripts/qemu-patches)" \
	"$qsrc/scripts/checkpatch.pl" --no-signoff --terse \
	"$top"/scripts/qemu-patches/*.patch

# The kernel: the driver, its uapi header, the hardware interface (the
# files git tracks: kbuild leaves generated C beside them).
check "kernel checkpatch: the driver (guest-driver)" \
	"$kcp" --no-tree --terse --show-types -f \
	$(git -C "$top" ls-files --full-name -- 'guest-driver/*.[ch]' |
	  sed "s|^|$top/|")

[ "$failed" -eq 0 ]
