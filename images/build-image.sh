#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-image.sh OUTDIR
#
# Build the guest base image once and cache it by content: a Debian trixie
# rootfs (rdma-core, perftest, Open MPI, MPICH, UCX, libfabric, nvme-cli,
# fio, the NFS server and client, open-iscsi, sshd) with
# the host's 6.12 kernel (the one whose headers the driver is built
# against), as an ext4 image plus kernel, initrd and the harness's ssh key.  OUTDIR becomes a
# link to the cached image.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=$1
cache=${UZURA_CACHE:-$HOME/.cache/uzura}
log() { printf 'build-image: %s\n' "$*"; }

PACKAGES=(
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils python3-pyverbs
	perftest qperf iperf3 openmpi-bin libopenmpi-dev ucx-utils
	netpipe-openmpi mpich libmpich-dev libfabric-bin
	openssh-server iproute2 ethtool kmod procps
	iputils-ping tini initramfs-tools linux-base zstd
	# the kernel's RDMA storage and file users: NVMe, NFS and iSCSI
	# (iSER; the LIO target is configured through configfs) over RDMA
	nvme-cli fio nfs-kernel-server nfs-common open-iscsi
	# debootstrap does not resolve the virtual dependencies of
	# libopenmpi-dev's tool chain; name them.
	automake autoconf libtool
)

kver=$("$top/scripts/kernel-version.sh")
mirror=$("$top/scripts/setup-host.sh" --mirror)

# The image is keyed by what goes into it.
key=$( {
	echo "$kver"
	printf '%s\n' "${PACKAGES[@]}"
	cat "$here/build-image.sh" "$here/uzura-init"
} | sha256sum | cut -c1-16)
dir=$cache/image/$key

if [ ! -f "$dir/done" ]; then
	log "building base image $key (kernel $kver)"
	rm -rf "$dir"
	mkdir -p "$dir" "$cache/debs"
	root=$dir/rootfs
	cleanup() {
		for m in dev/pts dev proc sys; do
			mountpoint -q "$root/$m" && umount -l "$root/$m"
		done
		return 0
	}
	trap cleanup EXIT

	(cd "$cache/debs" && apt-get download -qq "linux-image-$kver")
	kdeb=$(ls "$cache/debs/linux-image-${kver}_"*.deb | sort -V | tail -n 1)

	debootstrap --variant=minbase --cache-dir="$cache/debs" \
		--include="$(IFS=,; echo "${PACKAGES[*]}")" \
		trixie "$root" "$mirror" > "$dir/debootstrap.log" 2>&1 || {
		tail -n 20 "$dir/debootstrap.log"; exit 1; }

	# Only the drivers needed to reach the root disk go into the initrd.
	printf 'virtio_pci\nvirtio_blk\next4\n' \
		>> "$root/etc/initramfs-tools/modules"
	sed -i 's/^MODULES=.*/MODULES=list/' \
		"$root/etc/initramfs-tools/initramfs.conf"
	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --bind /dev "$root/dev"
	mount --bind /dev/pts "$root/dev/pts"
	cp "$kdeb" "$root/tmp/kernel.deb"
	chroot "$root" env DEBIAN_FRONTEND=noninteractive \
		dpkg -i /tmp/kernel.deb > "$dir/kernel.log" 2>&1 || {
		tail -n 20 "$dir/kernel.log"; exit 1; }
	rm -f "$root/tmp/kernel.deb"
	chroot "$root" ssh-keygen -A > /dev/null
	cleanup
	trap - EXIT

	# Harness access: root by key only, on the management network.
	ssh-keygen -q -t ed25519 -N '' -C uzura-harness -f "$dir/id_ed25519"
	install -d -m 700 "$root/root/.ssh"
	install -m 600 "$dir/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
	# Nodes reach each other with the same key (mpirun starts ranks by ssh).
	install -m 600 "$dir/id_ed25519" "$root/root/.ssh/id_ed25519"
	cat > "$root/root/.ssh/config" <<EOT
Host 10.77.0.* node*
	StrictHostKeyChecking no
	UserKnownHostsFile /dev/null
	LogLevel ERROR
EOT
	cat > "$root/etc/ssh/sshd_config.d/uzura.conf" <<EOT
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
EOT
	install -m 755 "$here/uzura-init" "$root/sbin/uzura-init"
	rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*

	cp "$root/boot/vmlinuz-$kver" "$dir/vmlinuz"
	cp "$root/boot/initrd.img-$kver" "$dir/initrd.img"
	size=$(du -sm "$root" | cut -f1)
	mkfs.ext4 -q -F -L uzura-root -d "$root" "$dir/rootfs.ext4" \
		"$((size * 13 / 10 + 512))M" > /dev/null
	rm -rf "$root"
	echo "$kver" > "$dir/kernel-version"
	touch "$dir/done"
	# Drop images of earlier builds that never finished.
	for d in "$cache"/image/*/; do
		[ -f "$d/done" ] || [ "$(realpath "$d")" = "$(realpath "$dir")" ] ||
			rm -rf "$d"
	done
	log "base image ready: $(du -sh --apparent-size "$dir/rootfs.ext4" | cut -f1)"
fi

mkdir -p "$(dirname "$out")"
ln -sfn "$dir" "$out"
