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
# - The uzuradv man pages (guest-lib/uzura/man): every global symbol of
#   libuzura.map has a section 3 page, its own or an alias
#   (rdma_alias_man_pages), whose NAME names it; every page is listed in
#   man/CMakeLists.txt; pandoc makes each into a man page without a
#   warning, and groff (with tbl) formats that without one.
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

# The man pages: findings as "FILE:LINE: ERROR: ...", the form check()
# picks up.
man_pages() {
	local dir=guest-lib/uzura/man map=guest-lib/uzura/libuzura.map
	local cml=$dir/CMakeLists.txt sym page f md tmp err names
	local -A listed=() alias=()
	cd "$top"
	for f in $(sed -n '/^rdma_man_pages(/,/)/{/^rdma_man_pages(/d;/)/d;p}' "$cml"); do
		listed[$f]=1
		[ -f "$dir/$f" ] || echo "$cml:1: ERROR: $f is listed but missing"
	done
	for f in "$dir"/*.md; do
		[ -n "${listed[${f##*/}]:-}" ] ||
			echo "$f:1: ERROR: not listed in rdma_man_pages() of $cml"
	done
	# rdma_alias_man_pages(PAGE ALIAS ...): the alias is a link to PAGE.
	set -- $(sed -n '/^rdma_alias_man_pages(/,/)/{/^rdma_alias_man_pages(/d;/)/d;p}' "$cml")
	while [ $# -ge 2 ]; do
		alias[$2]=$1
		shift 2
	done
	# The names of a page: its NAME section's line, before " - ".
	names() {
		awk '/^# NAME/ { n = 1; next } n && NF { sub(/ - .*/, ""); print; exit }' "$1" |
			tr ',' ' '
	}
	for sym in $(awk '/global:/ { g = 1; next } /local:/ { g = 0 }
			  g && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ { sub(/;.*/, ""); print $1 }' "$map"); do
		page=$sym.3
		[ -f "$dir/$page.md" ] || page=${alias[$sym.3]:-}
		if [ -z "$page" ] || [ ! -f "$dir/$page.md" ]; then
			echo "$map:1: ERROR: $sym has no man page ($dir/$sym.3.md or an alias)"
		elif ! names "$dir/$page.md" | grep -qw -- "$sym"; then
			echo "$dir/$page.md:1: ERROR: NAME does not name $sym"
		fi
	done
	command -v pandoc > /dev/null || { echo "$dir:1: ERROR: no pandoc"; return; }
	command -v groff > /dev/null || { echo "$dir:1: ERROR: no groff"; return; }
	tmp=$(mktemp)
	for md in "$dir"/*.md; do
		if ! err=$(pandoc -s -t man "$md" -o "$tmp" 2>&1) || [ -n "$err" ]; then
			echo "$md:1: WARNING: pandoc: $(printf '%s' "$err" | tr '\n' ' ')"
		elif err=$(groff -t -man -Tutf8 -ww -z "$tmp" 2>&1 || echo "exit $?") &&
		     [ -n "$err" ]; then
			echo "$md:1: WARNING: groff: $(printf '%s' "$err" | tr '\n' ' ')"
		fi
	done
	rm -f "$tmp"
}

[ -x "$qsrc/scripts/checkpatch.pl" ] || {
	echo "Bail out! no QEMU tree at build/qemu-src (make sources)"
	exit 1
}
kcp=$(kernel_checkpatch) || { echo "Bail out! no kernel checkpatch.pl"; exit 1; }

echo "TAP version 13"
echo "1..7"

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

# The man pages of the uzuradv direct verbs.
check "man pages: uzuradv (guest-lib/uzura/man)" man_pages

[ "$failed" -eq 0 ]
