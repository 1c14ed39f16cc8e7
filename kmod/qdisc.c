// SPDX-License-Identifier: GPL-2.0
/*
 * qdisc.c - the gappace queueing discipline: wire-clock pacing with gap frames.
 *
 * Algorithm (the arithmetic lives in pace_core.h, shared with the unit tests):
 *
 *  - The qdisc is the root of an Ethernet device and keeps a *wire clock*:
 *    the wire bytes (frame + FCS + preamble + IPG, minimum frame padded) of
 *    everything it has handed to the device. While it has backlog it never
 *    returns NULL from dequeue: if no data frame may go yet, it returns a gap
 *    frame, an 802.3x PAUSE frame with pause_time 0 that the next switch
 *    discards. The device then transmits back to back and the wire clock is
 *    the real time of the wire, exact to the byte, without any timer.
 *
 *  - Flow rules map destination prefixes (longest match) to rates. Each rule
 *    has its own FIFO and a schedule: after a frame of w wire bytes its next
 *    frame may start w * linkrate / rate byte times after this frame's
 *    scheduled start. Backlogged rules sit in an rbtree by that time; the
 *    earliest one is served when its time has come (earliest deadline first).
 *    Traffic matching no rule is unpaced and FIFO.
 *
 *  - Groups: the rules of one group share one FIFO and schedule (struct
 *    gp_flow), at the rate last set for any of them. Destinations behind one
 *    bottleneck paced as a group are work-conserving among themselves: one
 *    with nothing queued leaves its share to the others, not to gap frames.
 *
 *  - dequeue: an eligible paced frame goes first (it has a deadline), then
 *    unpaced traffic; if nothing may go, gap frames fill exactly the byte
 *    times up to the earliest deadline. A remainder too short for a gap frame
 *    (< 84 byte times) is carried into the next gap. Unpaced traffic keeps a
 *    guaranteed share when paced rates are overcommitted (pace_core.h).
 *
 *  - IFG mode: option `ifg` puts ifg - 12 extra byte times of gap after every
 *    data frame, paced or not (the device-wide pacing of PSPacer), also after
 *    the last frame of a burst, so that the gap is on the wire and in the
 *    counters by the time the burst's sender returns.
 *
 *  - Idle: when the queue was empty, the wire may have been idle. On the next
 *    enqueue the clock moves forward to real time (ktime converted with the
 *    link rate), never back; a rule that had nothing queued restarts from the
 *    clock. Idle time thus neither accumulates credit (no burst) nor debt.
 *
 *  - GSO: packets of paced rules are segmented at enqueue so gaps sit between
 *    MTU frames; so is every GSO packet in IFG mode, whose gap follows every
 *    frame. Otherwise unpaced GSO packets pass whole (their wire cost is
 *    counted per segment).
 *
 *  - Lookahead (option, for devices without back-pressure): a NIC takes
 *    frames only as its ring drains, so the wire clock stays within a ring of
 *    real time. A veth or ifb takes everything at once; there dequeue refuses
 *    to run the clock more than `lookahead` ns ahead of real time and arms a
 *    watchdog for when it may go on, so that unpaced frames (ACKs) never wait
 *    behind more than `lookahead` of gaps queued further down.
 *
 *  - One TX queue: every frame is mapped to TX queue 0, so gaps and data share
 *    one ring and leave in the order the qdisc chose. On a multi-queue NIC the
 *    other queues stay unused while gappace is the root: that is the price of a
 *    single wire clock (see Documentation/pacing.md).
 *
 * Locking: enqueue/dequeue run under the qdisc lock. Rule changes come from
 * generic netlink under RTNL (which keeps the qdisc alive) and take the qdisc
 * tree lock around the change.
 */
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/hash.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/rbtree.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <net/ipv6.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <uapi/linux/gappace.h>

#include "compat.h"
#include "gappace.h"
#include "pace_core.h"

#define GP_RULE_HASH_BITS	8
#define GP_GROUP_HASH_BITS	6
#define GP_LIMIT_DEFAULT	1000U
#define GP_LIMIT_MAX		(1U << 20)

/* IEEE 802.3x MAC control: PAUSE to the reserved multicast address. */
static const u8 gp_pause_dst[ETH_ALEN] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };
#define GP_PAUSE_OPCODE		0x0001

/*
 * A schedule: one FIFO paced at one rate. Every rule has one; the rules of a
 * group (GAPPACE_A_RULE_GROUP) share their group's, so that the destinations
 * behind one bottleneck are paced together: one of them that has nothing to
 * send leaves its share to the others instead of to idle gap frames.
 */
struct gp_flow {
	struct hlist_node group_node;	/* in gp_sched_data.group_hash, if group */
	struct rb_node tree_node;	/* in gp_sched_data.backlogged while qlen > 0 */
	struct sk_buff *head, *tail;
	u32 qlen;
	struct gp_flow_clock clock;
	u64 rate;
	u64 first_start;		/* wire time of the first frame since (re)set */
	u64 last_end;			/* wire time at the end of the last frame */
	bool started;
	struct gp_counters stats;
	u32 group;			/* 0: the schedule of one rule */
	u32 users;			/* rules that classify into it */
};

/* A destination prefix and the schedule its packets join. */
struct gp_rule {
	struct hlist_node hash_node;	/* in gp_sched_data.rule_hash */
	struct list_head list;		/* in gp_sched_data.rules, insertion order */
	struct gp_prefix prefix;
	struct gp_flow *flow;
	u32 owner_portid;		/* the lease: the netlink socket that set the rule */
	u64 lease_stamp;		/* gp_lease_stamp() when it set the rule */
};

/* Rules on all devices (lease.c skips releases while there are none). */
static atomic_t gp_rule_count = ATOMIC_INIT(0);

unsigned int gp_rules_live(void)
{
	return atomic_read(&gp_rule_count);
}

/* Changes whenever one of our qdiscs comes or goes, on any device (rare; rule
 * changes move each qdisc's own generation): with those, a rule dump, which
 * resumes by position, tells whether anything moved between its parts. */
static atomic_t gp_qdisc_epoch_count = ATOMIC_INIT(0);

u32 gp_qdisc_epoch(void)
{
	return atomic_read(&gp_qdisc_epoch_count);
}

struct gp_sched_data {
	struct Qdisc *sch;
	struct gp_wire wire;
	u64 linkrate;			/* bit/s; 0 = unknown (FIFO only) */
	bool linkrate_auto;		/* follows the device's link settings */
	u32 ifg;
	u32 limit;

	struct sk_buff *unpaced_head, *unpaced_tail;
	struct rb_root_cached backlogged;	/* paced flows with packets, by clock.next */

	struct hlist_head rule_hash[1 << GP_RULE_HASH_BITS];
	struct list_head rules;
	u32 n_rules;
	struct hlist_head group_hash[1 << GP_GROUP_HASH_BITS];
	u32 generation;
	/* prefix lengths in use, to try only those (longest first) */
	u64 v4_lens;				/* bit n: some IPv4 rule of length n */
	DECLARE_BITMAP(v6_lens, 129);
	u32 len_users[2][129];		/* up to GP_MAX_RULES of one length */

	struct sk_buff *gap_template;	/* a full-size gap frame; gaps are trimmed clones */

	u64 anchor_ns;			/* real time <-> wire time anchor for idle resync */
	u64 anchor_wire;

	u32 lookahead_ns;		/* 0: the device pushes back */
	struct qdisc_watchdog watchdog;	/* resumes dequeue when lookahead held it */
	u64 lookahead_waits;

	u64 first_start;
	bool started;
	struct gp_counters stats;
	u64 paced_packets;
	u64 gso_segmented;
	u64 idle_resyncs;
	u64 gap_alloc_failures;
};

static struct Qdisc_ops gp_qdisc_ops;

/* ------------------------------------------------------------ prefixes */

void gp_prefix_mask(struct gp_prefix *p)
{
	struct in6_addr addr;

	if (p->family == AF_INET) {
		p->addr.v4 &= p->len ? htonl(~0U << (32 - p->len)) : 0;
		return;
	}
	/* ipv6_addr_prefix() clears its destination first: never in place */
	addr = p->addr.v6;
	ipv6_addr_prefix(&p->addr.v6, &addr, p->len);
}

static bool gp_prefix_equal(const struct gp_prefix *a, const struct gp_prefix *b)
{
	if (a->family != b->family || a->len != b->len)
		return false;
	if (a->family == AF_INET)
		return a->addr.v4 == b->addr.v4;
	return ipv6_addr_equal(&a->addr.v6, &b->addr.v6);
}

static u32 gp_prefix_hash(const struct gp_prefix *p)
{
	u32 seed = ((u32)p->family << 8) | p->len;

	if (p->family == AF_INET)
		return jhash_1word((__force u32)p->addr.v4, seed) >> (32 - GP_RULE_HASH_BITS);
	return jhash2((const u32 *)&p->addr.v6, 4, seed) >> (32 - GP_RULE_HASH_BITS);
}

static struct gp_rule *gp_rule_find(struct gp_sched_data *q, const struct gp_prefix *p)
{
	struct gp_rule *rule;

	hlist_for_each_entry(rule, &q->rule_hash[gp_prefix_hash(p)], hash_node)
		if (gp_prefix_equal(&rule->prefix, p))
			return rule;
	return NULL;
}

static struct gp_flow *gp_group_find(struct gp_sched_data *q, u32 group)
{
	struct gp_flow *flow;

	hlist_for_each_entry(flow, &q->group_hash[hash_32(group, GP_GROUP_HASH_BITS)], group_node)
		if (flow->group == group)
			return flow;
	return NULL;
}

static void gp_lens_add(struct gp_sched_data *q, const struct gp_prefix *p)
{
	int fam = p->family == AF_INET6;

	if (q->len_users[fam][p->len]++)
		return;
	if (fam)
		__set_bit(p->len, q->v6_lens);
	else
		q->v4_lens |= 1ULL << p->len;
}

static void gp_lens_del(struct gp_sched_data *q, const struct gp_prefix *p)
{
	int fam = p->family == AF_INET6;

	if (--q->len_users[fam][p->len])
		return;
	if (fam)
		__clear_bit(p->len, q->v6_lens);
	else
		q->v4_lens &= ~(1ULL << p->len);
}

/* Longest-prefix match of the packet's destination against the rules: the
 * schedule of the rule that matches, or NULL (unpaced). */
static struct gp_flow *gp_classify(struct gp_sched_data *q, struct sk_buff *skb)
{
	struct gp_prefix key;
	struct gp_rule *rule;
	int len;

	if (!q->n_rules)
		return NULL;

	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP): {
		struct iphdr _iph;
		const struct iphdr *iph;
		__be32 daddr;
		u64 lens = q->v4_lens;

		iph = skb_header_pointer(skb, skb_network_offset(skb), sizeof(_iph), &_iph);
		if (!iph)
			return NULL;
		daddr = iph->daddr;
		key.family = AF_INET;
		while (lens) {
			len = fls64(lens) - 1;
			lens &= ~(1ULL << len);
			key.len = len;
			key.addr.v4 = daddr & (len ? htonl(~0U << (32 - len)) : 0);
			rule = gp_rule_find(q, &key);
			if (rule)
				return rule->flow;
		}
		return NULL;
	}
	case htons(ETH_P_IPV6): {
		struct ipv6hdr _ip6h;
		const struct ipv6hdr *ip6h;

		ip6h = skb_header_pointer(skb, skb_network_offset(skb), sizeof(_ip6h), &_ip6h);
		if (!ip6h)
			return NULL;
		key.family = AF_INET6;
		for (len = 128; len >= 0; len--) {
			if (!test_bit(len, q->v6_lens))
				continue;
			key.len = len;
			ipv6_addr_prefix(&key.addr.v6, &ip6h->daddr, len);
			rule = gp_rule_find(q, &key);
			if (rule)
				return rule->flow;
		}
		return NULL;
	}
	default:
		return NULL;
	}
}

/* -------------------------------------------------------------- queues */

static void gp_skb_append(struct sk_buff **head, struct sk_buff **tail, struct sk_buff *skb)
{
	skb->next = NULL;
	if (*head)
		(*tail)->next = skb;
	else
		*head = skb;
	*tail = skb;
}

static struct sk_buff *gp_skb_pop(struct sk_buff **head)
{
	struct sk_buff *skb = *head;

	*head = skb->next;
	skb_mark_not_on_list(skb);
	return skb;
}

static void gp_tree_insert(struct gp_sched_data *q, struct gp_flow *flow)
{
	struct rb_node **link = &q->backlogged.rb_root.rb_node, *parent = NULL;
	bool leftmost = true;

	while (*link) {
		struct gp_flow *other = rb_entry(*link, struct gp_flow, tree_node);

		parent = *link;
		if (gp_before(flow->clock.next, other->clock.next)) {
			link = &parent->rb_left;
		} else {
			link = &parent->rb_right;
			leftmost = false;
		}
	}
	rb_link_node(&flow->tree_node, parent, link);
	rb_insert_color_cached(&flow->tree_node, &q->backlogged, leftmost);
}

static struct gp_flow *gp_tree_first(struct gp_sched_data *q)
{
	struct rb_node *node = rb_first_cached(&q->backlogged);

	return node ? rb_entry(node, struct gp_flow, tree_node) : NULL;
}

/* Real time says the wire may have been idle: move the clock forward. */
static void gp_resync(struct gp_sched_data *q)
{
	u64 now_ns, real;

	if (!q->linkrate)
		return;
	now_ns = ktime_get_ns();
	real = q->anchor_wire + gp_ns_to_wire(now_ns - q->anchor_ns, q->linkrate);
	if (gp_wire_resync(&q->wire, real))
		q->idle_resyncs++;
	/* Longer since the last anchor than the conversion spans (GP_MAX_IDLE_NS):
	 * a backlog kept the queue from emptying all that time, so real time is
	 * past @real and the clock, which the device held back, is the better
	 * guess. Anchored behind it, later idle times would first have to make
	 * up the difference before they moved the clock. */
	if (now_ns - q->anchor_ns > GP_MAX_IDLE_NS && gp_before(real, q->wire.now))
		real = q->wire.now;
	/* re-anchor so the conversion never spans more than a short interval */
	q->anchor_ns = now_ns;
	q->anchor_wire = real;
}

/*
 * Anchor real time anew before a change of the link rate or of the lookahead:
 * at the real time the old rate projects (an idle wire's clock still moves up
 * to it), or at the clock if that is later. A clock the old settings let run
 * ahead (no lookahead on a device that never pushes back), or that ran
 * without a rate and so without an anchor, must not be held back for it.
 */
static void gp_reanchor(struct gp_sched_data *q)
{
	u64 now_ns = ktime_get_ns(), real = q->wire.now;

	if (q->linkrate) {
		u64 projected = q->anchor_wire + gp_ns_to_wire(now_ns - q->anchor_ns, q->linkrate);

		if (gp_before(real, projected))
			real = projected;
	}
	q->anchor_ns = now_ns;
	q->anchor_wire = real;
}

/*
 * The wire clock may not run more than lookahead ahead of real time. True if
 * dequeue must wait; the watchdog is then armed for the moment it may go on.
 */
static bool gp_lookahead_hold(struct gp_sched_data *q)
{
	u64 now_ns, elapsed, real, bound, early;

	if (!q->lookahead_ns || !q->linkrate)
		return false;
	now_ns = ktime_get_ns();
	elapsed = now_ns - q->anchor_ns;
	/* Under a lasting backlog nothing re-anchors (only idle resyncs do): step
	 * the anchor forward by whole byte times, so no rounding accumulates. */
	if (elapsed > NSEC_PER_SEC) {
		u64 step = gp_ns_to_wire(elapsed, q->linkrate);

		q->anchor_wire += step;
		q->anchor_ns += gp_wire_to_ns(step, q->linkrate);
		elapsed = now_ns - q->anchor_ns;
	}
	real = q->anchor_wire + gp_ns_to_wire(elapsed, q->linkrate);
	/* Behind real time: the device idled (a late watchdog, a preempted CPU).
	 * Gaps for time already gone would only delay what is due now. */
	if (gp_wire_resync(&q->wire, real))
		q->idle_resyncs++;
	bound = real + gp_ns_to_wire(q->lookahead_ns, q->linkrate);
	if (!gp_before(bound, q->wire.now))
		return false;
	/* At most a second at a time (a watchdog that fires only looks again):
	 * the conversion of a larger lead could overflow. */
	early = q->wire.now - bound;
	early = early > gp_ns_to_wire(NSEC_PER_SEC, q->linkrate) ? NSEC_PER_SEC :
		gp_wire_to_ns(early, q->linkrate);
	qdisc_watchdog_schedule_ns(&q->watchdog, now_ns + max_t(u64, early, 1000));
	q->lookahead_waits++;
	return true;
}

static void gp_queue(struct Qdisc *sch, struct gp_flow *flow, struct sk_buff *skb)
{
	struct gp_sched_data *q = qdisc_priv(sch);

	skb_set_queue_mapping(skb, 0);
	if (flow) {
		if (!flow->qlen) {
			gp_flow_wake(&flow->clock, q->wire.now);
			gp_tree_insert(q, flow);
		}
		gp_skb_append(&flow->head, &flow->tail, skb);
		flow->qlen++;
	} else {
		gp_skb_append(&q->unpaced_head, &q->unpaced_tail, skb);
	}
	qdisc_qstats_backlog_inc(sch, skb);
	sch->q.qlen++;
}

static int gp_drop(struct sk_buff *skb, struct Qdisc *sch, struct gp_flow *flow,
		   struct sk_buff **to_free)
{
	struct gp_sched_data *q = qdisc_priv(sch);

	q->stats.drops++;
	if (flow)
		flow->stats.drops++;
	return qdisc_drop(skb, sch, to_free);
}

/* A GSO packet that needs gaps between its frames: queue its segments. */
static int gp_enqueue_segments(struct sk_buff *skb, struct Qdisc *sch, struct gp_flow *flow,
			       struct sk_buff **to_free)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	netdev_features_t features = netif_skb_features(skb);
	struct sk_buff *segs, *seg, *next;
	unsigned int n = 0;

	BUILD_BUG_ON(sizeof(struct qdisc_skb_cb) > sizeof(skb->cb));
	segs = skb_gso_segment(skb, features & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs))
		return gp_drop(skb, sch, flow, to_free);

	skb_list_walk_safe(segs, seg, next)
		n++;
	if (sch->q.qlen + n > q->limit) {
		kfree_skb_list(segs);
		return gp_drop(skb, sch, flow, to_free);
	}
	skb_list_walk_safe(segs, seg, next) {
		skb_mark_not_on_list(seg);
		gp_set_qdisc_len(seg, seg->len);
		gp_queue(sch, flow, seg);
	}
	q->gso_segmented++;
	consume_skb(skb);
	return NET_XMIT_SUCCESS;
}

static int gp_enqueue(struct sk_buff *skb, struct Qdisc *sch, struct sk_buff **to_free)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_flow *flow = gp_classify(q, skb);

	if (!sch->q.qlen)
		gp_resync(q);
	if (skb_is_gso(skb) && (flow || q->wire.ifg_extra))
		return gp_enqueue_segments(skb, sch, flow, to_free);
	if (unlikely(sch->q.qlen >= q->limit))
		return gp_drop(skb, sch, flow, to_free);
	gp_queue(sch, flow, skb);
	return NET_XMIT_SUCCESS;
}

/* ---------------------------------------------------------- gap frames */

static struct sk_buff *gp_gap_template_alloc(struct net_device *dev, gfp_t gfp)
{
	struct sk_buff *skb;
	struct ethhdr *eth;
	__be16 *ctrl;

	skb = alloc_skb(LL_RESERVED_SPACE(dev) + GP_GAP_FRAME_MAX, gfp);
	if (!skb)
		return NULL;
	skb_reserve(skb, LL_RESERVED_SPACE(dev));
	eth = skb_put_zero(skb, GP_GAP_FRAME_MAX);
	ether_addr_copy(eth->h_dest, gp_pause_dst);
	ether_addr_copy(eth->h_source, dev->dev_addr);
	eth->h_proto = htons(ETH_P_PAUSE);
	ctrl = (__be16 *)(eth + 1);
	ctrl[0] = htons(GP_PAUSE_OPCODE);
	ctrl[1] = 0;	/* pause_time 0: a switch that honoured it would not pause */
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, ETH_HLEN);
	skb->protocol = htons(ETH_P_PAUSE);
	skb->dev = dev;
	return skb;
}

/* A gap frame of @wire wire bytes: a trimmed clone of the template. */
static struct sk_buff *gp_gap_frame(struct gp_sched_data *q, u32 wire)
{
	struct net_device *dev = qdisc_dev(q->sch);
	struct sk_buff *skb;

	/* the device's address changed: build a new template, old clones keep the old one */
	if (unlikely(!ether_addr_equal(eth_hdr(q->gap_template)->h_source, dev->dev_addr))) {
		struct sk_buff *fresh = gp_gap_template_alloc(dev, GFP_ATOMIC);

		if (fresh) {
			consume_skb(q->gap_template);
			q->gap_template = fresh;
		}
	}
	skb = skb_clone(q->gap_template, GFP_ATOMIC);
	if (!skb)
		return NULL;
	skb_trim(skb, gp_gap_frame_len(wire));
	/* tc's "Sent" counts what the qdisc gave the device, gap frames too */
	gp_set_qdisc_len(skb, skb->len);
	skb->dev = dev;
	skb_set_queue_mapping(skb, 0);
	return skb;
}

/* ------------------------------------------------------------- dequeue */

static void gp_count(struct gp_counters *c, bool gap, u32 frames, u64 bytes, u64 wire)
{
	if (gap) {
		c->gap_frames += frames;
		c->gap_bytes += bytes;
		c->gap_wire_bytes += wire;
	} else {
		c->data_packets += frames;
		c->data_bytes += bytes;
		c->data_wire_bytes += wire;
	}
}

static struct sk_buff *gp_dequeue(struct Qdisc *sch)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_flow *lead, *flow = NULL;
	struct gp_choice choice;
	struct sk_buff *skb;
	u64 wire, bytes, start;
	u32 frames = 1;

	if (sch->q.qlen && gp_lookahead_hold(q))
		return NULL;
	lead = sch->q.qlen ? gp_tree_first(q) : NULL;
	choice = gp_choose(&q->wire, q->unpaced_head != NULL, lead != NULL, lead ? lead->clock.next : 0);

	if (choice.verdict == GP_SEND_GAP) {
		skb = gp_gap_frame(q, choice.gap_wire);
		if (likely(skb)) {
			gp_wire_sent_gap(&q->wire, choice.gap_wire);
			gp_count(&q->stats, true, 1, skb->len, choice.gap_wire);
			/* the gap was spent waiting for the earliest paced flow, if any */
			if (lead)
				gp_count(&lead->stats, true, 1, skb->len, choice.gap_wire);
			qdisc_bstats_update(sch, skb);
			return skb;
		}
		/* no memory for a gap: send the awaited frame early rather than stall */
		q->gap_alloc_failures++;
		if (!sch->q.qlen)
			return NULL;
		choice.verdict = lead ? GP_SEND_PACED : GP_SEND_UNPACED;
		choice.contended = false;
	}
	if (choice.verdict == GP_IDLE)
		return NULL;

	if (choice.verdict == GP_SEND_PACED) {
		flow = lead;
		skb = gp_skb_pop(&flow->head);
		flow->qlen--;
	} else {
		skb = gp_skb_pop(&q->unpaced_head);
	}

	/* count what the wire carries: short frames padded, offloaded VLAN tags inserted */
	if (skb_is_gso(skb)) {
		frames = skb_shinfo(skb)->gso_segs;
		bytes = qdisc_pkt_len(skb);
	} else {
		bytes = max_t(u32, skb->len, ETH_ZLEN);
	}
	if (skb_vlan_tag_present(skb))
		bytes += (u64)frames * VLAN_HLEN;
	wire = frames > 1 ? gp_wire_bytes_gso(bytes, frames) : gp_wire_bytes(bytes);

	start = q->wire.now;
	if (flow) {
		rb_erase_cached(&flow->tree_node, &q->backlogged);
		gp_flow_charge(&flow->clock, start, wire, q->linkrate, flow->rate);
		if (flow->qlen)
			gp_tree_insert(q, flow);
		if (!flow->started) {
			flow->started = true;
			flow->first_start = start;
		}
		flow->last_end = start + wire;
		gp_count(&flow->stats, false, frames, bytes, wire);
		q->paced_packets += frames;
	}
	gp_wire_sent_data(&q->wire, wire, flow != NULL, choice.contended);
	if (!q->started) {
		q->started = true;
		q->first_start = start;
	}
	gp_count(&q->stats, false, frames, bytes, wire);

	qdisc_qstats_backlog_dec(sch, skb);
	sch->q.qlen--;
	qdisc_bstats_update(sch, skb);
	return skb;
}

/* ------------------------------------------------------ configuration */

/* The device's speed, or 0 if it has none worth pacing against. Needs RTNL. */
static u64 gp_device_linkrate(struct net_device *dev)
{
	struct ethtool_link_ksettings ks;

	/* A software device (veth, bridge, dummy) reports a made-up speed: its
	 * "wire" is a memory copy, so there is no clock to pace against. */
	if (!dev->dev.parent)
		return 0;
	if (__ethtool_get_link_ksettings(dev, &ks))
		return 0;
	if (ks.base.speed == 0 || ks.base.speed == (u32)SPEED_UNKNOWN)
		return 0;
	/* a driver may report anything up to INT_MAX Mbit/s (virtio: the host's say) */
	return min_t(u64, (u64)ks.base.speed * 1000 * 1000, GP_LINKRATE_MAX);
}

static struct netlink_range_validation gp_linkrate_range = {
	.min = 0, .max = GP_LINKRATE_MAX,
};
static struct netlink_range_validation gp_ifg_range = {
	.min = GAPPACE_IFG_STANDARD, .max = GAPPACE_IFG_MAX,
};
/* NLA_POLICY_MAX holds 16 bits only: a u32 bound needs a range struct. */
static struct netlink_range_validation gp_lookahead_range = {
	.min = 0, .max = GAPPACE_LOOKAHEAD_MAX,
};
static struct netlink_range_validation gp_limit_range = {
	.min = 1, .max = GP_LIMIT_MAX,
};

static const struct nla_policy gp_policy[TCA_GAPPACE_MAX + 1] = {
	[TCA_GAPPACE_LINKRATE]	= NLA_POLICY_FULL_RANGE(NLA_U64, &gp_linkrate_range),
	[TCA_GAPPACE_IFG]	= NLA_POLICY_FULL_RANGE(NLA_U32, &gp_ifg_range),
	[TCA_GAPPACE_LIMIT]	= NLA_POLICY_FULL_RANGE(NLA_U32, &gp_limit_range),
	[TCA_GAPPACE_LOOKAHEAD]	= NLA_POLICY_FULL_RANGE(NLA_U32, &gp_lookahead_range),
};

static void gp_set_linkrate(struct gp_sched_data *q, u64 linkrate)
{
	if (q->linkrate == linkrate)
		return;
	/* Keep real time and wire time in step across the change: from no rate
	 * (nothing anchored meanwhile) too, or the first lookahead would hold the
	 * queue for all the unpaced bytes sent since. */
	gp_reanchor(q);
	/* a rule faster than a slower new link is simply limited by the link */
	q->linkrate = linkrate;
}

static int gp_change(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_GAPPACE_MAX + 1] = {};
	u64 linkrate = q->linkrate;
	bool linkrate_auto = q->linkrate_auto;
	u32 ifg = q->ifg, limit = q->limit, lookahead_ns = q->lookahead_ns;
	struct sk_buff *skb, *to_free = NULL;
	int err;

	if (opt) {
		err = nla_parse_nested(tb, TCA_GAPPACE_MAX, opt, gp_policy, extack);
		if (err)
			return err;
	}

	/* validate everything, then commit */
	if (tb[TCA_GAPPACE_LINKRATE]) {
		linkrate = nla_get_u64(tb[TCA_GAPPACE_LINKRATE]);
		linkrate_auto = !linkrate;
		if (linkrate && linkrate < GP_RATE_MIN) {
			NL_SET_ERR_MSG_ATTR(extack, tb[TCA_GAPPACE_LINKRATE],
					    "linkrate must be at least 1000 bit/s (0 = from the device)");
			return -EINVAL;
		}
	}
	if (linkrate_auto) {
		u64 device = gp_device_linkrate(qdisc_dev(sch));

		/* link down or speed unknown now: an automatic rate keeps the last
		 * known speed, as the netdev notifier does */
		linkrate = device ?: (q->linkrate_auto ? q->linkrate : 0);
	}
	if (tb[TCA_GAPPACE_IFG])
		ifg = nla_get_u32(tb[TCA_GAPPACE_IFG]);
	if (tb[TCA_GAPPACE_LIMIT])
		limit = nla_get_u32(tb[TCA_GAPPACE_LIMIT]);
	if (tb[TCA_GAPPACE_LOOKAHEAD])
		lookahead_ns = nla_get_u32(tb[TCA_GAPPACE_LOOKAHEAD]);

	if (!linkrate && ifg != GAPPACE_IFG_STANDARD) {
		NL_SET_ERR_MSG_MOD(extack,
				   "device reports no link speed: give linkrate to pace with ifg");
		return -EINVAL;
	}
	if (!linkrate && lookahead_ns) {
		NL_SET_ERR_MSG_MOD(extack,
				   "device reports no link speed: give linkrate to bound the lookahead");
		return -EINVAL;
	}
	if (!linkrate && q->n_rules) {
		NL_SET_ERR_MSG_MOD(extack, "flow rules need a link rate: give linkrate");
		return -EINVAL;
	}

	sch_tree_lock(sch);
	gp_set_linkrate(q, linkrate);
	q->linkrate_auto = linkrate_auto;
	q->ifg = ifg;
	q->wire.ifg_extra = ifg - GP_IPG_BYTES;
	q->limit = limit;
	WRITE_ONCE(sch->limit, limit);
	/* A watchdog armed under the old bound stays: firing only reschedules the
	 * queue, and cancelling it would leave a held backlog waiting for the next
	 * enqueue. */
	if (lookahead_ns && !q->lookahead_ns)
		gp_reanchor(q);	/* without a bound the clock may have run ahead */
	q->lookahead_ns = lookahead_ns;
	/* a lower limit takes effect now: drop from the unpaced queue first */
	while (sch->q.qlen > q->limit && q->unpaced_head) {
		skb = gp_skb_pop(&q->unpaced_head);
		qdisc_qstats_backlog_dec(sch, skb);
		sch->q.qlen--;
		q->stats.drops++;
		qdisc_qstats_drop(sch);
		__qdisc_drop(skb, &to_free);
	}
	sch_tree_unlock(sch);
	kfree_skb_list(to_free);
	return 0;
}

static int gp_init(struct Qdisc *sch, struct nlattr *opt, struct netlink_ext_ack *extack)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct net_device *dev = qdisc_dev(sch);
	int err;

	q->sch = sch;
	qdisc_watchdog_init(&q->watchdog, sch);
	INIT_LIST_HEAD(&q->rules);
	q->backlogged = RB_ROOT_CACHED;
	q->ifg = GAPPACE_IFG_STANDARD;
	q->limit = max_t(u32, READ_ONCE(dev->tx_queue_len), GP_LIMIT_DEFAULT);
	q->linkrate_auto = true;
	q->anchor_ns = ktime_get_ns();

	if (sch->parent != TC_H_ROOT) {
		NL_SET_ERR_MSG_MOD(extack, "must be the root qdisc: the wire clock needs the whole device");
		return -EOPNOTSUPP;
	}
	if (dev->type != ARPHRD_ETHER || dev->addr_len != ETH_ALEN) {
		NL_SET_ERR_MSG_MOD(extack, "needs an Ethernet device: gap frames are 802.3x PAUSE frames");
		return -EOPNOTSUPP;
	}

	q->gap_template = gp_gap_template_alloc(dev, GFP_KERNEL);
	if (!q->gap_template)
		return -ENOMEM;

	err = gp_change(sch, opt, extack);
	if (err)
		return err;
	atomic_inc(&gp_qdisc_epoch_count);	/* a device joins the rule dump */
	return 0;
}

static void gp_flow_purge(struct Qdisc *sch, struct gp_flow *flow)
{
	while (flow->head) {
		struct sk_buff *skb = gp_skb_pop(&flow->head);

		rtnl_kfree_skbs(skb, skb);
	}
	flow->qlen = 0;
}

static void gp_reset(struct Qdisc *sch)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_rule *rule;

	while (q->unpaced_head) {
		struct sk_buff *skb = gp_skb_pop(&q->unpaced_head);

		rtnl_kfree_skbs(skb, skb);
	}
	/* a group's schedule is purged by its first rule, found empty by the others */
	list_for_each_entry(rule, &q->rules, list)
		gp_flow_purge(sch, rule->flow);
	qdisc_watchdog_cancel(&q->watchdog);
	q->backlogged = RB_ROOT_CACHED;
	sch->q.qlen = 0;
	sch->qstats.backlog = 0;
}

static void gp_destroy(struct Qdisc *sch)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_rule *rule, *tmp;

	qdisc_watchdog_cancel(&q->watchdog);
	atomic_inc(&gp_qdisc_epoch_count);
	/* init may have failed before the list existed */
	if (q->rules.next) {
		list_for_each_entry_safe(rule, tmp, &q->rules, list) {
			gp_flow_purge(sch, rule->flow);
			if (!--rule->flow->users)
				kfree(rule->flow);
			kfree(rule);
			atomic_dec(&gp_rule_count);
		}
	}
	consume_skb(q->gap_template);
}

static int gp_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		return -EMSGSIZE;
	if (nla_put_u64_64bit(skb, TCA_GAPPACE_LINKRATE, q->linkrate, TCA_GAPPACE_PAD) ||
	    nla_put_u32(skb, TCA_GAPPACE_IFG, q->ifg) ||
	    nla_put_u32(skb, TCA_GAPPACE_LIMIT, q->limit) ||
	    nla_put_u32(skb, TCA_GAPPACE_LOOKAHEAD, q->lookahead_ns)) {
		nla_nest_cancel(skb, opts);
		return -EMSGSIZE;
	}
	return nla_nest_end(skb, opts);
}

static int gp_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct tc_gappace_xstats st = {
		.linkrate = q->linkrate,
		.data_packets = q->stats.data_packets,
		.data_bytes = q->stats.data_bytes,
		.data_wire_bytes = q->stats.data_wire_bytes,
		.gap_frames = q->stats.gap_frames,
		.gap_bytes = q->stats.gap_bytes,
		.gap_wire_bytes = q->stats.gap_wire_bytes,
		.paced_packets = q->paced_packets,
		.gso_segmented = q->gso_segmented,
		.drops = q->stats.drops,
		.idle_resyncs = q->idle_resyncs,
		.gap_alloc_failures = q->gap_alloc_failures,
		.rules = q->n_rules,
		.ifg = q->ifg,
		.limit = q->limit,
		.qlen = sch->q.qlen,
		.lookahead_waits = q->lookahead_waits,
	};

	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops gp_qdisc_ops __read_mostly = {
	.id		= GAPPACE_QDISC_KIND,
	.priv_size	= sizeof(struct gp_sched_data),
	.enqueue	= gp_enqueue,
	.dequeue	= gp_dequeue,
	.peek		= qdisc_peek_dequeued,
	.init		= gp_init,
	.reset		= gp_reset,
	.destroy	= gp_destroy,
	.change		= gp_change,
	.dump		= gp_dump,
	.dump_stats	= gp_dump_stats,
	.owner		= THIS_MODULE,
};

/* ----------------------------------------------- rules (from netlink) */

struct Qdisc *gp_qdisc_of(struct net_device *dev)
{
	struct Qdisc *sch = rtnl_dereference(dev->qdisc);

	return sch && sch->ops == &gp_qdisc_ops ? sch : NULL;
}

static void gp_flow_reset_stats(struct gp_flow *flow)
{
	memset(&flow->stats, 0, sizeof(flow->stats));
	flow->started = false;
}

/* A rule leaves its schedule. The last one out frees it; its queued packets
 * continue unpaced, behind what is there, so nothing is lost. Packets of the
 * rule's prefix queued in a schedule others still use leave with theirs. */
static void gp_flow_put(struct gp_sched_data *q, struct gp_flow *flow)
{
	if (--flow->users)
		return;
	if (flow->qlen) {
		rb_erase_cached(&flow->tree_node, &q->backlogged);
		while (flow->head)
			gp_skb_append(&q->unpaced_head, &q->unpaced_tail, gp_skb_pop(&flow->head));
		flow->qlen = 0;
	}
	if (flow->group)
		hlist_del(&flow->group_node);
	kfree(flow);
}

/*
 * A schedule's new rate. A flow that waits out its last frame's interval at a
 * slower old rate waits only what the new rate asks of that frame: the rest
 * of the wait scaled by old / new (the control plane raises rates between
 * phases, and a frame charged at a few Mbit/s waits milliseconds). A slower
 * new rate takes effect with the next frame.
 */
static void gp_flow_set_rate(struct gp_sched_data *q, struct gp_flow *flow, u64 rate)
{
	u64 old = flow->rate, now = q->wire.now;

	flow->rate = rate;
	flow->clock.rem = 0;
	if (rate <= old || !gp_before(now, flow->clock.next))
		return;
	if (flow->qlen)		/* the tree is ordered by clock.next */
		rb_erase_cached(&flow->tree_node, &q->backlogged);
	flow->clock.next = now + gp_mul_div(flow->clock.next - now, old, rate);
	if (flow->qlen)
		gp_tree_insert(q, flow);
}

/*
 * The schedule a rule of @group (0: none) at @rate joins: its group's, whose
 * rate becomes @rate, or @fresh, which the caller allocated and gives up here.
 * *@used tells whether @fresh was taken.
 */
static struct gp_flow *gp_flow_get(struct gp_sched_data *q, u32 group, u64 rate,
				   struct gp_flow *fresh, bool *used)
{
	struct gp_flow *flow = group ? gp_group_find(q, group) : NULL;

	*used = !flow;
	if (flow) {
		if (flow->rate != rate) {
			gp_flow_set_rate(q, flow, rate);
			gp_flow_reset_stats(flow);
		}
	} else {
		flow = fresh;
		flow->rate = rate;
		flow->group = group;
		flow->clock.next = q->wire.now;
		if (group)
			hlist_add_head(&flow->group_node, &q->group_hash[hash_32(group, GP_GROUP_HASH_BITS)]);
	}
	flow->users++;
	return flow;
}

int gp_rule_set(struct Qdisc *sch, const struct gp_rule_request *req, bool create, bool replace,
		u32 owner_portid, struct netlink_ext_ack *extack)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_flow *fresh_flow, *old;
	struct gp_rule *rule, *fresh_rule;
	bool used = false;
	int err = 0;

	/* both allocated before the lock; what is not used is freed after it */
	fresh_flow = kzalloc(sizeof(*fresh_flow), GFP_KERNEL);
	fresh_rule = kzalloc(sizeof(*fresh_rule), GFP_KERNEL);
	if (!fresh_flow || !fresh_rule) {
		kfree(fresh_flow);
		kfree(fresh_rule);
		return -ENOMEM;
	}

	sch_tree_lock(sch);
	if (!q->linkrate) {
		NL_SET_ERR_MSG_MOD(extack, "the qdisc has no link rate: attach it with linkrate");
		err = -EINVAL;
		goto unlock;
	}
	if (req->rate > q->linkrate) {
		NL_SET_ERR_MSG_MOD(extack, "rate exceeds the link rate of the qdisc");
		err = -ERANGE;
		goto unlock;
	}
	rule = gp_rule_find(q, &req->prefix);
	if (rule) {
		if (!replace) {
			NL_SET_ERR_MSG_MOD(extack, "a rule for this prefix exists (replace it with rule-set)");
			err = -EEXIST;
			goto unlock;
		}
		old = rule->flow;
		if (!old->group && !req->group) {
			/* its own schedule at a new rate: the counters restart */
			gp_flow_set_rate(q, old, req->rate);
			gp_flow_reset_stats(old);
		} else {
			/* its group's (maybe the one it is in), or out of the group to one of
			 * its own; packets it queued stay where they are */
			rule->flow = gp_flow_get(q, req->group, req->rate, fresh_flow, &used);
			gp_flow_put(q, old);
		}
		rule->owner_portid = owner_portid;	/* the lease passes to the new setter */
		rule->lease_stamp = gp_lease_stamp();
		goto unlock;
	}
	if (!create) {
		NL_SET_ERR_MSG_MOD(extack, "no rule for this prefix");
		err = -ENOENT;
		goto unlock;
	}
	if (q->n_rules >= GP_MAX_RULES) {
		NL_SET_ERR_MSG_MOD(extack, "too many rules on this device");
		err = -ENOSPC;
		goto unlock;
	}
	fresh_rule->prefix = req->prefix;
	fresh_rule->owner_portid = owner_portid;
	fresh_rule->lease_stamp = gp_lease_stamp();
	fresh_rule->flow = gp_flow_get(q, req->group, req->rate, fresh_flow, &used);
	atomic_inc(&gp_rule_count);
	hlist_add_head(&fresh_rule->hash_node, &q->rule_hash[gp_prefix_hash(&req->prefix)]);
	list_add_tail(&fresh_rule->list, &q->rules);
	gp_lens_add(q, &req->prefix);
	q->n_rules++;
	q->generation++;
	fresh_rule = NULL;
unlock:
	sch_tree_unlock(sch);
	if (!used)
		kfree(fresh_flow);
	kfree(fresh_rule);
	return err;
}

/* Unlinks and frees a rule. Under the tree lock. */
static void gp_rule_remove(struct gp_sched_data *q, struct gp_rule *rule)
{
	hlist_del(&rule->hash_node);
	list_del(&rule->list);
	gp_lens_del(q, &rule->prefix);
	gp_flow_put(q, rule->flow);
	q->n_rules--;
	q->generation++;
	kfree(rule);
	atomic_dec(&gp_rule_count);
}

int gp_rule_del(struct Qdisc *sch, const struct gp_prefix *prefix, struct netlink_ext_ack *extack)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_rule *rule;

	sch_tree_lock(sch);
	rule = gp_rule_find(q, prefix);
	if (!rule) {
		sch_tree_unlock(sch);
		NL_SET_ERR_MSG_MOD(extack, "no rule for this prefix");
		return -ENOENT;
	}
	gp_rule_remove(q, rule);
	sch_tree_unlock(sch);
	return 0;
}

/* The lease of netlink port @portid ended: its rules stamped at or before
 * @before go. Caller holds RTNL. */
unsigned int gp_rules_release_owner(struct Qdisc *sch, u32 portid, u64 before)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_rule *rule, *tmp;
	unsigned int n = 0;

	sch_tree_lock(sch);
	list_for_each_entry_safe(rule, tmp, &q->rules, list) {
		if (rule->owner_portid != portid || rule->lease_stamp > before)
			continue;
		gp_rule_remove(q, rule);
		n++;
	}
	sch_tree_unlock(sch);
	return n;
}

static u64 gp_rate_since(u64 wire_bytes, u64 first_start, u64 end, u64 link)
{
	u64 span = end - first_start;

	if (wire_bytes > span)	/* cannot happen on a consistent clock; never overflow */
		return link;
	return gp_achieved_rate(wire_bytes, span, link);
}

u32 gp_rules_generation(struct Qdisc *sch)
{
	struct gp_sched_data *q = qdisc_priv(sch);

	return READ_ONCE(q->generation);
}

unsigned int gp_rules_snapshot(struct Qdisc *sch, unsigned int first, struct gp_rule_info *out,
			       unsigned int max)
{
	struct gp_sched_data *q = qdisc_priv(sch);
	struct gp_rule *rule;
	unsigned int pos = 0, n = 0;

	sch_tree_lock(sch);
	list_for_each_entry(rule, &q->rules, list) {
		const struct gp_flow *flow = rule->flow;

		if (pos++ < first)
			continue;
		if (n == max)
			break;
		out[n].prefix = rule->prefix;
		out[n].rate = flow->rate;
		out[n].group = flow->group;
		out[n].owner_portid = rule->owner_portid;
		out[n].backlog = flow->qlen;
		out[n].stats = flow->stats;
		out[n].achieved_rate = flow->started ?
			gp_rate_since(flow->stats.data_wire_bytes, flow->first_start,
				      flow->last_end, q->linkrate) : 0;
		n++;
	}
	sch_tree_unlock(sch);
	return n;
}

void gp_qdisc_snapshot(struct Qdisc *sch, struct gp_qdisc_info *out)
{
	struct gp_sched_data *q = qdisc_priv(sch);

	sch_tree_lock(sch);
	out->linkrate = q->linkrate;
	out->linkrate_auto = q->linkrate_auto;
	out->ifg = q->ifg;
	out->limit = q->limit;
	out->rules = q->n_rules;
	out->qlen = sch->q.qlen;
	out->stats = q->stats;
	out->achieved_rate = q->started ?
		gp_rate_since(q->stats.data_wire_bytes, q->first_start, q->wire.now, q->linkrate) : 0;
	out->paced_packets = q->paced_packets;
	out->gso_segmented = q->gso_segmented;
	out->idle_resyncs = q->idle_resyncs;
	out->gap_alloc_failures = q->gap_alloc_failures;
	sch_tree_unlock(sch);
}

/* ------------------------------------------------ link speed changes */

static int gp_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct gp_sched_data *q;
	struct Qdisc *sch;
	u64 linkrate;

	if (event != NETDEV_CHANGE && event != NETDEV_UP)
		return NOTIFY_DONE;
	sch = gp_qdisc_of(dev);
	if (!sch)
		return NOTIFY_DONE;
	q = qdisc_priv(sch);
	if (!q->linkrate_auto)
		return NOTIFY_DONE;
	linkrate = gp_device_linkrate(dev);
	if (!linkrate)	/* link down: keep pacing against the last known speed */
		return NOTIFY_DONE;
	sch_tree_lock(sch);
	gp_set_linkrate(q, linkrate);
	sch_tree_unlock(sch);
	return NOTIFY_DONE;
}

static struct notifier_block gp_netdev_notifier = {
	.notifier_call = gp_netdev_event,
};

int gp_qdisc_register(void)
{
	int err;

	err = register_netdevice_notifier(&gp_netdev_notifier);
	if (err)
		return err;
	err = register_qdisc(&gp_qdisc_ops);
	if (err)
		unregister_netdevice_notifier(&gp_netdev_notifier);
	return err;
}

void gp_qdisc_unregister(void)
{
	unregister_qdisc(&gp_qdisc_ops);
	unregister_netdevice_notifier(&gp_netdev_notifier);
}
