#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# build-qemu.sh [--sanitize] SRC BUILD
#
# Overlay the uzura device (hw/rdma) and its qtests (qtest/) into the QEMU
# source tree SRC, configure it once into BUILD and build qemu-system-x86_64
# and the uzura qtests.  The overlay is a set of symbolic links plus a few
# idempotent one-line edits, so a change to hw/ or qtest/ rebuilds at once.
#
# --sanitize: a second build of the same tree with clang, AddressSanitizer,
# UndefinedBehaviorSanitizer and libFuzzer, which make check runs the
# qtests against, and which also builds QEMU's fuzzer, qemu-fuzz-x86_64.
#
# build-qemu.sh --overlay-copy SRC: the overlay only, with copies instead
# of links, and no build (scripts/export-series.sh: a tree to commit).
set -euo pipefail

sanitize=0 copy=0
case "${1:-}" in
--sanitize) sanitize=1; shift ;;
--overlay-copy) copy=1; shift; set -- "$1" /nonexistent ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
src=$(realpath -m "$1")
build=$(realpath -m "$2")
log() { printf 'build-qemu: %s\n' "$*"; }

# add_line FILE AFTER LINE: insert LINE after the line that is exactly
# AFTER, unless FILE already holds LINE.
add_line() {
	local file=$1 after=$2 line=$3
	grep -qxF -- "$line" "$file" && return 0
	grep -qxF -- "$after" "$file" || { log "cannot edit $file"; exit 1; }
	awk -v after="$after" -v line="$line" '
		{ print }
		!done && $0 == after { print line; done = 1 }' "$file" > "$file.new"
	mv "$file.new" "$file"
}

# place FILE DIR: a link to FILE in DIR (a copy with --overlay-copy).
place() {
	if [ "$copy" = 1 ]; then cp "$1" "$2"; else ln -sf "$1" "$2"; fi
}
if [ "$copy" = 1 ]; then
	rm -rf "$src/hw/rdma" && cp -r "$top/hw/rdma" "$src/hw/rdma"
else
	ln -sfn "$top/hw/rdma" "$src/hw/rdma"
fi
# The hardware interface headers come from the driver, as QEMU imports
# Linux's (include/standard-headers, scripts/update-linux-headers.sh).
mkdir -p "$src/include/standard-headers/drivers/infiniband/hw/uzura"
for f in "$top"/guest-driver/uzura_*_defs.h; do
	place "$f" "$src/include/standard-headers/drivers/infiniband/hw/uzura/"
done
for t in "$top"/qtest/*.c "$top"/qtest/*.h; do
	[ -e "$t" ] && place "$t" "$src/tests/qtest/$(basename "$t")"
done
# The NIC's libqos graph node, which qos-test's uzura tests run on.
for t in "$top"/qtest/libqos/*; do
	place "$t" "$src/tests/qtest/libqos/$(basename "$t")"
done

place "$top/qtest/fuzz/uzura-generic-fuzz.h" "$src/tests/qtest/fuzz/"
add_line "$src/tests/qtest/fuzz/generic_fuzz_configs.h" \
	"const generic_fuzz_config predefined_configs[] = {" \
	'#include "uzura-generic-fuzz.h"'
# The data-path fuzz targets (uzura-datapath-fuzz, -model-fuzz): a device
# brought up as the driver does, then actions from the fuzzer's input.
for f in uzura-datapath-fuzz.c uzura-fuzz-counters.h; do
	place "$top/qtest/fuzz/$f" "$src/tests/qtest/fuzz/"
done
# The data-path targets drive the device with the qtests' helpers.
sed -i "/^specific_fuzz_ss.add(files('uzura-datapath-fuzz.c'))\$/d" \
	"$src/tests/qtest/fuzz/meson.build"
add_line "$src/tests/qtest/fuzz/meson.build" \
	"specific_fuzz_ss.add(files('generic_fuzz.c'))" \
	"specific_fuzz_ss.add(files('uzura-datapath-fuzz.c', '../uzura-qtest.c', '../uzura-verbs.c', '../uzura-wire.c'))"
add_line "$src/hw/meson.build" "subdir('pci-host')" "subdir('rdma')"
add_line "$src/hw/Kconfig" "source pci/Kconfig" "source rdma/Kconfig"
add_line "$src/meson.build" "    'hw/pci-host'," "    'hw/rdma/uzura',"
add_line "$src/meson.build" "    'hw/rdma/uzura'," "    'hw/rdma/uzura/research',"
# The stream netdev (the two-node link) turns Nagle off on the connecting
# side only; without it on the listening side too, a frame the listener
# sends behind an unacknowledged one waits for the peer's delayed ACK
# (40 ms), which dominated every request/response exchange.
add_line "$src/net/stream.c" "    s->ioc = QIO_CHANNEL(cioc);" \
	"    qio_channel_set_delay(s->ioc, false); /* uzura: listener too */"
# The shm netdev (the shared-memory link): its files, registered by
# scripts/qemu-patches/netdev-shm.patch.
for f in shm.c shm-ring.h; do
	place "$top/net/$f" "$src/net/$f"
done
# Changes to QEMU's own files too large for add_line: the patches of
# scripts/qemu-patches, in name order.  SRC/.uzura-patches keeps each as
# it was applied; when the set changes, the old set comes out (last
# first) and the new one goes in, so a tree unpacked earlier follows.
patches=$top/scripts/qemu-patches applied=$src/.uzura-patches
if [ -d "$applied" ] && ! diff -rq "$applied" "$patches" >/dev/null; then
	for p in $(ls -r "$applied"/*.patch 2>/dev/null); do
		log "taking out $(basename "$p")"
		patch -d "$src" -p1 -R -s -f <"$p" >/dev/null ||
			{ log "cannot take out $p"; exit 1; }
		rm "$p"
	done
fi
mkdir -p "$applied"
for p in "$patches"/*.patch; do
	[ -e "$p" ] || continue
	[ -e "$applied/${p##*/}" ] && continue
	# A tree from before .uzura-patches: in already if it reverses.
	if ! patch -d "$src" -p1 -R --dry-run -s -f <"$p" >/dev/null 2>&1; then
		log "applying ${p##*/}"
		patch -d "$src" -p1 --forward -s <"$p" || {
			log "cannot apply $p (a tree patched by an older" \
				"checkout? remove $src and build again)"
			exit 1; }
	fi
	cp "$p" "$applied/"
done
# The qtests: every qtest/*-test.c, on one line; the helpers (the other
# qtest/*.c) are one library each of them links.  The lines are rewritten
# as the lists change.  qtest/*-qos-test.c run on libqos's graph: they
# are built into QEMU's qos-test (with the helpers' sources, as qos-test
# takes sources only), and the uzura-qos-test entry runs their part of it.
tests=$(cd "$top/qtest" && ls *-test.c | grep -v -- '-qos-test\.c$' |
	sed 's/\.c$//')
helpers=$(cd "$top/qtest" && ls *.c | grep -v -- '-test\.c$')
# uzura-migrate.c drives QEMU's migration qtest helpers: the library takes
# their sources; qos-test's cases do not migrate and leave it out.
mig="'migration/migration-qmp.c', 'migration/migration-util.c'"
qos_tests=$(cd "$top/qtest" && ls *-qos-test.c)
qline="qtests_x86_64 += [$(printf "'%s', " $tests | sed 's/, $//')] # uzura"
hline="uzura_qtest_helpers = declare_dependency(link_with: static_library('uzura-qtest', files($(printf "'%s', " $helpers | sed 's/, $//'), $mig) + genh, dependencies: [qemuutil, qos], build_by_default: false)) # uzura"
dline="qtests += {$(printf "'%s': [uzura_qtest_helpers], " $tests | sed 's/, $//')} # uzura"
# QEMU gives a qtest 60 s unless slow_qtests says more: these take 10 to
# 30 s under ASan on a 2-core host, two at a time.
slow="uzura-crw-test uzura-errors-test uzura-fault-test uzura-harden-test uzura-ops-test"
sline="slow_qtests += {$(printf "'%s': 180, " $slow | sed 's/, $//')} # uzura"
oline="qos_test_ss.add(files($(printf "'%s', " $qos_tests $(echo "$helpers" | grep -vx uzura-migrate.c) | sed 's/, $//'))) # uzura"
# qos-test's uzura cases on x86_64's graph machine (pc).  Their names
# have no '/': GLib's -p selects the cases of one suite, not deeper.
qos_path=/x86_64/pc/i440FX-pcihost/pci-bus-pc/pci-bus/uzura/uzura-tests
rline="test('qtest-x86_64/uzura-qos-test', qtest_executables['qos-test'], depends: [test_deps, qtest_emulator], env: qtest_env, args: ['--tap', '-k', '-p', '$qos_path'], protocol: 'tap', timeout: 120, suite: ['qtest', 'qtest-x86_64']) # uzura"
qmeson=$src/tests/qtest/meson.build
if ! grep -qxF -- "$qline" "$qmeson" || ! grep -qxF -- "$hline" "$qmeson" ||
   ! grep -qxF -- "$dline" "$qmeson" || ! grep -qxF -- "$sline" "$qmeson" ||
   ! grep -qxF -- "$oline" "$qmeson" || ! grep -qxF -- "$rline" "$qmeson"; then
	sed -i "/ # uzura\$/d; /^qtests_x86_64 += \['uzura-test'\]\$/d" "$qmeson"
	add_line "$qmeson" "qtests_x86_64 = qtests_i386" "$qline"
	awk -v s="$sline" -v o="$oline" '
		$0 == "qtests_generic = [" { print s }
		$0 == "if config_all_devices.has_key('"'"'CONFIG_VIRTIO_SERIAL'"'"')" { print o }
		{ print }' "$qmeson" > "$qmeson.new"
	mv "$qmeson.new" "$qmeson"
	echo "$rline" >> "$qmeson"
	# Before the loop that builds the qtests, after every qtests entry.
	awk -v h="$hline" -v d="$dline" '
		$0 == "qtest_executables = {}" { print h; print d }
		{ print }' "$qmeson" > "$qmeson.new"
	mv "$qmeson.new" "$qmeson"
	for l in "$dline" "$oline"; do
		grep -qxF -- "$l" "$qmeson" || { log "cannot edit $qmeson"; exit 1; }
	done
fi
add_line "$src/tests/qtest/libqos/meson.build" "        'igb.c'," \
	"        'uzura.c',"
[ "$copy" = 1 ] && exit 0

# The release build has KVM beside TCG (./uzura up probes which one the
# host can run); the sanitizer build runs qtests and the fuzzer, TCG only.
extra=(--enable-kvm) targets=()
if [ "$sanitize" = 1 ]; then
	extra=(--cc=clang --cxx=clang++ --enable-asan --enable-ubsan
	       --enable-fuzzing)
	targets=(qemu-fuzz-x86_64 tests/qtest/qos-test)
fi
conf=(--target-list=x86_64-softmmu --without-default-features
      --enable-slirp --enable-tcg --enable-fdt=system
      --disable-docs --disable-install-blobs --disable-werror
      "${extra[@]}" --python=/usr/bin/python3)
# Configure again when the options above change, not only the first time.
if [ ! -f "$build/build.ninja" ] ||
	[ "$(cat "$build/uzura-configure" 2>/dev/null)" != "${conf[*]}" ]; then
	log "configuring QEMU $(cat "$src/.uzura-version" 2>/dev/null) in $build"
	mkdir -p "$build"
	# ccache through the compiler wrappers Debian's ccache package installs.
	(cd "$build" && PATH=/usr/lib/ccache:$PATH "$src/configure" \
		"${conf[@]}" >configure.log 2>&1) || {
		tail -n 30 "$build/configure.log"; exit 1; }
	echo "${conf[*]}" > "$build/uzura-configure"
fi

# Firmware comes from Debian's seabios and qemu-system-data packages (the
# source package ships none).  QEMU run from the build directory, and so
# the qtests, looks for it in the bundle of the default prefix.
fw=$build/qemu-bundle/usr/local/share/qemu
mkdir -p "$fw"
for f in /usr/share/seabios/*.bin /usr/share/qemu/*.bin; do
	[ -e "$fw/$(basename "$f")" ] || ln -s "$f" "$fw/"
done

# Let ccache hit across clones: compile paths relative to the checkout.
export CCACHE_BASEDIR=$top CCACHE_NOHASHDIR=1

log "building (ninja)"
PATH=/usr/lib/ccache:$PATH ninja -C "$build" qemu-system-x86_64 "${targets[@]}" \
	$(printf 'tests/qtest/%s ' $tests) | tee "$build/uzura-ninja.log"
# The sanitizer build also has the shm link's ring fuzzer, a host program
# (tests/unit/shm-ring-fuzz.c; tests/fuzz-targets.sh).
if [ "$sanitize" = 1 ]; then
	ring_fuzz=$build/shm-ring-fuzz
	if [ ! -x "$ring_fuzz" ] ||
		[ "$top/tests/unit/shm-ring-fuzz.c" -nt "$ring_fuzz" ] ||
		[ "$top/net/shm-ring.h" -nt "$ring_fuzz" ]; then
		log "building shm-ring-fuzz"
		clang -g -O1 -Wall -Werror \
			-fsanitize=fuzzer,address,undefined \
			-fno-sanitize-recover=all -o "$ring_fuzz" \
			"$top/tests/unit/shm-ring-fuzz.c" || exit 1
	fi
fi
# QEMU's tree builds without -Werror; uzura's own files must be clean.
if grep -E '(hw/rdma/uzura/|tests/qtest/uzura|net/shm)[^ ]*:[0-9]+:[0-9]+: warning:' \
	"$build/uzura-ninja.log"; then
	log "warnings in uzura code"
	exit 1
fi
