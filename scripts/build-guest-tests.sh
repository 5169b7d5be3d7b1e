#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-guest-tests.sh SRC-DIR RDMA-BUILD-DIR OUT
#
# Build the guest-side verbs test (SRC-DIR/verbs-errors.c) on the host
# against the rdma-core build tree of build-provider.sh: its headers and
# its libibverbs.so.  The guest's libibverbs.so.1 (same rdma-core) serves
# at run time; the guest's glibc is newer than the host's.
set -euo pipefail

src=$1 rdma=$2 out=$3

${CC:-cc} -O2 -Wall -Wextra -Werror -std=gnu11 \
	-I "$rdma/include" -o "$out" "$src/verbs-errors.c" \
	-L "$rdma/lib" -libverbs
