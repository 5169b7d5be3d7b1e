# SPDX-License-Identifier: GPL-2.0-or-later
#
# Sourced by the cluster suites (tests/*-test.sh): the TAP helper, and shell
# snippets that the guests expand (quote them so the host does not).

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
uz=$top/uzura
n=0
fails=0

# t DESC CMD...: run CMD and print its TAP line.
t() {
	local desc=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $desc"
	else
		echo "not ok $n - $desc"
		fails=$((fails + 1))
	fi
}

# boot ARGS...: a cluster as './uzura up ARGS' boots it.  The first boot
# of ARGS is saved ('./uzura snapshot save'), and later ones resume that
# snapshot while this build can ('up --from'): the suite's nodes as they
# were just booted, in seconds.  The boot test boots for real, every time;
# UZURA_CHECK_BOOT=1 makes every suite do so.  The name covers what the
# launcher reads from the environment for a boot.
boot() {
	local name
	name=check-$(printf '%s\n' "$*" "${UZURA_MEM:-}" "${UZURA_SMP:-}" \
		"${UZURA_KERNEL_ARGS:-}" | sha256sum | cut -c 1-12)
	if [ -z "${UZURA_CHECK_BOOT:-}" ] &&
		"$uz" snapshot check "$name" 2> /dev/null; then
		"$uz" up --from "$name"
	else
		"$uz" up "$@" || return 1
		# A snapshot not saved (a full disk) costs the next suite a boot.
		"$uz" snapshot save "$name" ||
			echo "# the cluster is up, but not saved as $name"
	fi
}

# says CMD... -- TEXT: CMD fails, and what it prints contains TEXT.
says() {
	local args=() out
	while [ $# -gt 1 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
	[ "${1:-}" = -- ] || { echo "# says: no -- TEXT"; return 1; }
	out=$("${args[@]}" 2>&1) && return 1
	sed 's/^/# /' <<< "$out"
	grep -qF -- "$2" <<< "$out"
}

# On a node: the uzura netdev, the uzura ib_device (on a Soft-RoCE node of
# "./uzura up --rxe", its rxe0), and the index of the RoCE v2 GID of the
# node's 10.77.0.N (N from its hostname, nodeN; one grep reads the GID
# table: rxe's has 1024 entries, a process each takes seconds under TCG).
uzdev='$(for n in /sys/class/net/*; do d=$(readlink $n/device/driver) && [ "${d##*/}" = uzura ] && echo ${n##*/}; done)'
ibdev='$({ for d in /sys/class/infiniband/*; do
	[ "$(basename "$(readlink $d/device/driver)")" = uzura ] && echo ${d##*/}; done
	[ -s /run/uzura-rxe ] && [ -e /sys/class/infiniband/rxe0 ] && echo rxe0; } | head -n 1)'
gidx='$(p=/sys/class/infiniband/'"$ibdev"'/ports/1
	want=0000:0000:0000:0000:0000:ffff:0a4d:$(printf %04x $(hostname | tr -dc 0-9))
	for g in $(grep -lx $want $p/gids/*); do
		[ "$(cat $p/gid_attrs/types/${g##*/} 2>/dev/null)" = "RoCE v2" ] && echo ${g##*/}
	done | head -n 1)'

# migrated I: ./uzura migrate I, which must say it moved the node; its
# report to $log/migrate-N.log and out as comments.
moves=0
migrated() {
	moves=$((moves + 1))
	"$uz" migrate "$1" > "$log/migrate-$moves.log" 2>&1
	local rc=$?
	sed 's/^/# /' "$log/migrate-$moves.log"
	[ $rc -eq 0 ] && grep -q "^uzura: node $1 moved to QEMU pid" \
		"$log/migrate-$moves.log"
}

# serve NODE PORT NAME CMD: run CMD in the background on NODE, its output
# and then its exit status in /tmp/NAME.log and /tmp/NAME.rc, and wait
# up to a minute until something listens on PORT (TCP or UDP).
serve() {
	"$uz" run "$1" -- "rm -f /tmp/$3.rc
		( ( $4 ) > /tmp/$3.log 2>&1; echo \$? > /tmp/$3.rc ) < /dev/null > /dev/null 2>&1 &
		for k in \$(seq 120); do ss -ltun | grep -q ':$2 ' && exit 0; sleep 0.5; done
		echo 'server did not listen'; exit 1"
}

# start NODE NAME CMD: CMD in the background on NODE, detached from the
# ssh session (which ends when the node's QEMU does: migrate, snapshots), its output and then its status in /tmp/NAME.{log,rc}.
start() {
	"$uz" run "$1" -- "rm -f /tmp/$2.rc
		( ( $3 ) > /tmp/$2.log 2>&1; echo \$? > /tmp/$2.rc ) < /dev/null > /dev/null 2>&1 &"
}

# finished NODE NAME: wait (up to 3 minutes) for start's CMD to end; its
# output to $log/NAME.log; succeeds when it exited 0.
finished() {
	"$uz" run "$1" -- "for k in \$(seq 360); do [ -s /tmp/$2.rc ] && break; sleep 0.5; done
		cat /tmp/$2.log; exit \$(cat /tmp/$2.rc 2>/dev/null || echo 1)" \
		> "$log/$2.log" 2>&1
}

# serve_cm NODE NAME CMD: serve for a server of the RDMA CM (rping), which
# listens on no socket: wait until one of the node's CM IDs listens.
serve_cm() {
	"$uz" run "$1" -- "rm -f /tmp/$2.rc
		( ( $3 ) > /tmp/$2.log 2>&1; echo \$? > /tmp/$2.rc ) < /dev/null > /dev/null 2>&1 &
		for k in \$(seq 120); do rdma resource show cm_id | grep -q 'state LISTEN' && exit 0; sleep 0.5; done
		echo 'server did not listen'; exit 1"
}

# pair NAME SERVER-NODE PORT SERVER CLIENT: SERVER on its node (listening on
# TCP PORT), then CLIENT on the other node of two; both must exit 0.  The
# outputs go to $log/NAME.*, and on a failure also out as comments.
pair() {
	local name=$1 s=$2 c=$((3 - $2)) ok=1
	serve "$s" "$3" "$name" "timeout 120 $4" > "$log/$name.serve" 2>&1 || ok=0
	[ $ok = 1 ] && { "$uz" run "$c" -- "timeout 120 $5" > "$log/$name.client" 2>&1 || ok=0; }
	served "$s" "$name" > "$log/$name.server" 2>&1 || ok=0
	if [ $ok = 0 ]; then
		sed 's/^/# serve: /' "$log/$name.serve"
		sed 's/^/# client: /' "$log/$name.client" 2> /dev/null
		sed 's/^/# server: /' "$log/$name.server"
	fi
	[ $ok = 1 ]
}

# served NODE NAME: wait for the server of serve to end, print its output,
# and exit with its status.
served() {
	"$uz" run "$1" -- "for k in \$(seq 60); do [ -s /tmp/$2.rc ] && break; sleep 0.5; done
		cat /tmp/$2.log; exit \$(cat /tmp/$2.rc 2>/dev/null || echo 1)"
}

# kernel_quiet NODE: NODE's kernel log has something in it, and no
# warning, BUG or uzura error (those print as comments).
kernel_quiet() {
	local out
	out=$("$uz" run "$1" -- dmesg) && [ -n "$out" ] || return 1
	! grep -E 'WARNING:|BUG:|uzura [0-9a-f]{4}:.*(error|fail)' <<< "$out" |
		sed "s/^/# node $1: /" | grep .
}

# on NODE CMD: CMD on NODE, its output kept in $log/on.log, shown on failure.
on() {
	local rc
	"$uz" run "$1" -- "$2" > "$log/on.log" 2>&1
	rc=$?
	[ "$rc" = 0 ] || sed 's/^/# /' "$log/on.log" | tail -n 20
	return "$rc"
}

# NVMe over RDMA, set up as a user does with configfs and nvme-cli.
nqn=nqn.2026-11.org.uzura:ulp-test

# The target: a 64 MiB RAM disk as namespace 1, on port 4420 of 10.77.0.2.
nvmet_up() {
	on 2 'set -e
		modprobe brd rd_nr=1 rd_size=65536
		modprobe nvmet-rdma
		mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
		s=/sys/kernel/config/nvmet/subsystems/'"$nqn"'
		mkdir $s
		echo 1 > $s/attr_allow_any_host
		mkdir $s/namespaces/1
		echo -n /dev/ram0 > $s/namespaces/1/device_path
		echo 1 > $s/namespaces/1/enable
		p=/sys/kernel/config/nvmet/ports/1
		mkdir $p
		echo rdma > $p/addr_trtype
		echo ipv4 > $p/addr_adrfam
		echo 10.77.0.2 > $p/addr_traddr
		echo 4420 > $p/addr_trsvcid
		ln -s $s $p/subsystems/'"$nqn"
}

# The namespace's block device on node 1, by the subsystem's NQN (the
# multipath head nvmeXnY, not a controller's hidden path nvmeXcZnY).
nsdev='$(for b in /sys/block/nvme*n*; do case ${b##*/} in *c*) continue ;; esac
	[ "$(cat $b/device/subsysnqn 2>/dev/null)" = '"$nqn"' ] && echo /dev/${b##*/}
	done | head -n 1)'

nvme_connect() {
	on 1 'set -e
		modprobe nvme-rdma
		nvme connect -t rdma -a 10.77.0.2 -s 4420 -n '"$nqn"'
		for k in $(seq 40); do d='"$nsdev"'; [ -b "$d" ] && exit 0; sleep 0.5; done
		nvme list; exit 1'
}

# mpi_job NAME RANKS [--mpich] FILE ARGS...: run a program of
# tests/guest/mpi through './uzura mpirun' (log in $log/NAME-RANKS.log);
# its TAP lines become comments, and it must pass every check it printed
# (its exit status says so) and print no error line of UCX or MPICH.
mpi_job() {
	local name=$1 np=$2 out=$log/$1-$2.log rc
	shift 2
	timeout 900 "$uz" mpirun -n "$np" "$@" > "$out" 2>&1
	rc=$?
	sed -n -e 's/^not ok/# &/p' -e '/^# /p' "$out" | head -n 20
	echo "# $name, $np ranks: $(grep -c '^ok ' "$out") checks passed," \
	     "$(grep -c '^not ok ' "$out") failed," \
	     "$(grep -Ec "$mpi_errors" "$out") error lines"
	# A job that exits 0 while its libraries print errors has failed.
	grep -Em 3 "$mpi_errors" "$out" | sed 's/^/# error line: /'
	[ "$rc" -eq 0 ] && grep -q '^ok ' "$out" && ! grep -q '^not ok ' "$out" &&
		! grep -Eq "$mpi_errors" "$out"
}

# What UCX and MPICH print when something failed underneath.
mpi_errors='UCX +(ERROR|FATAL)|Fatal error in'

# tsh FILE ARGS...: tshark on the pcap FILE with IPv4 header checksums
# checked (a bad one is an expert error); fails as tshark does, on an
# unknown field or a bad file.
tsh() {
	local f=$1
	shift
	tshark -n -o ip.check_checksum:TRUE -r "$f" "$@" 2> /dev/null
}

# nframes FILE [TSHARK_OPTION...] FILTER: how many frames of FILE the
# display filter matches (nothing, and a failure, when tshark fails).
nframes() {
	local f=$1 out
	shift
	out=$(tsh "$f" "${@:1:$#-1}" -Y "${!#}") || return 1
	if [ -z "$out" ]; then echo 0; else wc -l <<< "$out"; fi
}

# pcap_icrc FILE: compute the ICRC of every RoCEv2 frame (IPv4, UDP port
# 4791) of the pcap FILE as the IBTA's RoCEv2 annex defines it (spec 9.7;
# Linux rxe computes the same) and compare it with the frame's; prints
# "N right, N wrong" and fails when one is wrong or there is none.
# tshark shows the ICRC but does not check it.
pcap_icrc() {
	python3 - "$1" <<'PY'
import struct, sys, zlib

d = open(sys.argv[1], "rb").read()
if struct.unpack("<I", d[:4])[0] != 0xa1b2c3d4 or d[20:24] != b"\x01\0\0\0":
    sys.exit("not a little-endian Ethernet pcap")
off, n, good, bad = 24, 0, 0, []
while off + 16 <= len(d):
    n += 1
    cap = struct.unpack("<I", d[off + 8:off + 12])[0]
    f = d[off + 16:off + 16 + cap]
    off += 16 + cap
    if (len(f) < 42 or f[12:14] != b"\x08\x00" or f[14] != 0x45 or
            f[23] != 17 or f[36:38] != b"\x12\xb7"):
        continue
    end = 14 + struct.unpack(">H", f[16:18])[0]
    if end > len(f) or end < 42 + 12 + 4:
        bad.append(n)
        continue
    # Masked: IPv4 TOS, TTL, checksum; UDP checksum; BTH byte 4.
    ip = bytearray(f[14:34])
    ip[1] = ip[8] = 0xff
    ip[10:12] = b"\xff\xff"
    udp = bytearray(f[34:42])
    udp[6:8] = b"\xff\xff"
    bth = bytearray(f[42:54])
    bth[4] = 0xff
    crc = zlib.crc32(b"\xff" * 8 + ip + udp + bth + f[54:end - 4])
    if crc == struct.unpack("<I", f[end - 4:end])[0]:
        good += 1
    else:
        bad.append(n)
print("%d right, %d wrong%s" % (good, len(bad),
      " (frames %s)" % " ".join(map(str, bad[:10])) if bad else ""))
sys.exit(1 if bad or not good else 0)
PY
}
