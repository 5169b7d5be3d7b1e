#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-guest-tests.sh RDMA-BUILD-DIR OUT-DIR [SRC.c...]
#
# Build programs that run in the guest: by default every tests/guest/*.c
# and guest-lib/examples/*.c, each into OUT-DIR/NAME (NAME.c's stem).  They
# are built on the host against the rdma-core build tree of
# build-provider.sh: its headers (infiniband/verbs.h, infiniband/uzuradv.h)
# and its libibverbs.so and libuzura.so.  The guest's libibverbs.so.1 and
# the libuzura.so.1 from the layer disk (same rdma-core) serve at run time;
# the guest's glibc is newer than the host's.  A program newer than its
# source and those headers and libraries is left alone.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rdma=$1 out=$2
shift 2
[ $# -gt 0 ] || set -- "$top"/tests/guest/*.c "$top"/guest-lib/examples/*.c

mkdir -p "$out"
deps=("$top/tests/guest/tap.h" "$top/tests/guest/self-qp.h"
      "$top/bench/bench-verbs.h"
      "$top/tests/guest/child.h"
      "$rdma/include/infiniband/verbs.h" "$rdma/include/infiniband/uzuradv.h"
      "$rdma/lib/libibverbs.so" "$rdma/lib/libuzura.so")
for src in "$@"; do
	bin=$out/$(basename "$src" .c)
	fresh=1
	for f in "$src" "${deps[@]}"; do
		[ "$bin" -nt "$f" ] || fresh=0
	done
	[ "$fresh" = 1 ] && continue
	${CC:-cc} -O2 -Wall -Wextra -Werror -std=gnu11 \
		-I "$rdma/include" -o "$bin" "$src" \
		-L "$rdma/lib" -Wl,--as-needed -luzura -libverbs
done
