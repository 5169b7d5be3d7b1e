#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make-layer.sh OUT.img MODULE.ko...: the read-only second disk of every node,
# carrying what this checkout builds for the guest (uzura-init installs it).
set -euo pipefail
out=$1
shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/modules"
cp "$@" "$stage/modules/"
rm -f "$out"
mkfs.ext4 -q -F -L uzura-layer -d "$stage" "$out" 32M >/dev/null
