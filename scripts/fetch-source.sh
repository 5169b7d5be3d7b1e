#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# fetch-source.sh PACKAGE SUITE VERSION-PREFIX DEST
#
# Download a Debian source package (apt-get source PACKAGE/SUITE) into the
# download cache and unpack it, with Debian's patches applied, into DEST.
# The mirror sometimes serves the tarballs without the .dsc; then the orig
# tarball is unpacked and the debian tarball's quilt series applied here.
set -euo pipefail

pkg=$1 suite=$2 want=$3 dest=$4
cache=${UZURA_CACHE:-$HOME/.cache/uzura}/src/$pkg
log() { printf 'fetch-source: %s\n' "$*"; }

if [ -f "$dest/.uzura-unpacked" ]; then
	exit 0
fi

mkdir -p "$cache"
# apt-cache showsrc takes no suite; the wanted version prefix picks it.
ver=$(apt-cache showsrc "$pkg" 2>/dev/null |
	awk -v w="$want" '/^Version:/ { v = $2; sub(/^[0-9]+:/, "", v);
		if (index(v, w) == 1) print $2 }' | sort -V | tail -n 1)
if [ -z "$ver" ]; then
	log "no $want* source of $pkg in $suite (is the deb-src entry there?)"
	exit 1
fi
upver=${ver#*:}
upver=${upver%-*}
log "$pkg $ver"

if ! ls "$cache"/"${pkg}_${upver}".orig.tar.* >/dev/null 2>&1 ||
   ! ls "$cache"/"${pkg}_${ver#*:}".debian.tar.* >/dev/null 2>&1; then
	# Exits non-zero when a file (often the .dsc) is missing; what arrived
	# is checked below.
	(cd "$cache" && apt-get source --download-only -qq "$pkg=$ver" ||
		log "apt-get source reported an error; using what arrived")
fi

orig=$(ls "$cache"/"${pkg}_${upver}".orig.tar.* 2>/dev/null | head -n 1 || true)
deb=$(ls "$cache"/"${pkg}_${ver#*:}".debian.tar.* 2>/dev/null | head -n 1 || true)
if [ -z "$orig" ]; then
	log "no orig tarball of $pkg $ver arrived from the mirror"; exit 1
fi

rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xf "$orig" -C "$dest.tmp" --strip-components=1
if [ -n "$deb" ]; then
	tar -xf "$deb" -C "$dest.tmp"
	if [ -f "$dest.tmp/debian/patches/series" ]; then
		(cd "$dest.tmp" &&
		 sed -e 's/#.*//' -e '/^[[:space:]]*$/d' debian/patches/series |
		 while read -r p opts; do
			patch -p1 -s -N ${opts:-} < "debian/patches/$p"
		 done)
	fi
fi
echo "$ver" > "$dest.tmp/.uzura-version"
touch "$dest.tmp/.uzura-unpacked"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
log "unpacked $pkg $ver into $dest"
