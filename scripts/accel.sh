# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2154
#
# Sourced by ./uzura: which accelerator the nodes run on.  KVM where the
# host's KVM can run the guest, TCG otherwise.  That /dev/kvm opens, or
# even that KVM_CREATE_VM succeeds, does not say so: on a nested,
# paravirtual KVM a Linux guest stops at its first instructions with
# "KVM internal error. Suberror: 1".  So the probe boots the image's
# kernel under KVM and waits for the guest's init to speak on the
# console.  Its verdict is kept in $build/accel-probe, with what it was
# made from, and made again when that changes.
#
# Needs: $qemu, $image, $build.

# How long the probe waits for the guest's init.  Under KVM it takes a
# few seconds; what fails, fails at once.
accel_probe_secs=${UZURA_ACCEL_PROBE_SECS:-60}

# What a verdict depends on, one line: the QEMU binary (by path, size and
# time), the host kernel, the guest kernel, /dev/kvm.
accel_probe_key() {
	echo "$(realpath -m "$qemu") $(stat -Lc '%s %Y' "$qemu" 2>/dev/null)" \
	     "$(uname -r) $(stat -Lc '%s %Y' "$image/vmlinuz" 2>/dev/null)" \
	     "$(stat -Lc '%t:%T' /dev/kvm 2>/dev/null)"
}

# accel_probe_run: boot the guest's kernel and init under KVM; print
# "kvm" when init ran, else "tcg: WHY".
accel_probe_run() {
	local dir pid t why=''

	[ -e /dev/kvm ] || { echo "tcg: the host has no /dev/kvm"; return; }
	if [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; then
		echo "tcg: /dev/kvm is not open to this user"
		return
	fi
	"$qemu" -accel help 2>/dev/null | grep -qx kvm ||
		{ echo "tcg: this QEMU is built without KVM"; return; }
	dir=$(mktemp -d "${TMPDIR:-/tmp}/uzura-accel.XXXXXX")
	# No layer disk: uzura-init then says so on the console at once,
	# which is the sign that init runs.
	"$qemu" -name accel-probe -M q35 -accel kvm -cpu max -smp 1 -m 512 \
		-nodefaults -no-user-config -display none -vga none -no-reboot \
		-L /usr/share/seabios -L /usr/share/qemu \
		-kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
		-append "root=/dev/vda ro console=ttyS0 init=/sbin/uzura-init uzura_node=0 quiet panic=-1" \
		-drive "file=$image/rootfs.ext4,format=raw,if=virtio,snapshot=on" \
		-serial "file:$dir/console" > "$dir/qemu.log" 2>&1 &
	pid=$!
	t=0
	while :; do
		if grep -qa 'uzura-init' "$dir/console" 2>/dev/null; then
			break
		elif grep -qa 'KVM internal error' "$dir/qemu.log"; then
			why="the guest stopped at once under KVM ($(grep -am 1 'KVM internal error' "$dir/qemu.log" | tr -d '\r'))"
		elif ! kill -0 "$pid" 2>/dev/null; then
			why="QEMU could not start a KVM guest: $(tail -n 1 "$dir/qemu.log")"
		elif [ "$t" -ge $((accel_probe_secs * 2)) ]; then
			why="the guest's init did not start within ${accel_probe_secs}s under KVM"
		fi
		[ -z "$why" ] || break
		sleep 0.5
		t=$((t + 1))
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	rm -rf "$dir"
	if [ -n "$why" ]; then
		echo "tcg: $why"
	else
		echo kvm
	fi
}

# accel_probe: the verdict, probed once for what it depends on.  The
# cache holds a line "KEY<tab>VERDICT" per QEMU binary.
accel_probe() {
	local key cache=$build/accel-probe verdict

	key=$(accel_probe_key)
	verdict=$(awk -F '\t' -v k="$key" '$1 == k { print $2; exit }' \
		"$cache" 2>/dev/null)
	if [ -z "$verdict" ]; then
		verdict=$(accel_probe_run)
		{
			awk -F '\t' -v q="$(realpath -m "$qemu") " \
				'index($1, q) != 1' "$cache" 2>/dev/null
			printf '%s\t%s\n' "$key" "$verdict"
		} > "$cache.new" && mv "$cache.new" "$cache"
	fi
	echo "$verdict"
}
