#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Install what the uzura build needs on a Debian 12 (bookworm) host.
#
# Packages come from bookworm; only the named packages that need a newer
# version come from bookworm-backports.  The backports and trixie (source
# only) entries are derived at run time from the machine's own apt sources,
# so no mirror host is written into the repository.  Quick no-op when done.
set -euo pipefail

STAMP_DIR=${UZURA_CACHE:-$HOME/.cache/uzura}
STAMP=$STAMP_DIR/setup-host.v1
LIST=/etc/apt/sources.list.d/uzura.sources

BOOKWORM_PKGS=(
	build-essential ccache ninja-build pkg-config git python3 python3-venv
	libglib2.0-dev libslirp-dev libpixman-1-dev libfdt-dev zlib1g-dev
	flex bison dpkg-dev cmake
	# rdma-core's man pages, the provider's among them, are Markdown made
	# into man pages by pandoc; groff formats them (scripts/lint.sh).
	pandoc groff-base
	libnl-3-dev libnl-route-3-dev libudev-dev
	seabios qemu-system-data
	# qemu-img: each node's disk is a qcow2 overlay of the image, a file
	# a migrated node's new QEMU opens after its old one (./uzura migrate).
	qemu-utils
	debootstrap e2fsprogs openssh-client zstd xz-utils cpio
	clang libclang-rt-14-dev llvm
	tshark
	iproute2
	# The fabric's ECN marker where the kernel has no sch_red
	# (scripts/fabric-ecn.bpf.c): BPF headers, and bpftool to read it.
	libbpf-dev bpftool
)
BACKPORTS_PKGS=(meson python3-pycotap)
# Only for the benchmark (bench/run calls "setup-host.sh --bench").
BENCH_PKGS=(qperf gnuplot-nox)

log() { printf 'setup-host: %s\n' "$*"; }

# --bench: the benchmark's host packages, from bookworm; a no-op (and no
# root needed) when they are there.
if [ "${1:-}" = "--bench" ]; then
	missing=()
	for p in "${BENCH_PKGS[@]}"; do
		[ "$(dpkg-query -W -f '${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && exit 0
	[ "$(id -u)" -eq 0 ] || { log "must run as root to install ${missing[*]}"; exit 1; }
	log "installing the benchmark's packages: ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	log "must run as root (apt-get install)"; exit 1
fi

# The first bookworm mirror URI and its keyring, from deb822 or one-line
# sources.
mirror_uri() {
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -e "$f" ] && [ "$f" != "$LIST" ] || continue
		uri=$(awk '
			/^URIs:/ { u = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") s = 1 }
			/^$/ { if (u != "" && s) exit; u = ""; s = 0 }
			END { if (u != "" && s) print u }' "$f")
		[ -n "$uri" ] && { echo "$uri"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -e "$f" ] || continue
		uri=$(awk '$1 == "deb" && $0 ~ / bookworm / {
			for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' "$f")
		[ -n "$uri" ] && { echo "$uri"; return; }
	done
}

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

write_sources() {
	local uri
	uri=$(mirror_uri)
	if [ -z "$uri" ]; then
		log "no bookworm entry found in the apt sources"; exit 1
	fi
	cat > "$LIST.new" <<EOT
# Written by uzura scripts/setup-host.sh from this machine's bookworm entry.
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: $KEYRING

Types: deb-src
URIs: $uri
Suites: trixie
Components: main
Signed-By: $KEYRING
EOT
	if ! cmp -s "$LIST.new" "$LIST"; then
		mv "$LIST.new" "$LIST"
		return 0
	fi
	rm -f "$LIST.new"
	return 1
}

# Print the Debian mirror URI (used by the image builder).
if [ "${1:-}" = "--mirror" ]; then
	mirror_uri
	exit 0
fi

KVER_PKG=""
need_update=0
write_sources && need_update=1
[ -f "$STAMP" ] || need_update=1

if [ "$need_update" = 1 ]; then
	log "apt-get update"
	apt-get update -qq
fi

# The 6.12 kernel headers (built with bookworm's gcc 12): the package the
# linux-headers-6.12-amd64 meta package points at today, from bookworm's
# security updates or bookworm-backports, whichever serves the newer one.
kheaders() {
	apt-cache depends linux-headers-6.12-amd64 2>/dev/null |
		awk '/Depends: linux-headers-6\.12\.[0-9]+\+[a-z0-9]+-amd64$/ {print $2; exit}'
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(sha256sum "$0" | cut -d' ' -f1)" ]; then
	exit 0
fi

KVER_PKG=$(kheaders)
if [ -z "$KVER_PKG" ]; then
	log "no linux-headers-6.12 package in bookworm-backports"; exit 1
fi

# tshark (tests/wire-test.sh reads captures of the link with it): its
# wireshark-common asks whether non-root users may capture; no.
echo 'wireshark-common wireshark-common/install-setuid boolean false' |
	debconf-set-selections
log "installing bookworm packages"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"${BOOKWORM_PKGS[@]}" >/dev/null
log "installing from bookworm-backports: ${BACKPORTS_PKGS[*]}"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	$(printf '%s/bookworm-backports ' "${BACKPORTS_PKGS[@]}") >/dev/null
log "installing $KVER_PKG"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	"$KVER_PKG" pahole >/dev/null

log "meson $(meson --version), kernel headers ${KVER_PKG#linux-headers-}"
mkdir -p "$STAMP_DIR"
sha256sum "$0" | cut -d' ' -f1 > "$STAMP"
