#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-provider.sh RDMA-CORE-SRC BUILD-DIR OUT-DIR
#
# Build the rdma-core provider libuzura (guest-lib/uzura) out of the
# rdma-core source the guest's libibverbs comes from.  A copy of the source
# gets the provider overlaid as providers/uzura (symbolic links, so an edit
# rebuilds at once) and registered in two CMake lists; it is configured
# once, and then only libibverbs and the provider are built.  OUT-DIR gets
# what the guest needs: libuzura.so.1, which is both the libibverbs plugin
# (installed as libibverbs/libuzura-rdmav34.so, a link to it) and the
# uzuradv library applications link with -luzura, and the
# /etc/libibverbs.d file.  The build tree's include/infiniband/uzuradv.h
# and lib/libuzura.so serve programs built for the guest
# (build-guest-tests.sh).
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

if [ ! -f "$bld/build/build.ninja" ]; then
	cmake -S "$tree" -B "$bld/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DNO_PYVERBS=1 -DNO_MAN_PAGES=1 > "$bld/cmake.log"
fi
ninja -C "$bld/build" "$lib" >&2

mkdir -p "$out"
cmp -s "$bld/build/lib/lib$lib.so.1" "$out/lib$lib.so.1" ||
	cp -L "$bld/build/lib/lib$lib.so.1" "$out/lib$lib.so.1"
echo "driver uzura" > "$out/uzura.driver"
