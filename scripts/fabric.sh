# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash disable=SC2154
#
# Sourced by ./uzura: the switched fabric (docs/fabric.md).  The nodes'
# uzura links meet at a Linux bridge, one port per node, inside a network
# namespace of their own, so that nothing touches the host's network.
# Each node's QEMU opens a tap device in the host's namespace (QEMU's tap
# netdev finds it by name there); the launcher then moves it into the
# fabric's namespace, names it portI and makes it a port of the bridge,
# br0.  The queueing discipline on portI is the switch's output queue
# toward node I: a rate (tbf), a queue limit, ECN marking (RED, or where
# the kernel has no sch_red a BPF classifier that marks on the queue a
# port of that rate holds: scripts/fabric-ecn.bpf.c) and delay and loss
# (netem), set with './uzura fabric port I ...'.  The
# --virtio-link NICs get a bridge of their own, vbr0, with ports vportI.
#
# Uses from ./uzura: $state, die.

# The fabric's namespace: uzura-ID, ID from the cluster's state directory,
# so clusters of different checkouts (or a test's) can run side by side.
fabric_id() {
	printf '%s' "$(realpath -m "$state")" | sha1sum | cut -c1-6
}

fabric_ns() {
	echo "uzura-$(fabric_id)"
}

# fabric_tap I [v]: the name node I's tap starts with in the host's
# namespace (v: its --virtio-link NIC's), at most 15 characters.
fabric_tap() {
	echo "uz$(fabric_id)${2:-p}$1"
}

fip() {
	ip -n "$(fabric_ns)" "$@"
}

ftc() {
	tc -n "$(fabric_ns)" "$@"
}

# fabric_why_not: why this host cannot make the fabric, or nothing.
fabric_why_not() {
	local caps
	caps=$(awk '/^CapEff:/ { print $2 }' /proc/self/status)
	# CAP_NET_ADMIN is bit 12.
	if (( (0x${caps:-0} >> 12 & 1) == 0 )); then
		echo "it needs CAP_NET_ADMIN (run as root) for a network namespace, a bridge and tap devices"
	elif [ ! -c /dev/net/tun ]; then
		echo "there is no /dev/net/tun for the nodes' tap devices"
	elif ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
		echo "it needs ip and tc (Debian's iproute2)"
	elif ! ip netns add "uzura-probe$$" 2> /dev/null; then
		echo "this host does not let it create a network namespace"
	else
		ip netns del "uzura-probe$$"
	fi
}

# fabric_create VIRTIO [REMOTE...]: the namespace and its bridges; VIRTIO=1
# adds vbr0; each REMOTE, another host's underlay address, is reached by
# VXLAN from a port of br0, vxlan0.
fabric_create() {
	local ns br brs=br0 vx r dev mtu
	ns=$(fabric_ns)
	[ "$1" = 1 ] && brs="br0 vbr0"
	shift
	fabric_remove
	ip netns add "$ns" ||
		die "fabric: cannot create the network namespace $ns"
	# The switch speaks no IPv6 of its own to the nodes.
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
		net.ipv6.conf.all.disable_ipv6=1 2> /dev/null
	for br in $brs; do
		# No spanning tree and no forwarding delay: a port forwards as
		# soon as it is up.  Multicast goes to every port (RoCE UD
		# multicast joins no IGMP group the bridge could snoop).
		fip link add "$br" type bridge stp_state 0 forward_delay 0 \
			mcast_snooping 0 && fip link set "$br" up || {
			fabric_remove
			die "fabric: cannot create the bridge $br in $ns"
		}
	done
	fip link set lo up
	mkdir -p "$state/fabric"
	echo "$ns" > "$state/fabric/ns"
	[ $# -gt 0 ] || return 0
	# Made here, the VXLAN device's socket stays in the host's namespace
	# with the underlay when the device moves into the fabric's.  Frames
	# to a MAC it has not learned go to every remote host.
	vx=uz$(fabric_id)vx
	# The underlay: the device the route to the first remote leaves by,
	# which must carry the nodes' 9000-byte frames and VXLAN's 50.
	dev=$(ip route get "$1" 2> /dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')
	mtu=$(ip -o link show dev "${dev:-none}" 2> /dev/null |
		sed -n 's/.* mtu \([0-9]*\).*/\1/p')
	if [ -z "$mtu" ]; then
		fabric_remove
		die "fabric: no route to $1 for VXLAN"
	elif [ "$mtu" -lt 9050 ]; then
		fabric_remove
		die "fabric: the underlay $dev has MTU $mtu; VXLAN needs 9050 (the nodes' 9000-byte frames and 50 bytes of VXLAN)"
	fi
	ip link add "$vx" type vxlan id 7707 dstport 4789 dev "$dev" ||
		{ fabric_remove; die "fabric: cannot create the VXLAN device $vx"; }
	for r in "$@"; do
		bridge fdb append 00:00:00:00:00:00 dev "$vx" dst "$r" ||
			{ ip link del "$vx"; fabric_remove; die "fabric: cannot add $r to $vx"; }
	done
	ip link set "$vx" netns "$ns" && fip link set "$vx" name vxlan0 &&
		fip link set vxlan0 mtu 9000 master br0 up || {
		ip link del "$vx" 2> /dev/null
		fabric_remove
		die "fabric: cannot make VXLAN a port of br0 at MTU 9000 (the underlay's MTU must take 9050 bytes)"
	}
	echo "$*" > "$state/fabric/vxlan"
}

# fabric_attach I [v]: node I's tap (v: its virtio-link NIC's) becomes
# portI of br0 (vportI of vbr0), MTU 9000 as the nodes' NICs.
fabric_attach() {
	local i=$1 tap port br=br0 ns
	ns=$(fabric_ns)
	tap=$(fabric_tap "$i" "${2:-}")
	port=port$i
	[ -n "${2:-}" ] && port=vport$i && br=vbr0
	ip link set "$tap" netns "$ns" &&
		fip link set "$tap" name "$port" &&
		fip link set "$port" mtu 9000 master "$br" up || return 1
	[ -n "${2:-}" ] || fabric_apply "$i"
}

# A node that moves (./uzura migrate) gets a new QEMU and a new tap.
# fabric_spare I [v]: the new tap becomes a second port toward node I,
# spareI (vspareI), before the move: the switch keeps forwarding to the
# old port, whose MAC it learned, until the moved NIC sends from the new
# one.  fabric_take_over I [v]: once the old QEMU, and with it portI, is
# gone, the spare becomes portI, with the port's settings.
fabric_spare() {
	local i=$1 tap spare=spare$1 br=br0
	tap=$(fabric_tap "$i" "${2:-}")
	[ -n "${2:-}" ] && spare=vspare$i && br=vbr0
	ip link set "$tap" netns "$(fabric_ns)" &&
		fip link set "$tap" name "$spare" &&
		fip link set "$spare" mtu 9000 master "$br" up
}

fabric_take_over() {
	local i=$1 spare=spare$1 port=port$1 k
	[ -n "${2:-}" ] && spare=vspare$i && port=vport$i
	# The old tap goes when the kernel has closed the old QEMU's files.
	for k in $(seq 100); do
		fip link show "$port" > /dev/null 2>&1 || break
		sleep 0.1
	done
	# A port is renamed down; the bridge forwards again as it comes up.
	fip link set "$spare" down &&
		fip link set "$spare" name "$port" &&
		fip link set "$port" up || return 1
	[ -n "${2:-}" ] || fabric_apply "$i"
}

# fabric_remove: the namespace and all in it (the taps vanish with their
# QEMU processes).  Also what a launcher that crashed left.
fabric_remove() {
	local ns
	for ns in "$(cat "$state/fabric/ns" 2> /dev/null)" "$(fabric_ns)"; do
		[ -n "$ns" ] && ip netns list 2> /dev/null | grep -q "^$ns\\b" &&
			ip netns del "$ns"
	done
	# A VXLAN device a launcher made and did not get to move.
	ip link del "uz$(fabric_id)vx" 2> /dev/null
	rm -rf "$state/fabric"
}

fabric_on() {
	[ -s "$state/fabric/ns" ]
}

# Port settings, kept in $state/fabric/portI as NAME=VALUE lines:
#   rate=RATE       the port's rate, a tc rate (10gbit, 500mbit) or off
#   limit=SIZE      its queue limit in bytes (1m, 256k, 90000); with a
#                   rate and no limit, 1 MiB
#   ecn=KMIN,KMAX,PMAX
#                   RED marks ECN-capable frames CE with a probability
#                   that rises from 0 at KMIN bytes of average queue to
#                   PMAX (0..1) at KMAX, and drops the rest as RED does;
#                   without sch_red, the BPF marker marks on the queue
#                   a port of the rate holds, and drops nothing; or off
#   delay=TIME      netem's delay (100us, 2ms) or off
#   loss=PERCENT    netem's random loss (0.1%) or off
fabric_settings="rate limit ecn delay loss"

fabric_get() {
	local f
	f="$state/fabric/port$1"
	[ -f "$f" ] && sed -n "s/^$2=//p" "$f" | tail -n 1
}

# fabric_bytes SIZE: SIZE (k, m: KiB, MiB) in bytes, or nothing.
fabric_bytes() {
	local n=${1%[kKmM]} m=1
	case $1 in
	*[kK]) m=1024 ;;
	*[mM]) m=1048576 ;;
	esac
	[[ "$n" =~ ^[0-9]+$ ]] && echo $((10#$n * m))
}

# fabric_bits RATE: a tc rate in bits per second, or nothing.
fabric_bits() {
	awk -v r="$1" 'BEGIN {
		if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit
		n = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1)
		m["bit"] = 1; m["kbit"] = 1e3; m["mbit"] = 1e6; m["gbit"] = 1e9
		if (!(u in m)) exit
		printf "%.0f\n", n * m[u] }'
}

# fabric_check NAME VALUE: why VALUE is not a setting of NAME, or nothing.
fabric_check() {
	local v=$2 b k
	[ "$v" = off ] && return 0
	case $1 in
	rate)
		b=$(fabric_bits "$v")
		[ -n "$b" ] || { echo "rate=$v: not a rate (e.g. 10gbit, 500mbit)"; return; }
		{ [ "$b" -ge 1000000 ] && [ "$b" -le 400000000000 ]; } ||
			echo "rate=$v: out of range (1mbit..400gbit)" ;;
	limit)
		b=$(fabric_bytes "$v")
		[ -n "$b" ] || { echo "limit=$v: not a size in bytes (e.g. 1m, 256k, 90000)"; return; }
		{ [ "$b" -ge 9018 ] && [ "$b" -le $((1 << 30)) ]; } ||
			echo "limit=$v: out of range (9018 bytes, one frame, ..1g)" ;;
	ecn)
		[[ "$v" =~ ^([0-9]+[kKmM]?),([0-9]+[kKmM]?),(1|0?\.[0-9]*[1-9][0-9]*)$ ]] ||
			{ echo "ecn=$v: not KMIN,KMAX,PMAX with 0 < PMAX <= 1 (e.g. ecn=20k,200k,0.1)"; return; }
		k=$(fabric_bytes "${BASH_REMATCH[1]}")
		b=$(fabric_bytes "${BASH_REMATCH[2]}")
		{ [ "$k" -ge 1 ] && [ "$b" -gt "$k" ]; } ||
			echo "ecn=$v: KMIN must be at least 1 byte and KMAX above it" ;;
	delay)
		[[ "$v" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
			echo "delay=$v: not a time (e.g. 100us, 2ms)" ;;
	loss)
		[[ "$v" =~ ^([0-9]+(\.[0-9]+)?)%$ ]] &&
			awk -v p="${BASH_REMATCH[1]}" 'BEGIN { exit !(p <= 100) }' ||
			echo "loss=$v: not a percentage 0..100 (e.g. 0.1%)" ;;
	*)	echo "$1: not a port setting ($fabric_settings)" ;;
	esac
}

# fabric_has_red: whether this kernel has sch_red (probed once a fabric).
fabric_has_red() {
	local probe=uzprobe$$ r
	if [ ! -s "$state/fabric/red" ]; then
		r=no
		if fip link add "$probe" type dummy 2> /dev/null ||
			fip link add "$probe" type veth peer name "${probe}b"; then
			ftc qdisc add dev "$probe" root red limit 400000 min 30000 \
				max 90000 avpkt 1000 burst 55 probability 0.1 ecn \
				bandwidth 1gbit > /dev/null 2>&1 && r=yes
			fip link del "$probe" 2> /dev/null
		fi
		echo "$r" > "$state/fabric/red"
	fi
	[ "$(cat "$state/fabric/red")" = yes ]
}

# fabric_ecn_bpf I BITS LIMIT KMIN KMAX P: mark CE at node I's port with
# the BPF classifier, built for these settings (bits a second, bytes).
fabric_ecn_bpf() {
	local i=$1 obj="$state/fabric/ecn-port$1.o" p32
	p32=$(awk -v p="$6" 'BEGIN { printf "%.0f\n", p * 4294967295 }')
	clang -O2 -g -target bpf -I"/usr/include/$(uname -m)-linux-gnu" \
		-DRATE_BPS="$(($2 / 8))ull" -DLIMIT="$3ull" -DKMIN="$4ull" \
		-DKMAX="$5ull" -DPMAX_32="${p32}ull" \
		-c "$top/scripts/fabric-ecn.bpf.c" -o "$obj" || return 1
	ftc qdisc add dev "port$i" clsact &&
		ftc filter add dev "port$i" egress bpf da obj "$obj" sec tc
}

# fabric_apply I: node I's port's queueing discipline from its settings:
# netem (delay, loss) at the root, under it tbf (rate), under that RED
# (ecn) or a byte FIFO (limit).  With nothing set, the kernel's default.
# Without sch_red, ecn is the BPF marker ahead of the queue instead.
fabric_apply() {
	local i=$1 dev=port$1 parent=root rate limit ecn delay loss burst b
	local netem=() kmin kmax p fifo
	rate=$(fabric_get "$i" rate)
	limit=$(fabric_get "$i" limit)
	ecn=$(fabric_get "$i" ecn)
	delay=$(fabric_get "$i" delay)
	loss=$(fabric_get "$i" loss)
	[ "$rate" = off ] && rate=
	[ "$limit" = off ] && limit=
	[ "$ecn" = off ] && ecn=
	[ "$delay" = off ] && delay=
	[ "$loss" = off ] && loss=
	ftc qdisc del dev "$dev" root 2> /dev/null
	ftc qdisc del dev "$dev" clsact 2> /dev/null
	fifo=$limit
	limit=$(fabric_bytes "${limit:-1m}")
	if [ -n "$delay$loss" ]; then
		[ -n "$delay" ] && netem+=(delay "$delay")
		[ -n "$loss" ] && netem+=(loss "$loss")
		ftc qdisc add dev "$dev" root handle 1: netem "${netem[@]}" \
			limit 100000 || return 1
		parent="parent 1:1"
	fi
	if [ -n "$rate" ]; then
		# A bucket of at least a frame and a millisecond at the rate.
		b=$(fabric_bits "$rate")
		burst=$((b / 8000))
		[ "$burst" -ge 18036 ] || burst=18036
		# shellcheck disable=SC2086
		ftc qdisc add dev "$dev" $parent handle 2: tbf rate "$rate" \
			burst "$burst" limit "$limit" || return 1
		parent="parent 2:1"
	fi
	if [ -n "$ecn" ] && ! fabric_has_red; then
		IFS=, read -r kmin kmax p <<< "$ecn"
		kmin=$(fabric_bytes "$kmin")
		kmax=$(fabric_bytes "$kmax")
		b=$(fabric_bits "${rate:-10gbit}")
		fabric_ecn_bpf "$i" "$b" "$limit" "$kmin" "$kmax" "$p" ||
			return 1
		if [ -n "$fifo" ] && [ -z "$rate" ]; then
			# shellcheck disable=SC2086
			ftc qdisc add dev "$dev" $parent handle 3: bfifo \
				limit "$limit" || return 1
		fi
	elif [ -n "$ecn" ]; then
		IFS=, read -r kmin kmax p <<< "$ecn"
		kmin=$(fabric_bytes "$kmin")
		kmax=$(fabric_bytes "$kmax")
		[ "$limit" -gt "$kmax" ] || limit=$((kmax * 2))
		# shellcheck disable=SC2086
		ftc qdisc add dev "$dev" $parent handle 3: red limit "$limit" \
			min "$kmin" max "$kmax" avpkt 4096 \
			burst $(((2 * kmin + kmax) / 3 / 4096 + 1)) \
			probability "$p" bandwidth "${rate:-10gbit}" ecn ||
			return 1
	elif [ -n "$fifo" ] && [ -z "$rate" ]; then
		# shellcheck disable=SC2086
		ftc qdisc add dev "$dev" $parent handle 3: bfifo \
			limit "$limit" || return 1
	fi
}

# fabric_qdisc_missing: the first qdisc of SETTINGS (NAME=VALUE words)
# this kernel lacks, as "netem (delay, loss)" and the like.
fabric_qdisc_missing() {
	local kinds=() k ns probe=uzprobe$$
	ns=$(fabric_ns)
	case " $* " in *" delay="[!o]*|*" loss="[!o]*) kinds+=(netem) ;; esac
	# Without sch_red, ecn= is the BPF marker, which needs clang.
	case " $* " in *" ecn="[!o]*)
		fabric_has_red || command -v clang > /dev/null || kinds+=(red) ;;
	esac
	[ ${#kinds[@]} -gt 0 ] || return 0
	fip link add "$probe" type dummy 2> /dev/null ||
		fip link add "$probe" type veth peer name "${probe}b" || return 0
	for k in "${kinds[@]}"; do
		case $k in
		netem) ftc qdisc add dev "$probe" root netem delay 1ms ;;
		red) ftc qdisc add dev "$probe" root red limit 400000 min 30000 \
			max 90000 avpkt 1000 burst 55 probability 0.1 ecn \
			bandwidth 1gbit ;;
		esac > /dev/null 2>&1 || { echo "$k"; break; }
		ftc qdisc del dev "$probe" root 2> /dev/null
	done
	fip link del "$probe" 2> /dev/null
}

# fabric_port I NAME=VALUE...: set node I's port; all or nothing.
fabric_port() {
	local i=$1 a why f old missing
	shift
	f="$state/fabric/port$i"
	for a in "$@"; do
		[[ "$a" == *=* ]] || die "fabric port: $a: not NAME=VALUE ($fabric_settings)"
		why=$(fabric_check "${a%%=*}" "${a#*=}")
		[ -z "$why" ] || die "fabric port $i: $why; nothing changed"
	done
	missing=$(fabric_qdisc_missing "$@")
	[ -z "$missing" ] ||
		die "fabric port $i: this kernel has no $missing queueing discipline (sch_$missing), which $( [ "$missing" = red ] && echo "ecn= needs" || echo "delay= and loss= need"); nothing changed"
	old=$(cat "$f" 2> /dev/null)
	for a in "$@"; do
		echo "$a" >> "$f"
	done
	if ! fabric_apply "$i" 2> "$state/fabric/tc.err"; then
		printf '%s' "$old" > "$f"
		[ -n "$old" ] || rm -f "$f"
		fabric_apply "$i" 2> /dev/null
		die "fabric port $i: tc refused it: $(head -n 1 "$state/fabric/tc.err"); nothing changed"
	fi
	# Keep the last value of each.
	for a in $fabric_settings; do
		old=$(fabric_get "$i" "$a")
		[ -z "$old" ] || echo "$a=$old"
	done > "$f.new"
	mv "$f.new" "$f"
}

# fabric_ecn_show I: the BPF marker's queue and counts at node I's port.
fabric_ecn_show() {
	local id
	command -v bpftool > /dev/null || return 0
	id=$(ip netns exec "$(fabric_ns)" bpftool -j net show dev "port$1" |
		python3 -c 'import json, sys
for d in json.load(sys.stdin):
    for t in d.get("tc", []):
        if t.get("kind") == "clsact/egress": print(t["id"])' | head -n 1)
	[ -n "$id" ] || return 0
	bpftool -j prog show id "$id" | python3 -c '
import json, subprocess, sys
for m in json.load(sys.stdin).get("map_ids", []):
    info = json.loads(subprocess.check_output(
        ["bpftool", "-j", "map", "show", "id", str(m)]))
    if info.get("name") != "uz_ecn":
        continue
    e = json.loads(subprocess.check_output(
        ["bpftool", "-j", "map", "dump", "id", str(m)]))[0]
    s = e.get("formatted", e)["value"]
    print("    ecn marker (bpf): queue %d bytes, %d ECN-capable frames, "
          "%d marked CE, %d past the limit" %
          (s["queue"], s["ect"], s["marked"], s["over"]))'
}

# fabric_show I...: the ports of nodes I: settings, queue and counters
# (tc -s); the VXLAN port; the bridge's forwarding table.
fabric_show() {
	local i s v
	echo "fabric: bridge br0 in network namespace $(fabric_ns)" \
	     "(ip netns exec $(fabric_ns) tc|bridge|ip ...)"
	[ -s "$state/fabric/vxlan" ] &&
		echo "vxlan0: VNI 7707 to $(cat "$state/fabric/vxlan")"
	for i in "$@"; do
		s=
		for v in $fabric_settings; do
			s="$s $v=$(fabric_get "$i" "$v")"
			[ -n "$(fabric_get "$i" "$v")" ] || s="${s}off"
		done
		echo "port$i (to node $i):$s"
		ftc -s qdisc show dev "port$i" 2> /dev/null | sed 's/^/    /'
		ftc filter show dev "port$i" egress 2> /dev/null |
			grep -q uz_ecn_mark && fabric_ecn_show "$i"
	done
	echo "forwarding table (learned MACs):"
	ip netns exec "$(fabric_ns)" bridge fdb show br br0 2> /dev/null |
		grep -v permanent | sed 's/^/    /'
}
