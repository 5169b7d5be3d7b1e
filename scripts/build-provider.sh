#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-provider.sh RDMA-CORE-SRC BUILD-DIR OUT-DIR
#
# Build the rdma-core provider libuzura (guest-lib/uzura) out of the
# rdma-core source the guest's libibverbs comes from.  A copy of the source
# gets the provider overlaid as providers/uzura (symbolic links, so an edit
# rebuilds at once) and registered in two CMake lists, and its man pages
# (providers/uzura/man) in the top one as efa's are; it is configured once,
# and then only libibverbs, the provider and its man pages are built.
# OUT-DIR gets what the guest needs: libuzura.so.1, which is both the
# libibverbs plugin (installed as libibverbs/libuzura-rdmav34.so, a link to
# it) and the uzuradv library applications link with -luzura; the
# /etc/libibverbs.d file; and the uzuradv man pages (guest-lib/uzura/man,
# Markdown made into man pages by pandoc, as rdma-core makes efa's and
# mlx5's), their aliases as links to them.  The build tree's
# include/infiniband/uzuradv.h and lib/libuzura.so serve programs built for
# the guest (build-guest-tests.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
src=$1 bld=$2 out=$3
tree=$bld/src
lib=uzura

if [ ! -f "$tree/.uzura-overlay" ]; then
	rm -rf "$tree"
	mkdir -p "$bld"
	cp -a "$src" "$tree"
	sed -i '/^add_subdirectory(providers\/efa)$/i add_subdirectory(providers/uzura)' \
		"$tree/CMakeLists.txt"
	sed -i 's|^  rdma/efa-abi.h$|&\n  rdma/uzura-abi.h|' \
		"$tree/kernel-headers/CMakeLists.txt"
	touch "$tree/.uzura-overlay"
fi
# The provider's man pages, as efa's are added; also into a tree overlaid
# before they existed.
grep -qx 'add_subdirectory(providers/uzura/man)' "$tree/CMakeLists.txt" ||
	sed -i '/^add_subdirectory(providers\/uzura)$/a add_subdirectory(providers/uzura/man)' \
		"$tree/CMakeLists.txt"
mkdir -p "$tree/providers/uzura"
for f in "$top"/guest-lib/uzura/*; do
	ln -sf "$f" "$tree/providers/uzura/"
done
# Links to files since removed from guest-lib/uzura would break CMake.
find "$tree/providers/uzura" -xtype l -delete
# The hardware interface, from the driver, as efa's provider has its own
# efa_io_defs.h.
rm -f "$tree/providers/uzura/uzura-hw.h"
for f in "$top"/guest-driver/uzura_*_defs.h; do
	ln -sf "$f" "$tree/providers/uzura/"
done
ln -sf "$top/guest-driver/uapi/rdma/uzura-abi.h" \
	"$tree/kernel-headers/rdma/uzura-abi.h"

# The man pages need pandoc (setup-host.sh installs it): without it
# rdma-core would look for prebuilt pages, which a provider of its own has
# not.
command -v pandoc > /dev/null || {
	echo "build-provider: pandoc not found (scripts/setup-host.sh installs it)" >&2
	exit 1
}
# Configured once; again when the tree was configured without man pages
# (NO_MAN_PAGES, as this script used to do) or before pandoc was there.
cache=$bld/build/CMakeCache.txt
if [ ! -f "$bld/build/build.ninja" ] ||
   grep -Eqi '^NO_MAN_PAGES:BOOL=(1|on|true|yes|y)$' "$cache" ||
   grep -q '^PANDOC_EXECUTABLE:FILEPATH=.*NOTFOUND$' "$cache"; then
	cmake -S "$tree" -B "$bld/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DNO_PYVERBS=1 -DNO_MAN_PAGES=0 -UPANDOC_EXECUTABLE > "$bld/cmake.log"
fi
# The provider and its man pages only (rdma-core's target man-PAGE for
# each page of guest-lib/uzura/man), not the rest of rdma-core's.
pages=()
for f in "$top"/guest-lib/uzura/man/*.md; do
	f=${f##*/}
	pages+=("${f%.md}")
done
ninja -C "$bld/build" "$lib" "${pages[@]/#/man-}" >&2

mkdir -p "$out"
cmp -s "$bld/build/lib/lib$lib.so.1" "$out/lib$lib.so.1" ||
	cp -L "$bld/build/lib/lib$lib.so.1" "$out/lib$lib.so.1"
echo "driver uzura" > "$out/uzura.driver"
# The pages, and the links rdma_alias_man_pages made beside them at
# configure time (uzuradv_post_stcrw.3 -> uzuradv_post_crw.3).
mandir=$bld/build/providers/uzura/man
for f in "${pages[@]}"; do
	cmp -s "$mandir/$f" "$out/$f" || cp "$mandir/$f" "$out/$f"
done
for f in "$mandir"/*.[1-9]; do
	[ -L "$f" ] || continue
	ln -sfn "$(readlink "$f")" "$out/${f##*/}"
done
