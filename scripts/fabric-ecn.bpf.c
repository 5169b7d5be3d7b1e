// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ECN marking at a fabric port for kernels without sch_red (the fabric,
 * docs/fabric.md): a tc egress classifier (clsact, direct action) on
 * portI, ahead of its tbf.  It keeps the queue a port of RATE bytes a
 * second would hold, a fluid queue that drains at RATE and grows by each
 * frame, and marks an ECN-capable IPv4 frame CE with a probability that
 * rises from 0 at KMIN bytes of queue to PMAX at KMAX and is 1 above: the
 * RED-ECN on the instantaneous queue that the DCQCN paper's switches run.
 * Unlike sch_red it drops nothing (tbf's limit does) and averages
 * nothing.  scripts/fabric.sh compiles it per port with the settings as
 * constants:
 *
 *   RATE_BPS   the port's rate in bytes a second
 *   KMIN, KMAX queue bytes
 *   PMAX_32    PMAX as a fraction of 2^32
 *   LIMIT      the tbf's queue limit in bytes: a frame that would take
 *              the queue past it is dropped there, so it is not counted
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <stddef.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct uz_ecn_state {
	struct bpf_spin_lock lock;
	__u64 queue;		/* bytes, as of last_ns */
	__u64 last_ns;
	__u64 marked;		/* frames marked CE */
	__u64 ect;		/* ECN-capable frames seen */
	__u64 over;		/* frames past LIMIT (tbf drops them) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uz_ecn_state);
} uz_ecn SEC(".maps");

SEC("tc")
int uz_ecn_mark(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);
	struct uz_ecn_state *s;
	__u32 key = 0, len = skb->len;
	__u64 now = bpf_ktime_get_ns(), delta, drained, q;
	__u8 tos;
	int mark = 0;

	s = bpf_map_lookup_elem(&uz_ecn, &key);
	if (!s)
		return TC_ACT_OK;
	bpf_spin_lock(&s->lock);
	/* In microseconds, so that a second at 400 Gbit/s fits in 64 bits. */
	delta = (now - s->last_ns) / 1000;
	drained = delta * RATE_BPS / 1000000;
	if (now < s->last_ns || delta >= 1000000 || drained >= s->queue)
		drained = s->queue;
	q = s->queue - drained;
	s->last_ns = now;
	if (q + len > LIMIT) {
		s->over++;
		s->queue = q;
		bpf_spin_unlock(&s->lock);
		return TC_ACT_OK;
	}
	q += len;
	s->queue = q;
	bpf_spin_unlock(&s->lock);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    !(ip->tos & 3))
		return TC_ACT_OK;
	__sync_fetch_and_add(&s->ect, 1);
	if (q >= KMAX)
		mark = 1;
	else if (q > KMIN)
		mark = bpf_get_prandom_u32() <
		       (__u64)PMAX_32 * (q - KMIN) / (KMAX - KMIN);
	if (!mark || (ip->tos & 3) == 3)
		return TC_ACT_OK;

	tos = ip->tos | 3;
	/* The checksum first: it covers the TOS byte's 16-bit word. */
	bpf_l3_csum_replace(skb, sizeof(*eth) + offsetof(struct iphdr, check),
			    bpf_htons(ip->tos), bpf_htons(tos), 2);
	bpf_skb_store_bytes(skb, sizeof(*eth) + offsetof(struct iphdr, tos),
			    &tos, 1, 0);
	__sync_fetch_and_add(&s->marked, 1);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
