#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-driver.sh SRCDIR OUT.ko: build the guest module with kbuild against
# the guest kernel's headers and copy it to OUT.ko when it changed.
set -euo pipefail
src=$1 out=$2
make -s -C "$src" >&2
cmp -s "$src/uzura.ko" "$out" || cp "$src/uzura.ko" "$out"
