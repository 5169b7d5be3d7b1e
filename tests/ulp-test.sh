#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The kernel's own RDMA users on uzura, and the RDMA CM tools, between two
# nodes, as a user sets them up with the distribution's tools:
# - NVMe over RDMA: node 2 exports a RAM-backed namespace (brd) through
#   nvmet-rdma, node 1 runs 'nvme connect -t rdma', fio writes and reads
#   back with verify=crc32c; then the link goes down under I/O, the host
#   reconnects, fio's verify passes; fio killed under I/O leaves the
#   controller live; 'nvme disconnect' ends it.  These
#   use fast registration (REG_MR, LOCAL_INV, SEND with invalidate).
# - iSCSI over RDMA: LIO's iSER target (ib_isert, configured through
#   configfs) on node 2, open-iscsi's iser interface on node 1: 200 MiB
#   checksummed, fio with verify=crc32c, logout and a second login;
#   neither kernel may warn, and no send of the target's may fail.
# - NFS over RDMA: node 2 serves a tmpfs over rpcrdma (port 20049), node 1
#   mounts it with '-o rdma,port=20049' and copies files both ways, their
#   SHA-256 checked on the other side.
# - RDS over rds_rdma: a PF_RDS message each way (Python's socket module).
# - rdma_server/rdma_client, ucmatose and udaddy of rdmacm-utils.
# Speaks TAP.
# The commands for the guests are in single quotes on purpose:
# shellcheck disable=SC2016
set -uo pipefail

. "$(dirname "$0")/lib.sh"

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

# ---- NVMe over RDMA (the target and the connection: tests/lib.sh)

nvme_transport_rdma() {
	on 1 'for c in /sys/class/nvme/nvme*; do
		[ "$(cat $c/subsysnqn)" = '"$nqn"' ] && [ "$(cat $c/transport)" = rdma ] &&
		[ "$(cat $c/state)" = live ] && exit 0; done; exit 1'
}

# fio ARGS: a fio job on the namespace, verify=crc32c, at most 5 minutes.
fio_ns() {
	on 1 "d=$nsdev"'; [ -b "$d" ] || exit 1
		timeout 300 fio --name=uzura --filename=$d --direct=1 \
			--ioengine=libaio --verify=crc32c --verify_fatal=1 \
			--output=/tmp/fio.out '"$*"'; rc=$?
		grep -E "err=|IOPS=|verify" /tmp/fio.out | head -n 6; exit $rc'
}

# The link of node 1 goes down for 4 s in the middle of a fio job: the
# host's QPs fail, it reconnects, and fio's writes and verify complete.
flap_under_io() {
	local ok=1
	"$uz" run 1 -- "d=$nsdev"'; rm -f /tmp/fio.rc
		( timeout 300 fio --name=flap --filename=$d --direct=1 --ioengine=libaio \
			--rw=randwrite --bs=4k --iodepth=8 --size=24M --verify=crc32c \
			--verify_fatal=1 --output=/tmp/fio-flap.out; echo $? > /tmp/fio.rc ) \
			< /dev/null > /dev/null 2>&1 &' || return 1
	sleep 3
	"$uz" fault 1 flap=4000 > /dev/null || ok=0
	on 1 'for k in $(seq 300); do [ -s /tmp/fio.rc ] && break; sleep 1; done
		grep -E "err=|IOPS=" /tmp/fio-flap.out | head -n 4
		dmesg | grep -E "nvme nvme[0-9]+: (starting error recovery|Successfully reconnected)" |
			sed "s/^/# /"
		dmesg | grep -q "Successfully reconnected" && [ "$(cat /tmp/fio.rc)" = 0 ]' || ok=0
	"$uz" fault 1 flap=off > /dev/null
	[ $ok = 1 ]
}

# fio killed with SIGKILL in the middle of its I/O: the controller stays
# live, and the next job's writes and verify pass.
killed_under_io() {
	on 1 "d=$nsdev"'; [ -b "$d" ] || exit 1
		timeout 120 fio --name=killed --filename=$d --direct=1 --ioengine=libaio \
			--rw=randwrite --bs=64k --iodepth=16 --size=32M --time_based \
			--runtime=60 > /dev/null 2>&1 &
		sleep 3; pkill -9 -x fio; wait
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat $c/subsysnqn)" = '"$nqn"' ] && [ "$(cat $c/state)" = live ] && exit 0
		done; exit 1' &&
		fio_ns --rw=randwrite --bs=16k --iodepth=8 --size=8M
}

# ---- iSCSI over RDMA (iSER)

iqn=iqn.2026-11.org.uzura:ulp-test

# The target: LIO through configfs, as targetcli drives it: a 256 MiB RAM
# disk (rd_mcp) as LUN 0 of a portal on 10.77.0.2:3260 with iSER on, any
# initiator let in without CHAP.
iser_target_up() {
	"$uz" run 1 -- 'echo uzura-test: iser starts > /dev/kmsg' &&
		on 2 'set -e
		echo uzura-test: iser starts > /dev/kmsg
		modprobe ib_isert
		mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
		b=/sys/kernel/config/target/core/rd_mcp_0/disk0
		mkdir -p $b
		echo rd_pages=65536 > $b/control
		echo 1 > $b/enable
		t=/sys/kernel/config/target/iscsi/'"$iqn"'/tpgt_1
		mkdir -p $t/lun/lun_0 $t/np/10.77.0.2:3260
		ln -s $b $t/lun/lun_0/disk0
		echo 1 > $t/np/10.77.0.2:3260/iser
		echo 1 > $t/attrib/generate_node_acls
		echo 0 > $t/attrib/authentication
		echo 0 > $t/attrib/demo_mode_write_protect
		echo 1 > $t/enable
		grep -q 1 $t/np/10.77.0.2:3260/iser'
}

# The session's disk on node 1, as open-iscsi names it.
iser_disk='$(iscsiadm -m session -P 3 2>/dev/null |
	sed -n "s/.*Attached scsi disk \([a-z]*\).*/\/dev\/\1/p" | head -n 1)'

# open-iscsi's initiator (iscsid, iscsiadm) with its iser interface:
# discovery (over TCP, as always), then the login over iSER.
iser_login() {
	on 1 'set -e
		modprobe ib_iser
		modprobe sd_mod
		[ -s /etc/iscsi/initiatorname.iscsi.uzura ] ||
			echo "InitiatorName=$(iscsi-iname)" > /etc/iscsi/initiatorname.iscsi.uzura
		cp /etc/iscsi/initiatorname.iscsi.uzura /etc/iscsi/initiatorname.iscsi
		mkdir -p /run/lock/iscsi
		pgrep -x iscsid > /dev/null || iscsid
		timeout 60 iscsiadm -m discovery -t st -p 10.77.0.2:3260 -I iser > /dev/null
		timeout 120 iscsiadm -m node -T '"$iqn"' -p 10.77.0.2:3260 -I iser --login
		iscsiadm -m session | grep "^iser: .* 10.77.0.2:3260,1 '"$iqn"'"
		for k in $(seq 60); do d='"$iser_disk"'; [ -b "$d" ] && exit 0; sleep 0.5; done
		iscsiadm -m session -P 3; exit 1'
}

# 200 MiB of random bytes written to the disk and read back (both with
# O_DIRECT): the SHA-256 agree.
iser_copy() {
	on 1 "d=$iser_disk"'; [ -b "$d" ] || exit 1
		head -c 200M /dev/urandom > /root/iser.bin
		timeout 300 dd if=/root/iser.bin of=$d bs=1M oflag=direct conv=fsync status=none
		a=$(sha256sum < /root/iser.bin)
		b=$(timeout 300 dd if=$d bs=1M count=200 iflag=direct status=none | sha256sum)
		rm -f /root/iser.bin
		echo "# written ${a%% *}, read back ${b%% *}"
		[ "$a" = "$b" ]'
}

iser_fio() {
	on 1 "d=$iser_disk"'; [ -b "$d" ] || exit 1
		timeout 300 fio --name=iser --filename=$d --direct=1 --ioengine=libaio \
			--rw=randwrite --bsrange=4k-256k --iodepth=16 --size=64M \
			--verify=crc32c --verify_fatal=1 --output=/tmp/fio-iser.out; rc=$?
		grep -E "err=|IOPS=|verify" /tmp/fio-iser.out | head -n 4; exit $rc'
}

iser_logout() {
	on 1 'timeout 120 iscsiadm -m node -T '"$iqn"' -p 10.77.0.2:3260 --logout &&
		! iscsiadm -m session 2> /dev/null | grep -q '"$iqn"
}

# Neither kernel logged a warning or an oops, and no send of the target's
# completed in error: with the disconnect, only receive buffers and
# what was still queued are flushed, never a response the initiator
# took (which is how LIO came to free its logout command twice).
iser_clean() {
	local n ok=1
	for n in 1 2; do
		"$uz" run $n -- 'dmesg | sed -n "/uzura-test: iser starts/,\$p"' \
			> "$log/dmesg.$n" 2>&1 || ok=0
		if grep -E "WARNING:|BUG:|Oops|Call Trace|isert: isert_print_wc: send failure" \
			"$log/dmesg.$n" > "$log/bad.$n"; then
			sed "s/^/# node $n: /" "$log/bad.$n" | head -n 20
			ok=0
		fi
	done
	[ $ok = 1 ]
}

# ---- NFS over RDMA

nfsd_up() {
	on 2 'set -e
		modprobe rpcrdma
		mkdir -p /export
		mountpoint -q /export || mount -t tmpfs -o size=96m tmpfs /export
		echo "/export 10.77.0.0/24(rw,no_root_squash,insecure,fsid=1)" > /etc/exports
		mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
		rpcbind -w
		exportfs -ra
		rpc.mountd
		# A short grace period: the first OPEN need not wait 90 s.
		echo 10 > /proc/fs/nfsd/nfsv4gracetime
		echo 10 > /proc/fs/nfsd/nfsv4leasetime
		rpc.nfsd 4
		echo rdma 20049 > /proc/fs/nfsd/portlist
		grep -q "^rdma 20049" /proc/fs/nfsd/portlist'
}

nfs_mount() {
	on 1 'set -e
		mkdir -p /mnt/nfs
		mount -t nfs -o rdma,port=20049 10.77.0.2:/export /mnt/nfs
		grep " /mnt/nfs nfs4 .*proto=rdma,port=20049" /proc/mounts'
}

# copy_check FROM-NODE SRC DST-NODE DST: the SHA-256 of SRC on FROM-NODE
# and of DST on DST-NODE agree.
sums_equal() {
	local a b
	a=$("$uz" run "$1" -- "sha256sum < $2" 2> /dev/null) || return 1
	b=$("$uz" run "$3" -- "sha256sum < $4" 2> /dev/null) || return 1
	echo "# $2 on node $1: ${a%% *}; $4 on node $3: ${b%% *}"
	[ -n "$a" ] && [ "$a" = "$b" ]
}

nfs_write() {
	on 1 'head -c 24M /dev/urandom > /root/out.bin && timeout 300 cp /root/out.bin /mnt/nfs/out.bin && sync' &&
		sums_equal 1 /root/out.bin 2 /export/out.bin
}

nfs_read() {
	on 2 'head -c 24M /dev/urandom > /export/in.bin' &&
		on 1 'echo 3 > /proc/sys/vm/drop_caches; timeout 300 cp /mnt/nfs/in.bin /root/in.bin' &&
		sums_equal 2 /export/in.bin 1 /root/in.bin
}

# ---- RDS

# rds NODE ADDR PEER: a PF_RDS socket on ADDR:18634 sends to PEER and
# waits for PEER's message (each node runs one; whoever starts first
# waits for the other).
rds_py='
import socket, sys
me, peer = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
s.bind((me, 18634))
s.settimeout(120)
msg = ("rds from " + me).encode()
for _ in range(120):
    try:
        s.sendto(msg, (peer, 18634))
        break
    except OSError:
        import time
        time.sleep(1)
data, src = s.recvfrom(1024)
print(data.decode(), "via", src[0])
assert data == ("rds from " + peer).encode()
s.sendto(msg, (peer, 18634))
'

rds_exchange() {
	local ok=1
	on 1 'modprobe rds_rdma' && on 2 'modprobe rds_rdma' || return 1
	"$uz" run 2 -- "rm -f /tmp/rds.rc; ( timeout 150 python3 -c '$rds_py' 10.77.0.2 10.77.0.1 > /tmp/rds.log 2>&1;
		echo \$? > /tmp/rds.rc ) < /dev/null > /dev/null 2>&1 &" || return 1
	on 1 "timeout 150 python3 -c '$rds_py' 10.77.0.1 10.77.0.2" || ok=0
	on 2 'for k in $(seq 120); do [ -s /tmp/rds.rc ] && break; sleep 0.5; done
		cat /tmp/rds.log; exit $(cat /tmp/rds.rc)' || ok=0
	[ $ok = 1 ]
}

# After the exchange: RDS took uzura0, and its connection's RC QP (made
# through the kernel's RDMA CM) is there, NVMe and NFS being gone.
rds_on_ib() {
	on 1 'dmesg | grep -q "RDS/IB: uzura0: added" &&
		rdma resource show qp | grep -q "link uzura0/1 .* type RC state RTS .*comm \[rdma_cm\]"'
}

# ---- rdmacm-utils

# cm_pair NAME PORT SERVER CLIENT: SERVER on node 2 until its CM ID listens
# on PORT, CLIENT on node 1; both must exit 0.
cm_pair() {
	local name=$1 port=$2 ok=1
	"$uz" run 2 -- "rm -f /tmp/$name.rc
		( timeout 120 $3 > /tmp/$name.log 2>&1; echo \$? > /tmp/$name.rc ) < /dev/null > /dev/null 2>&1 &
		for k in \$(seq 120); do
			rdma resource show cm_id | grep -q 'state LISTEN.* src-addr [0-9.]*:$port ' && exit 0
			sleep 0.5
		done; exit 1" > "$log/$name.serve" 2>&1 || ok=0
	[ $ok = 1 ] && { on 1 "timeout 120 $4" || ok=0; }
	on 2 "for k in \$(seq 60); do [ -s /tmp/$name.rc ] && break; sleep 0.5; done
		cat /tmp/$name.log; exit \$(cat /tmp/$name.rc 2>/dev/null || echo 1)" || ok=0
	[ $ok = 1 ]
}

# mckey_group: a member on node 2 joins 230.77.0.9 through the RDMA CM
# and is killed (SIGKILL) while it waits; then a member on each node joins
# and waits for datagrams (stdout line-buffered to see it ready), and a
# sender on node 1 sends 10 to the group; both members must get all 10,
# node 1's through the NIC's loopback, node 2's over the link.
mckey_group() {
	local n ok=1
	on 2 "( timeout 90 stdbuf -oL mckey -m 230.77.0.9 -b 10.77.0.2 -C 10 > /tmp/mckey-killed.log 2>&1 & ) < /dev/null > /dev/null 2>&1
		for k in \$(seq 120); do
			grep -q 'receiving data' /tmp/mckey-killed.log && break
			sleep 0.5
		done
		pkill -KILL -x mckey
		for k in \$(seq 20); do pgrep -x mckey > /dev/null || exit 0; sleep 0.5; done
		exit 1" || ok=0
	for n in 1 2; do
		on $n "rm -f /tmp/mckey.log /tmp/mckey.rc
			( timeout 90 stdbuf -oL mckey -m 230.77.0.9 -b 10.77.0.$n -C 10 > /tmp/mckey.log 2>&1; echo \$? > /tmp/mckey.rc ) < /dev/null > /dev/null 2>&1 &
			for k in \$(seq 120); do
				grep -q 'receiving data' /tmp/mckey.log && exit 0
				sleep 0.5
			done; exit 1" || ok=0
	done
	[ $ok = 1 ] && { on 1 "timeout 60 mckey -m 230.77.0.9 -b 10.77.0.1 -s -C 10" || ok=0; }
	for n in 1 2; do
		on $n "for k in \$(seq 60); do [ -s /tmp/mckey.rc ] && break; sleep 0.5; done
			cat /tmp/mckey.log; exit \$(cat /tmp/mckey.rc 2>/dev/null || echo 1)" || ok=0
	done
	[ $ok = 1 ]
}

"$uz" down > /dev/null 2>&1
t "two nodes boot" boot -n 2

t "nvmet-rdma on node 2 exports a 64 MiB RAM disk on 10.77.0.2:4420" nvmet_up
t "node 1: nvme connect -t rdma finds the namespace" nvme_connect
t "node 1: the controller is live over transport rdma" nvme_transport_rdma
t "fio: 32 MiB of random 4-128 KiB writes, read back with verify=crc32c" \
	fio_ns --rw=randwrite --bsrange=4k-128k --iodepth=16 --size=32M
t "fio: sequential 1 MiB writes and reads (several fast-registered pages each), verified" \
	fio_ns --rw=write --bs=1M --iodepth=4 --size=32M
t "the link goes down 4 s under fio: the host reconnects, writes and verify complete" \
	flap_under_io
t "fio killed (SIGKILL) under I/O: the controller stays live, the next fio verifies" \
	killed_under_io
t "node 1: nvme disconnect" on 1 "nvme disconnect -n $nqn | grep -q 'disconnected 1'"

t "LIO on node 2 exports a 256 MiB RAM disk over iSER on 10.77.0.2:3260" \
	iser_target_up
t "node 1: iscsiadm logs in over the iser interface; the disk appears" \
	iser_login
t "200 MiB written to the iSCSI disk and read back: the SHA-256 agree" iser_copy
t "fio: 64 MiB of random 4-256 KiB writes, read back with verify=crc32c" iser_fio
t "node 1: iscsiadm --logout ends the session" iser_logout
t "... and logs in and out again" eval 'iser_login && iser_logout'
t "neither node's kernel warned, and no iSER send failed" iser_clean

t "node 2 serves NFS over RDMA (rpcrdma, port 20049)" nfsd_up
t "node 1: mount -o rdma,port=20049 (NFS 4.2, proto=rdma)" nfs_mount
t "24 MiB copied to the server: the SHA-256 agree" nfs_write
t "24 MiB copied from the server: the SHA-256 agree" nfs_read
t "node 1: umount" on 1 'umount /mnt/nfs'

t "RDS: a message each way over rds_rdma" rds_exchange
t "... through uzura0: RDS/IB added it, and holds an RC QP on it" rds_on_ib

t "rdma_server / rdma_client" cm_pair rdma_server 7471 "rdma_server -p 7471" \
	"rdma_client -s 10.77.0.2 -p 7471"
t "ucmatose: RC connections, data both ways" cm_pair ucmatose 7472 \
	"ucmatose -p 7472" "ucmatose -s 10.77.0.2 -p 7472"
t "udaddy: UD over the RDMA CM, data both ways" cm_pair udaddy 7174 "udaddy" \
	"udaddy -s 10.77.0.2"
t "mckey: a member killed while it waits; then a sender on node 1, members on both nodes get its 10 datagrams" \
	mckey_group

"$uz" down
t "down leaves no cluster state" [ ! -e "${UZURA_BUILD:-$top/build}/cluster" ]

echo "1..$n"
[ "$fails" -eq 0 ]
