#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make-layer.sh OUT.img BOOT-HOOK MODULE.ko... [PROVIDER-FILE...] [MAN-PAGE...]
#	[PROGRAM...]
#
# The read-only second disk of every node: what this checkout builds for the
# guest.  It carries the modules and the module index files for the guest
# kernel with them added, computed here with depmod against the guest
# kernel's module tree: depmod inside a TCG guest takes over 20 seconds.
# The boot hook (images/layer-boot.sh), run by uzura-init, installs both.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$1
hook=$2
shift 2
cache=${UZURA_CACHE:-$HOME/.cache/uzura}
kver=$("$top/scripts/kernel-version.sh")

# The guest kernel's module tree, unpacked once from its package.
ktree=$cache/kmod/$kver
if [ ! -f "$ktree/done" ]; then
	mkdir -p "$cache/debs"
	kdeb=$(ls "$cache/debs/linux-image-${kver}_"*.deb 2>/dev/null | tail -n 1 || true)
	if [ -z "$kdeb" ]; then
		(cd "$cache/debs" && apt-get download -qq "linux-image-$kver" 2>/dev/null)
		kdeb=$(ls "$cache/debs/linux-image-${kver}_"*.deb | tail -n 1)
	fi
	rm -rf "$ktree"
	mkdir -p "$ktree"
	dpkg-deb --fsys-tarfile "$kdeb" |
		tar -x -C "$ktree" --wildcards './lib/modules/*' './usr/lib/modules/*' 2>/dev/null || true
	[ -d "$ktree/usr/lib/modules" ] && mv "$ktree/usr/lib" "$ktree/lib"
	touch "$ktree/done"
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/modules" "$stage/provider" "$stage/man" "$stage/tests" \
	"$stage/depmod/lib/modules"
modules=()
for f in "$@"; do
	case $f in
	*.ko) modules+=("$f"); cp "$f" "$stage/modules/" ;;
	*.so|*.so.*|*.driver) cp "$f" "$stage/provider/" ;;	# the verbs provider
	*.[1-9]) cp -P "$f" "$stage/man/" ;;	# its man pages (aliases: links)
	*) cp "$f" "$stage/tests/" ;;	# guest test programs
	esac
done
set -- "${modules[@]}"
install -m 755 "$hook" "$stage/boot.sh"

# depmod over the guest tree plus our modules, in a scratch root.
droot=$stage/depmod
cp -as "$ktree/lib/modules/$kver" "$droot/lib/modules/$kver"
mkdir -p "$droot/lib/modules/$kver/updates"
cp "$@" "$droot/lib/modules/$kver/updates/"
depmod -b "$droot" "$kver"
mkdir -p "$stage/modules-index"
cp "$droot/lib/modules/$kver"/modules.* "$stage/modules-index/"
rm -rf "$droot"

# What the layer holds, by its files' bytes: ./uzura's build_id reads it
# to tell whether a snapshot's guests ran this build's layer (the image
# itself differs at each make, by its file system's UUID and times).
(cd "$stage" && {
	find . -type f -print0 | sort -z | xargs -0 -r sha256sum
	find . -type l -printf '%p -> %l\n' | sort
} | sha256sum | cut -d ' ' -f 1) > "${out%.img}.sum"

rm -f "$out"
mkfs.ext4 -q -F -L uzura-layer -d "$stage" "$out" 32M > /dev/null
