#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The patch series of scripts/export-series.sh apply, with git am, to a
# clean QEMU tree, one series after another, and give the device, its
# headers and its qtests exactly as they are here.  No QEMU is built.
# QEMU's checkpatch findings per patch are printed as comments; make
# lint holds the code to them.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }

echo "TAP version 13"
if "$top/scripts/export-series.sh" "$tmp/out" > "$tmp/export.log" 2>&1; then
	ok "export-series.sh writes the series"
else
	sed 's/^/# /' "$tmp/export.log"
	not_ok "export-series.sh writes the series"
	echo "1..$n"
	exit 1
fi

q=$tmp/qemu
"$top/scripts/fetch-source.sh" qemu trixie 10.0. "$q" > /dev/null
git -C "$q" init -q
git -C "$q" config user.name test && git -C "$q" config user.email test@localhost
printf '.uzura-*\n' >> "$q/.git/info/exclude"
git -C "$q" add -A && git -C "$q" commit -q -m base

for s in 1-core 2-device 3-qtests; do
	patches=$(ls "$tmp/out/$s"/0*.patch | grep -v /0000-cover-letter)
	for p in $patches; do
		printf '# %s: %s\n' "${p##*/}" "$("$top/build/qemu-src/scripts/checkpatch.pl" \
			-q --terse "$p" 2>&1 | tail -n 1)"
	done
	if git -C "$q" am -q $patches > "$tmp/am.log" 2>&1; then
		ok "series $s: $(echo "$patches" | wc -l) patches apply with git am"
	else
		sed 's/^/# /' "$tmp/am.log"
		not_ok "series $s applies with git am"
		echo "1..$n"
		exit 1
	fi
done

# The imported headers are alone in their patch, as QEMU's checkpatch
# wants; the device's first patch is that one.
hp=$(ls "$tmp/out/2-device"/0001-*.patch)
files=$(sed -n 's|^+++ b/||p' "$hp" | sort -u)
if [ -n "$files" ] && ! echo "$files" | grep -qv '^include/standard-headers/'; then
	ok "the headers patch touches only include/standard-headers"
else
	not_ok "the headers patch touches only include/standard-headers: $files"
fi

same() {
	if diff -r "$1" "$2" > "$tmp/diff" 2>&1; then
		ok "$3"
	else
		head -n 20 "$tmp/diff" | sed 's/^/# /'
		not_ok "$3"
	fi
}
same "$top/hw/rdma" "$q/hw/rdma" "the device in the tree is hw/rdma as it is here"
mkdir "$tmp/hdr" "$tmp/qt"
cp "$top"/guest-driver/uzura_*_defs.h "$tmp/hdr/"
same "$tmp/hdr" "$q/include/standard-headers/drivers/infiniband/hw/uzura" \
	"the headers in the tree are guest-driver/uzura_*_defs.h"
cp "$top"/qtest/*.c "$top"/qtest/*.h "$tmp/qt/"
mkdir "$tmp/qt2"
cp "$q"/tests/qtest/uzura*.c "$q"/tests/qtest/uzura*.h "$tmp/qt2/"
same "$tmp/qt" "$tmp/qt2" "the qtests in the tree are qtest/ as it is here"
if grep -q '^F: hw/rdma/uzura/$' "$q/MAINTAINERS" &&
	grep -qx '   uzura' "$q/docs/specs/index.rst"; then
	ok "MAINTAINERS and docs/specs/index.rst name the device"
else
	not_ok "MAINTAINERS and docs/specs/index.rst name the device"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
