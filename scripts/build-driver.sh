#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-driver.sh SRCDIR OUT.ko: build a guest module (the driver, or a
# benchmark module) with kbuild against the guest kernel's headers and copy
# SRCDIR's module of OUT.ko's name to OUT.ko when it changed.
set -euo pipefail
src=$1 out=$2
ko=$src/$(basename "$out")
make -s -C "$src" >&2
cmp -s "$ko" "$out" || cp "$ko" "$out"
