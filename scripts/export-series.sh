#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# export-series.sh OUTDIR
#
# Write uzura as patch series a QEMU maintainer could read, against the
# QEMU tree the build uses (Debian trixie's 10.0 with Debian's patches):
#
#   OUTDIR/1-core/    the changes to QEMU's own files (scripts/qemu-patches)
#                     and the shm netdev
#   OUTDIR/2-device/  the hardware interface headers (alone, as imported
#                     headers must be), the device in parts, its wiring,
#                     a MAINTAINERS entry and docs/specs/uzura.rst
#   OUTDIR/3-qtests/  the qtests' helpers, the qtests, the fuzz targets
#
# Each series is git format-patch output with a cover letter; applied in
# order with git am to a clean tree they give the tree build-qemu.sh
# overlays (tests/export-series-test.sh checks that).  Nothing outside
# OUTDIR and a temporary directory is written.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log() { printf 'export-series: %s\n' "$*" >&2; }
q=$tmp/qemu

"$top/scripts/fetch-source.sh" qemu trixie 10.0. "$q" >&2
git -C "$q" init -q
git -C "$q" config user.name "uzura developers"
git -C "$q" config user.email "uzura@localhost"
printf '.uzura-*\n' >> "$q/.git/info/exclude"
git -C "$q" add -A
git -C "$q" commit -q -m "QEMU $(cat "$q/.uzura-version")"
base=$(git -C "$q" rev-parse HEAD)
"$top/scripts/build-qemu.sh" --overlay-copy "$q" >&2

# commit SUBJECT BODY PATH...: one commit of PATH..., signed off.
commit() {
	local subject=$1 body=$2
	shift 2
	git -C "$q" add -A -- "$@"
	git -C "$q" diff --cached --quiet && { log "nothing for: $subject"; exit 1; }
	printf '%s\n\n%s\n' "$subject" "$body" |
		git -C "$q" commit -q -s -F -
}

# series NAME FROM: format-patch FROM..HEAD into OUTDIR/NAME.
series() {
	rm -rf "${out:?}/$1"
	git -C "$q" format-patch -q --cover-letter -o "$out/$1" "$2..HEAD"
}

# The text of a patch of scripts/qemu-patches: its header without the
# first line (the subject comes from the table below) and the build note.
patch_body() {
	sed -n '/^--- a\//q; p' "$1" | sed '1d; /^Applied by scripts\/build-qemu.sh/d' |
		sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' | sed '/./,$!d'
}
patch_files() { sed -n 's|^+++ b/||p' "$1" | sort -u; }

# ---- 1: QEMU's own files ----
declare -A subject=(
	[defer-call.patch]="util/defer-call: sections a deferred function may open again"
	[net-stream.patch]="net/stream: one writev per batch of frames, and no copies"
	[netdev-shm.patch]="net: add the shm netdev, a link over shared memory"
	[tcg-dispatch.patch]="accel/tcg: read a TLB entry with the view it was made from"
)
for p in "$top"/scripts/qemu-patches/*.patch; do
	name=${p##*/}
	[ -n "${subject[$name]:-}" ] || { log "no subject for $name"; exit 1; }
	files=$(patch_files "$p")
	case $name in
	netdev-shm.patch) files="$files net/shm.c net/shm-ring.h" ;;
	esac
	body=$(patch_body "$p")
	# build-qemu.sh's one-line edit of the same file goes with it.
	[ "$name" = net-stream.patch ] && body="$body

The listening side turns Nagle off too, as the connecting side does:
a frame the listener sends behind an unacknowledged one waited for the
peer's delayed ACK (40 ms)."
	commit "${subject[$name]}" "$body" $files
done
series 1-core "$base"
s2=$(git -C "$q" rev-parse HEAD)

# ---- 2: the device ----
hdr=include/standard-headers/drivers/infiniband/hw/uzura
commit "include/standard-headers: add the uzura NIC's hardware interface" \
"The programming model of the uzura RDMA NIC, by part as efa's
efa_*_defs.h: registers, the admin queue, the admin commands, the
queues of the data path and the wire format.  They belong to the
guest driver; the device, its qtests and the rdma-core provider
compile against the same files." "$hdr"

d=hw/rdma/uzura
core_files="uzura.c uzura-core.h uzura-core.c uzura-regs.c uzura-db.c
	uzura-dma.c uzura-admin.c uzura-eq.c uzura-eth.c uzura-link.c
	uzura-loop.c uzura-pause.c uzura-crc.c trace-events trace.h"
transport_files="uzura-transport.h uzura-roce.c uzura-req.c uzura-resp.c
	uzura-sr.c uzura-crw.c uzura-tm.c uzura-dcqcn.c"
commit "hw/rdma/uzura: the PCI function, its core and its queues" \
"The device's PCI glue, core (life, entries, the work loop, receive),
BAR 0 registers, doorbell pages, DMA, the admin queue with its command
table, event queues and MSI-X, the Ethernet function, the port, the
loopback and link-level flow control.  docs/specs/uzura.rst (later in
this series) points to the full specification." \
	$(printf "$d/%s " $core_files)
objects=$(cd "$q/$d" && ls uzura-*.c uzura-*.h |
	grep -vxF -e "$(printf '%s\n' $core_files $transport_files)")
commit "hw/rdma/uzura: RDMA objects" \
"Contexts, PDs, AHs, CQs, SRQs, QPs and their state machine, memory
regions with the on-NIC translation cache, windows, device memory,
multicast, XRC, raw packet QPs with flow rules and RSS, shadow
doorbells and fast registration." $(printf "$d/%s " $objects)
commit "hw/rdma/uzura: the RoCEv2 transport" \
"Frames, the requester, the responder, selective repeat, conditional
RDMA writes, tag matching and DCQCN congestion control." \
	$(printf "$d/%s " $transport_files)
commit "hw/rdma/uzura: fault injection and a timing model" \
"The research layers between the NIC's port and the link: a seeded
fault injector with rules aimed at chosen frames, and a model that
gives the wire, the NIC and its DMA a duration in virtual time." \
	"$d/research"
commit "hw/rdma: build the uzura device" \
"CONFIG_UZURA, with PCI Express devices, and the trace events of both
folders." hw/rdma/Kconfig hw/rdma/meson.build "$d/Kconfig" "$d/meson.build" \
	hw/meson.build hw/Kconfig meson.build

cat >> "$q/MAINTAINERS" <<'EOF'

uzura RDMA NIC
M: uzura developers <uzura@localhost>
S: Maintained
F: hw/rdma/uzura/
F: include/standard-headers/drivers/infiniband/hw/uzura/
F: tests/qtest/uzura*
F: tests/qtest/libqos/uzura*
F: tests/qtest/fuzz/uzura*
F: docs/specs/uzura.rst
EOF
commit "MAINTAINERS: add the uzura RDMA NIC" \
"The device, its headers, qtests, fuzz targets and documentation." \
	MAINTAINERS
cp "$top/docs/qemu/uzura.rst" "$q/docs/specs/uzura.rst"
awk '{ print } $0 == "   edu" { print "   uzura" }' \
	"$q/docs/specs/index.rst" > "$tmp/index.rst"
mv "$tmp/index.rst" "$q/docs/specs/index.rst"
commit "docs/specs: add the uzura RDMA NIC" \
"What the device is, how to start it, its properties, and where its
full specification lives." docs/specs
series 2-device "$s2"
s3=$(git -C "$q" rev-parse HEAD)

# ---- 3: the qtests ----
helpers=$(cd "$top/qtest" && ls *.c *.h | grep -v -- '-test\.c$')
commit "tests/qtest: helpers that drive a uzura NIC as a driver would" \
"Boot a machine with uzura NICs, bring up the admin queue, create
objects and post work requests through rings in guest memory; one
library every uzura qtest links." $(printf "tests/qtest/%s " $helpers)
commit "tests/qtest/libqos: a uzura driver node" \
"The NIC on any machine whose graph has a PCI bus, on a hub port, for
the tests of one NIC that qos-test runs." tests/qtest/libqos/uzura.c \
	tests/qtest/libqos/uzura.h tests/qtest/libqos/meson.build
commit "tests/qtest: the uzura device's tests" \
"Registers, commands and their refusals, every verb on the data path,
the transport under loss, the research layers, and what no guest or
peer may do to the device." tests/qtest/meson.build \
	$(cd "$top/qtest" && ls *-test.c | sed 's|^|tests/qtest/|')
commit "tests/qtest/fuzz: uzura fuzz targets" \
"A generic-fuzz configuration for two NICs on a hub, and data-path
targets that bring a NIC up as the driver does and then act from the
fuzzer's input." tests/qtest/fuzz
series 3-qtests "$s3"

left=$(git -C "$q" status --porcelain)
[ -z "$left" ] || { log "left out of every series:"; echo "$left" >&2; exit 1; }
log "series in $out: $(ls "$out")"
