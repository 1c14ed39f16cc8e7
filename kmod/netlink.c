// SPDX-License-Identifier: GPL-2.0
/*
 * netlink.c - the `gappace` generic netlink family: flow rules, statistics,
 * RTO overrides and collective-phase hints.
 *
 * The family is specified in Documentation/netlink/gappace.yaml; the uapi
 * header kmod/uapi/linux/gappace.h is the contract. Requests are validated
 * strictly against the policies below (unknown attributes are rejected by the
 * core), every error carries an extack message, and commands that change
 * state need CAP_NET_ADMIN in the user namespace owning the netns: the
 * semantics of GENL_UNS_ADMIN_PERM, checked in the handlers because the genl
 * core refuses such requests without any extack text. Handlers run under RTNL,
 * which keeps the device and its root qdisc alive while we look at them.
 *
 * Hints are the exception: any process may send one. The kernel only checks
 * it, stamps who sent it and passes it on to the "hints" multicast group of
 * the sender's netns, which only CAP_NET_ADMIN may join (see compat.h).
 */
#include <linux/cred.h>
#include <linux/jhash.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/stringify.h>
#include <net/genetlink.h>
#include <net/ipv6.h>
#include <net/tcp.h>
#include <uapi/linux/gappace.h>

#include "compat.h"
#include "gappace.h"
#include "pace_core.h"

static struct netlink_range_validation gp_rule_rate_range = {
	.min = GP_RATE_MIN, .max = GP_LINKRATE_MAX,
};

static const struct nla_policy gp_rule_policy[GAPPACE_A_RULE_MAX + 1] = {
	[GAPPACE_A_RULE_DST_IPV4]	= NLA_POLICY_EXACT_LEN(sizeof(__be32)),
	[GAPPACE_A_RULE_DST_IPV6]	= NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[GAPPACE_A_RULE_PREFIX_LEN]	= NLA_POLICY_MAX(NLA_U8, 128),
	[GAPPACE_A_RULE_RATE]		= NLA_POLICY_FULL_RANGE(NLA_U64, &gp_rule_rate_range),
	[GAPPACE_A_RULE_STATS]		= { .type = NLA_REJECT,
					    .reject_message = "statistics are read-only" },
	[GAPPACE_A_RULE_OWNER_PORTID]	= { .type = NLA_REJECT,
					    .reject_message = "the owner is the socket that sends the request" },
	[GAPPACE_A_RULE_GROUP]		= NLA_POLICY_MIN(NLA_U32, 1),
};

#define GP_REPLY_ONLY { .type = NLA_REJECT, .reject_message = "attribute is only sent by the kernel" }

/* Ranges that depend on HZ are checked in gp_rto_parse() with EINVAL and a message. */
static const struct nla_policy gp_rto_policy[GAPPACE_A_RTO_MAX + 1] = {
	[GAPPACE_A_RTO_SADDR_IPV4]	= NLA_POLICY_EXACT_LEN(sizeof(__be32)),
	[GAPPACE_A_RTO_SADDR_IPV6]	= NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[GAPPACE_A_RTO_SPORT]		= { .type = NLA_BE16 },
	[GAPPACE_A_RTO_DADDR_IPV4]	= NLA_POLICY_EXACT_LEN(sizeof(__be32)),
	[GAPPACE_A_RTO_DADDR_IPV6]	= NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[GAPPACE_A_RTO_DPORT]		= { .type = NLA_BE16 },
	[GAPPACE_A_RTO_RTO_MIN_US]	= { .type = NLA_U32 },
	[GAPPACE_A_RTO_DELACK_MAX_US]	= { .type = NLA_U32 },
	[GAPPACE_A_RTO_TTL_MS]		= { .type = NLA_U32 },
	[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US]	= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US]	= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_ORIG_RTO_MIN_US]		= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_ORIG_DELACK_MAX_US]	= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_RTO_US]			= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_OWNER_PORTID]		= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_OWNER_PID]		= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_TTL_LEFT_MS]		= GP_REPLY_ONLY,
	[GAPPACE_A_RTO_COUNT]			= GP_REPLY_ONLY,
};

static const struct nla_policy gp_peer_policy[GAPPACE_A_PEER_MAX + 1] = {
	[GAPPACE_A_PEER_DADDR_IPV4]	= NLA_POLICY_EXACT_LEN(sizeof(__be32)),
	[GAPPACE_A_PEER_DADDR_IPV6]	= NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[GAPPACE_A_PEER_SADDR_IPV4]	= NLA_POLICY_EXACT_LEN(sizeof(__be32)),
	[GAPPACE_A_PEER_SADDR_IPV6]	= NLA_POLICY_EXACT_LEN(sizeof(struct in6_addr)),
	[GAPPACE_A_PEER_SPORT]		= { .type = NLA_BE16 },
	[GAPPACE_A_PEER_DPORT]		= { .type = NLA_BE16 },
	[GAPPACE_A_PEER_RANK]		= { .type = NLA_U32 },
};

/* A listener trusts the stamps because nobody but the kernel writes them. */
#define GP_STAMPED { .type = NLA_REJECT, .reject_message = "the sender is set by the kernel" }

static const struct nla_policy gp_hint_policy[GAPPACE_A_HINT_MAX + 1] = {
	[GAPPACE_A_HINT_EVENT]		= NLA_POLICY_RANGE(NLA_U32, GAPPACE_HINT_EVENT_BEGIN,
							   GAPPACE_HINT_EVENT_END),
	[GAPPACE_A_HINT_PHASE_ID]	= { .type = NLA_U64 },
	[GAPPACE_A_HINT_KIND]		= NLA_POLICY_RANGE(NLA_U32, GAPPACE_HINT_KIND_ALLTOALL,
							   GAPPACE_HINT_KIND_MAX),
	[GAPPACE_A_HINT_ALGORITHM]	= NLA_POLICY_MAX(NLA_U32, GAPPACE_HINT_ALGORITHM_MAX),
	[GAPPACE_A_HINT_FLAGS]		= NLA_POLICY_MASK(NLA_U32, GAPPACE_HINT_F_ALL),
	[GAPPACE_A_HINT_BYTES_PER_PEER]	= { .type = NLA_U64 },
	[GAPPACE_A_HINT_COMM_SIZE]	= { .type = NLA_U32 },
	[GAPPACE_A_HINT_RANK]		= { .type = NLA_U32 },
	[GAPPACE_A_HINT_REPETITIONS]	= { .type = NLA_U32 },
	[GAPPACE_A_HINT_DURATION_NS]	= { .type = NLA_U64 },
	[GAPPACE_A_HINT_PEER]		= NLA_POLICY_NESTED(gp_peer_policy),
	[GAPPACE_A_HINT_SENDER_PID]	= GP_STAMPED,
	[GAPPACE_A_HINT_SENDER_UID]	= GP_STAMPED,
	[GAPPACE_A_HINT_SENDER_NETNS]	= GP_STAMPED,
	[GAPPACE_A_HINT_SIGNATURE]	= { .type = NLA_U64 },
	[GAPPACE_A_HINT_QUIET_PHASES]	= NLA_POLICY_MIN(NLA_U32, 1),
	[GAPPACE_A_HINT_QUIET_NS]	= { .type = NLA_U64 },
};

static const struct nla_policy gp_policy[GAPPACE_A_MAX + 1] = {
	[GAPPACE_A_IFINDEX]	= NLA_POLICY_MIN(NLA_U32, 1),
	[GAPPACE_A_RULE]	= NLA_POLICY_NESTED(gp_rule_policy),
	[GAPPACE_A_RTO]		= NLA_POLICY_NESTED(gp_rto_policy),
	[GAPPACE_A_HINT]	= NLA_POLICY_NESTED(gp_hint_policy),
	[GAPPACE_A_QDISC]	= { .type = NLA_REJECT,
				    .reject_message = "qdisc settings are changed through tc (gapctl qdisc change)" },
};

static struct genl_family gp_genl_family;

/* The gappace qdisc of the device named by @attr in @net. Caller holds RTNL. */
static struct Qdisc *gp_lookup_qdisc(struct net *net, struct nlattr *attr,
				     struct netlink_ext_ack *extack)
{
	struct net_device *dev = __dev_get_by_index(net, nla_get_u32(attr));
	struct Qdisc *sch;

	if (!dev) {
		NL_SET_ERR_MSG_ATTR(extack, attr, "no device with this ifindex in this network namespace");
		return ERR_PTR(-ENODEV);
	}
	sch = gp_qdisc_of(dev);
	if (!sch) {
		NL_SET_ERR_MSG_ATTR(extack, attr, "the device's root qdisc is not gappace");
		return ERR_PTR(-ENOENT);
	}
	return sch;
}

static int gp_check_admin(struct sk_buff *skb, struct genl_info *info)
{
	if (netlink_ns_capable(skb, genl_info_net(info)->user_ns, CAP_NET_ADMIN))
		return 0;
	NL_SET_ERR_MSG_MOD(info->extack,
			   "changing gappace state needs CAP_NET_ADMIN over the network namespace");
	return -EPERM;
}

static int gp_parse_prefix(struct nlattr *nest, struct nlattr **rb, struct gp_prefix *p,
			   struct netlink_ext_ack *extack)
{
	struct gp_prefix masked;
	unsigned int full;

	if (rb[GAPPACE_A_RULE_DST_IPV4] && rb[GAPPACE_A_RULE_DST_IPV6]) {
		NL_SET_ERR_MSG_ATTR(extack, rb[GAPPACE_A_RULE_DST_IPV6],
				    "give either an IPv4 or an IPv6 destination, not both");
		return -EINVAL;
	}
	memset(p, 0, sizeof(*p));
	if (rb[GAPPACE_A_RULE_DST_IPV4]) {
		p->family = AF_INET;
		p->addr.v4 = nla_get_in_addr(rb[GAPPACE_A_RULE_DST_IPV4]);
		full = 32;
	} else if (rb[GAPPACE_A_RULE_DST_IPV6]) {
		p->family = AF_INET6;
		p->addr.v6 = nla_get_in6_addr(rb[GAPPACE_A_RULE_DST_IPV6]);
		full = 128;
	} else {
		NL_SET_ERR_ATTR_MISS(extack, nest, GAPPACE_A_RULE_DST_IPV4);
		NL_SET_ERR_MSG_MOD(extack, "the rule needs a destination (dst-ipv4 or dst-ipv6)");
		return -EINVAL;
	}
	p->len = full;
	if (rb[GAPPACE_A_RULE_PREFIX_LEN]) {
		p->len = nla_get_u8(rb[GAPPACE_A_RULE_PREFIX_LEN]);
		if (p->len > full) {
			NL_SET_ERR_MSG_ATTR(extack, rb[GAPPACE_A_RULE_PREFIX_LEN],
					    "prefix length exceeds the address length");
			return -EINVAL;
		}
	}
	masked = *p;
	gp_prefix_mask(&masked);
	if (memcmp(&masked, p, sizeof(masked))) {
		NL_SET_ERR_MSG_MOD(extack, "the address has bits set beyond the prefix length");
		return -EINVAL;
	}
	return 0;
}

/* The rule of a request; @need_rate: RULE_NEW / RULE_SET (rate, group) rather than RULE_DEL. */
static int gp_rule_parse(struct genl_info *info, struct gp_rule_request *req, bool need_rate)
{
	struct nlattr *rb[GAPPACE_A_RULE_MAX + 1];
	int err;

	if (GENL_REQ_ATTR_CHECK(info, GAPPACE_A_IFINDEX) || GENL_REQ_ATTR_CHECK(info, GAPPACE_A_RULE))
		return -EINVAL;
	err = nla_parse_nested(rb, GAPPACE_A_RULE_MAX, info->attrs[GAPPACE_A_RULE], gp_rule_policy,
			       info->extack);
	if (err)
		return err;
	memset(req, 0, sizeof(*req));
	err = gp_parse_prefix(info->attrs[GAPPACE_A_RULE], rb, &req->prefix, info->extack);
	if (err)
		return err;
	if (!need_rate) {
		if (rb[GAPPACE_A_RULE_GROUP]) {
			NL_SET_ERR_MSG_ATTR(info->extack, rb[GAPPACE_A_RULE_GROUP],
					    "a rule is deleted by its prefix alone");
			return -EINVAL;
		}
		return 0;
	}
	if (NL_REQ_ATTR_CHECK(info->extack, info->attrs[GAPPACE_A_RULE], rb, GAPPACE_A_RULE_RATE)) {
		NL_SET_ERR_MSG_MOD(info->extack, "the rule needs a rate");
		return -EINVAL;
	}
	req->rate = nla_get_u64(rb[GAPPACE_A_RULE_RATE]);
	if (rb[GAPPACE_A_RULE_GROUP])
		req->group = nla_get_u32(rb[GAPPACE_A_RULE_GROUP]);
	return 0;
}

/* RULE_NEW adds (EEXIST if present), RULE_SET adds or replaces. */
static int gp_cmd_rule_new(struct sk_buff *skb, struct genl_info *info)
{
	bool replace = info->genlhdr->cmd == GAPPACE_CMD_RULE_SET;
	struct gp_rule_request req;
	struct Qdisc *sch;
	int err;

	err = gp_check_admin(skb, info);
	if (err)
		return err;
	err = gp_rule_parse(info, &req, true);
	if (err)
		return err;
	rtnl_lock();
	sch = gp_lookup_qdisc(genl_info_net(info), info->attrs[GAPPACE_A_IFINDEX], info->extack);
	if (IS_ERR(sch))
		err = PTR_ERR(sch);
	else
		err = gp_rule_set(sch, &req, true, replace, info->snd_portid, info->extack);
	rtnl_unlock();
	return err;
}

static int gp_cmd_rule_del(struct sk_buff *skb, struct genl_info *info)
{
	struct gp_rule_request req;
	struct Qdisc *sch;
	int err;

	err = gp_check_admin(skb, info);
	if (err)
		return err;
	err = gp_rule_parse(info, &req, false);
	if (err)
		return err;
	rtnl_lock();
	sch = gp_lookup_qdisc(genl_info_net(info), info->attrs[GAPPACE_A_IFINDEX], info->extack);
	if (IS_ERR(sch))
		err = PTR_ERR(sch);
	else
		err = gp_rule_del(sch, &req.prefix, info->extack);
	rtnl_unlock();
	return err;
}

/* Opens the stats nest @type with the counters rules and qdiscs share; the
 * caller may add more and must close it. NULL if the message is full. */
static struct nlattr *gp_put_stats(struct sk_buff *skb, int type, const struct gp_counters *c,
				   u64 achieved_rate, u32 backlog)
{
	struct nlattr *nest = nla_nest_start(skb, type);

	if (!nest)
		return NULL;
	if (nla_put_u64_64bit(skb, GAPPACE_A_STATS_DATA_PACKETS, c->data_packets, GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_DATA_BYTES, c->data_bytes, GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_DATA_WIRE_BYTES, c->data_wire_bytes,
			      GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_GAP_FRAMES, c->gap_frames, GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_GAP_BYTES, c->gap_bytes, GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_GAP_WIRE_BYTES, c->gap_wire_bytes,
			      GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_DROPS, c->drops, GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_ACHIEVED_RATE, achieved_rate, GAPPACE_A_STATS_PAD) ||
	    nla_put_u32(skb, GAPPACE_A_STATS_BACKLOG, backlog)) {
		nla_nest_cancel(skb, nest);
		return NULL;
	}
	return nest;
}

static int gp_fill_rule(struct sk_buff *skb, int ifindex, const struct gp_rule_info *r,
			struct netlink_callback *cb)
{
	struct nlattr *rule, *stats;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq, &gp_genl_family,
			  NLM_F_MULTI, GAPPACE_CMD_RULE_GET);
	if (!hdr)
		return -EMSGSIZE;
	genl_dump_check_consistent(cb, hdr);
	if (nla_put_u32(skb, GAPPACE_A_IFINDEX, ifindex))
		goto cancel;
	rule = nla_nest_start(skb, GAPPACE_A_RULE);
	if (!rule)
		goto cancel;
	if (r->prefix.family == AF_INET) {
		if (nla_put_in_addr(skb, GAPPACE_A_RULE_DST_IPV4, r->prefix.addr.v4))
			goto cancel;
	} else if (nla_put_in6_addr(skb, GAPPACE_A_RULE_DST_IPV6, &r->prefix.addr.v6)) {
		goto cancel;
	}
	if (nla_put_u8(skb, GAPPACE_A_RULE_PREFIX_LEN, r->prefix.len) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_RULE_RATE, r->rate, GAPPACE_A_RULE_PAD) ||
	    nla_put_u32(skb, GAPPACE_A_RULE_OWNER_PORTID, r->owner_portid) ||
	    (r->group && nla_put_u32(skb, GAPPACE_A_RULE_GROUP, r->group)))
		goto cancel;
	stats = gp_put_stats(skb, GAPPACE_A_RULE_STATS, &r->stats, r->achieved_rate, r->backlog);
	if (!stats)
		goto cancel;
	nla_nest_end(skb, stats);
	nla_nest_end(skb, rule);
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

#define GP_DUMP_BATCH 16

/* What the rule dump of @net (@only: one device) depends on: each dumped
 * qdisc's rule generation and the qdisc epoch, hashed; never 0 (0 means "not
 * tracked" to nl_dump_check_consistent). Under RTNL. */
static u32 gp_rule_dump_seq(struct net *net, int only)
{
	struct net_device *dev;
	u32 sum = 0;

	for_each_netdev(net, dev) {
		struct Qdisc *sch;

		if (only && dev->ifindex != only)
			continue;
		sch = gp_qdisc_of(dev);
		if (sch)
			sum += gp_rules_generation(sch) + dev->ifindex;
	}
	return jhash_2words(sum, gp_qdisc_epoch(), 0) | 1;
}

/* cb->args[0]: devices done; cb->args[1]: rules done on the current device.
 * Positions shift when rules or qdiscs come or go between two parts of the
 * dump, so each part takes gp_rule_dump_seq() as cb->seq, and a message after
 * a change carries NLM_F_DUMP_INTR (userspace dumps again). Changes on other
 * devices or in other namespaces do not count. */
static int gp_cmd_rule_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct nlattr **attrs = gp_dump_attrs(cb);
	struct net *net = sock_net(skb->sk);
	int only = attrs[GAPPACE_A_IFINDEX] ? nla_get_u32(attrs[GAPPACE_A_IFINDEX]) : 0;
	struct gp_rule_info *batch;
	struct net_device *dev;
	long dev_pos = 0;
	int err = 0;

	batch = kmalloc_array(GP_DUMP_BATCH, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;

	rtnl_lock();
	cb->seq = gp_rule_dump_seq(net, only);
	if (only && !cb->args[0] && !cb->args[1]) {
		struct Qdisc *sch = gp_lookup_qdisc(net, attrs[GAPPACE_A_IFINDEX], cb->extack);

		if (IS_ERR(sch)) {
			err = PTR_ERR(sch);
			goto out;
		}
	}
	for_each_netdev(net, dev) {
		struct Qdisc *sch;
		unsigned int n, i;

		if (only && dev->ifindex != only)
			continue;
		sch = gp_qdisc_of(dev);
		if (!sch)
			continue;
		if (dev_pos++ < cb->args[0])
			continue;
		for (;;) {
			n = gp_rules_snapshot(sch, cb->args[1], batch, GP_DUMP_BATCH);
			for (i = 0; i < n; i++) {
				if (gp_fill_rule(skb, dev->ifindex, &batch[i], cb))
					goto out;	/* skb full: resume here */
				cb->args[1]++;
			}
			if (n < GP_DUMP_BATCH)
				break;
		}
		cb->args[0]++;
		cb->args[1] = 0;
	}
out:
	rtnl_unlock();
	kfree(batch);
	return err ? err : skb->len;
}

static int gp_fill_qdisc(struct sk_buff *skb, struct net_device *dev, struct Qdisc *sch,
			 u32 portid, u32 seq, int flags)
{
	struct gp_qdisc_info info;
	struct nlattr *qd, *stats;
	void *hdr;

	gp_qdisc_snapshot(sch, &info);
	hdr = genlmsg_put(skb, portid, seq, &gp_genl_family, flags, GAPPACE_CMD_STATS_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, GAPPACE_A_IFINDEX, dev->ifindex))
		goto cancel;
	qd = nla_nest_start(skb, GAPPACE_A_QDISC);
	if (!qd)
		goto cancel;
	if (nla_put_u64_64bit(skb, GAPPACE_A_QDISC_LINKRATE, info.linkrate, GAPPACE_A_QDISC_PAD) ||
	    (info.linkrate_auto && nla_put_flag(skb, GAPPACE_A_QDISC_LINKRATE_AUTO)) ||
	    nla_put_u32(skb, GAPPACE_A_QDISC_IFG, info.ifg) ||
	    nla_put_u32(skb, GAPPACE_A_QDISC_LIMIT, info.limit) ||
	    nla_put_u32(skb, GAPPACE_A_QDISC_RULES, info.rules))
		goto cancel;
	stats = gp_put_stats(skb, GAPPACE_A_QDISC_STATS, &info.stats, info.achieved_rate, info.qlen);
	if (!stats)
		goto cancel;
	if (nla_put_u64_64bit(skb, GAPPACE_A_STATS_PACED_PACKETS, info.paced_packets,
			      GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_GSO_SEGMENTED, info.gso_segmented,
			      GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_IDLE_RESYNCS, info.idle_resyncs,
			      GAPPACE_A_STATS_PAD) ||
	    nla_put_u64_64bit(skb, GAPPACE_A_STATS_GAP_ALLOC_FAILURES, info.gap_alloc_failures,
			      GAPPACE_A_STATS_PAD))
		goto cancel;
	nla_nest_end(skb, stats);
	nla_nest_end(skb, qd);
	genlmsg_end(skb, hdr);
	return 0;
cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

static int gp_cmd_stats_get(struct sk_buff *skb, struct genl_info *info)
{
	struct net_device *dev;
	struct sk_buff *msg;
	struct Qdisc *sch;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, GAPPACE_A_IFINDEX))
		return -EINVAL;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	rtnl_lock();
	sch = gp_lookup_qdisc(genl_info_net(info), info->attrs[GAPPACE_A_IFINDEX], info->extack);
	if (IS_ERR(sch)) {
		rtnl_unlock();
		nlmsg_free(msg);
		return PTR_ERR(sch);
	}
	dev = qdisc_dev(sch);
	err = gp_fill_qdisc(msg, dev, sch, info->snd_portid, info->snd_seq, 0);
	rtnl_unlock();
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);
}

/* cb->args[0]: devices done. */
static int gp_cmd_stats_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct net *net = sock_net(skb->sk);
	struct net_device *dev;
	long pos = 0;

	rtnl_lock();
	for_each_netdev(net, dev) {
		struct Qdisc *sch = gp_qdisc_of(dev);

		if (!sch || pos++ < cb->args[0])
			continue;
		if (gp_fill_qdisc(skb, dev, sch, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
				  NLM_F_MULTI))
			break;
		cb->args[0]++;
	}
	rtnl_unlock();
	return skb->len;
}


/* ------------------------------------------------------------ RTO override */

/* {RTO{tuple | daddr only, ...}}: the connection(s) and, for RTO_SET, the values. */
static int gp_rto_parse(struct genl_info *info, struct gp_rto_tuple *t, bool *by_peer,
			struct gp_rto_request *req)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr *rb[GAPPACE_A_RTO_MAX + 1], *nest;
	bool has_saddr, has_sport, has_dport;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, GAPPACE_A_RTO))
		return -EINVAL;
	nest = info->attrs[GAPPACE_A_RTO];
	err = nla_parse_nested(rb, GAPPACE_A_RTO_MAX, nest, gp_rto_policy, extack);
	if (err)
		return err;

	memset(t, 0, sizeof(*t));
	if (rb[GAPPACE_A_RTO_DADDR_IPV4] && rb[GAPPACE_A_RTO_DADDR_IPV6]) {
		NL_SET_ERR_MSG_ATTR(extack, rb[GAPPACE_A_RTO_DADDR_IPV6], "give one peer address, not two");
		return -EINVAL;
	}
	if (rb[GAPPACE_A_RTO_DADDR_IPV4]) {
		t->family = AF_INET;
		t->daddr.v4 = nla_get_in_addr(rb[GAPPACE_A_RTO_DADDR_IPV4]);
	} else if (rb[GAPPACE_A_RTO_DADDR_IPV6]) {
		t->family = AF_INET6;
		t->daddr.v6 = nla_get_in6_addr(rb[GAPPACE_A_RTO_DADDR_IPV6]);
	} else {
		NL_SET_ERR_ATTR_MISS(extack, nest, GAPPACE_A_RTO_DADDR_IPV4);
		NL_SET_ERR_MSG_MOD(extack, "the peer address (daddr-ipv4 or daddr-ipv6) is missing");
		return -EINVAL;
	}

	has_saddr = rb[GAPPACE_A_RTO_SADDR_IPV4] || rb[GAPPACE_A_RTO_SADDR_IPV6];
	has_sport = rb[GAPPACE_A_RTO_SPORT];
	has_dport = rb[GAPPACE_A_RTO_DPORT];
	*by_peer = !has_saddr && !has_sport && !has_dport;
	if (!*by_peer) {
		if (!has_saddr || !has_sport || !has_dport) {
			NL_SET_ERR_MSG_MOD(extack, "a connection needs saddr, sport, daddr and dport (or only daddr for every connection to the peer)");
			return -EINVAL;
		}
		if ((t->family == AF_INET && !rb[GAPPACE_A_RTO_SADDR_IPV4]) ||
		    (t->family == AF_INET6 && !rb[GAPPACE_A_RTO_SADDR_IPV6])) {
			NL_SET_ERR_MSG_MOD(extack, "local and peer address are of different families");
			return -EINVAL;
		}
		if (t->family == AF_INET)
			t->saddr.v4 = nla_get_in_addr(rb[GAPPACE_A_RTO_SADDR_IPV4]);
		else
			t->saddr.v6 = nla_get_in6_addr(rb[GAPPACE_A_RTO_SADDR_IPV6]);
		t->sport = nla_get_be16(rb[GAPPACE_A_RTO_SPORT]);
		t->dport = nla_get_be16(rb[GAPPACE_A_RTO_DPORT]);
		if (!t->sport || !t->dport) {
			NL_SET_ERR_MSG_MOD(extack, "port 0 is no connection's port");
			return -EINVAL;
		}
	}
	if (!req)
		return 0;

	/* bounds as the kernel's TCP_BPF_RTO_MIN: 2 jiffies .. 200 ms, rounded up to jiffies */
	memset(req, 0, sizeof(*req));
	if (NL_REQ_ATTR_CHECK(extack, nest, rb, GAPPACE_A_RTO_RTO_MIN_US)) {
		NL_SET_ERR_MSG_MOD(extack, "rto-min-us is missing");
		return -EINVAL;
	}
	req->rto_min_us = nla_get_u32(rb[GAPPACE_A_RTO_RTO_MIN_US]);
	req->rto_min = usecs_to_jiffies(req->rto_min_us);
	if (!req->rto_min_us || req->rto_min < TCP_TIMEOUT_MIN || req->rto_min > TCP_RTO_MIN) {
#ifdef NL_SET_ERR_MSG_ATTR_FMT	/* 6.2+: say what 2 jiffies are on this kernel */
		NL_SET_ERR_MSG_ATTR_FMT(extack, rb[GAPPACE_A_RTO_RTO_MIN_US],
					"rto-min-us must be at least 2 jiffies (%u us) and at most 200 ms",
					jiffies_to_usecs(TCP_TIMEOUT_MIN));
#else
		NL_SET_ERR_MSG_ATTR(extack, rb[GAPPACE_A_RTO_RTO_MIN_US],
				    "rto-min-us must be at least 2 jiffies and at most 200 ms");
#endif
		return -EINVAL;
	}
	if (rb[GAPPACE_A_RTO_DELACK_MAX_US]) {
		req->delack_max_us = nla_get_u32(rb[GAPPACE_A_RTO_DELACK_MAX_US]);
		req->delack_max = usecs_to_jiffies(req->delack_max_us);
		if (!req->delack_max_us || req->delack_max >= req->rto_min) {
			NL_SET_ERR_MSG_ATTR(extack, rb[GAPPACE_A_RTO_DELACK_MAX_US],
					    "delack-max-us must be at least 1 jiffy and below the RTO floor");
			return -EINVAL;
		}
	} else {
		req->delack_max = max(req->rto_min - 1, 1U);	/* below the floor */
		req->delack_max_us = jiffies_to_usecs(req->delack_max);
	}
	if (rb[GAPPACE_A_RTO_TTL_MS]) {
		req->ttl_ms = nla_get_u32(rb[GAPPACE_A_RTO_TTL_MS]);
		if (!req->ttl_ms || req->ttl_ms > GP_RTO_TTL_MAX_MS) {
			NL_SET_ERR_MSG_ATTR(extack, rb[GAPPACE_A_RTO_TTL_MS],
					    "ttl-ms must be between 1 ms and one day");
			return -EINVAL;
		}
	}
	return 0;
}

/* Sends @msg, allocated before the change it reports: a change made must not
 * be answered with an error for want of memory. */
static int gp_rto_reply(struct sk_buff *msg, struct genl_info *info, u8 cmd, u32 count,
			const struct gp_rto_result *res)
{
	struct nlattr *nest;
	void *hdr;

	hdr = genlmsg_put_reply(msg, info, &gp_genl_family, 0, cmd);
	if (!hdr)
		goto full;
	nest = nla_nest_start(msg, GAPPACE_A_RTO);
	if (!nest || nla_put_u32(msg, GAPPACE_A_RTO_COUNT, count))
		goto full;
	if (res && (nla_put_u32(msg, GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US, res->effective_rto_min_us) ||
		    nla_put_u32(msg, GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US, res->effective_delack_max_us)))
		goto full;
	nla_nest_end(msg, nest);
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
full:
	nlmsg_free(msg);
	return -EMSGSIZE;
}

static int gp_cmd_rto_set(struct sk_buff *skb, struct genl_info *info)
{
	struct gp_rto_request req;
	struct gp_rto_result res;
	struct gp_rto_tuple t;
	struct sk_buff *msg;
	bool by_peer;
	int err;

	err = gp_check_admin(skb, info);
	if (err)
		return err;
	err = gp_rto_parse(info, &t, &by_peer, &req);
	if (err)
		return err;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	err = gp_rto_set(genl_info_net(info), &t, by_peer, &req, info->snd_portid, &res, info->extack);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return gp_rto_reply(msg, info, GAPPACE_CMD_RTO_SET, res.count, &res);
}

static int gp_cmd_rto_clear(struct sk_buff *skb, struct genl_info *info)
{
	struct gp_rto_tuple t;
	struct sk_buff *msg;
	bool by_peer;
	u32 count;
	int err;

	err = gp_check_admin(skb, info);
	if (err)
		return err;
	err = gp_rto_parse(info, &t, &by_peer, NULL);
	if (err)
		return err;
	msg = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	err = gp_rto_clear(genl_info_net(info), &t, by_peer, &count, info->extack);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return gp_rto_reply(msg, info, GAPPACE_CMD_RTO_CLEAR, count, NULL);
}

static int gp_put_addr(struct sk_buff *skb, int v4_type, int v6_type, u8 family,
		       const __be32 *v4, const struct in6_addr *v6)
{
	return family == AF_INET ? nla_put_in_addr(skb, v4_type, *v4) : nla_put_in6_addr(skb, v6_type, v6);
}

static int gp_fill_rto(struct sk_buff *skb, const struct gp_rto_info *r, u32 portid, u32 seq)
{
	const struct gp_rto_tuple *t = &r->tuple;
	struct nlattr *nest;
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &gp_genl_family, NLM_F_MULTI, GAPPACE_CMD_RTO_GET);
	if (!hdr)
		return -EMSGSIZE;
	nest = nla_nest_start(skb, GAPPACE_A_RTO);
	if (!nest ||
	    gp_put_addr(skb, GAPPACE_A_RTO_SADDR_IPV4, GAPPACE_A_RTO_SADDR_IPV6, t->family, &t->saddr.v4,
			&t->saddr.v6) ||
	    nla_put_be16(skb, GAPPACE_A_RTO_SPORT, t->sport) ||
	    gp_put_addr(skb, GAPPACE_A_RTO_DADDR_IPV4, GAPPACE_A_RTO_DADDR_IPV6, t->family, &t->daddr.v4,
			&t->daddr.v6) ||
	    nla_put_be16(skb, GAPPACE_A_RTO_DPORT, t->dport) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_RTO_MIN_US, r->rto_min_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_DELACK_MAX_US, r->delack_max_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US, r->effective_rto_min_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US, r->effective_delack_max_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_ORIG_RTO_MIN_US, r->orig_rto_min_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_ORIG_DELACK_MAX_US, r->orig_delack_max_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_RTO_US, r->rto_us) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_OWNER_PORTID, r->owner_portid) ||
	    nla_put_u32(skb, GAPPACE_A_RTO_OWNER_PID, r->owner_pid) ||
	    (r->has_ttl && nla_put_u32(skb, GAPPACE_A_RTO_TTL_LEFT_MS, r->ttl_left_ms))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	genlmsg_end(skb, hdr);
	return 0;
}

/* cb->args[0]: overrides of this netns already sent. */
static int gp_cmd_rto_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct gp_rto_info *batch;
	unsigned int n, i;

	batch = kmalloc_array(GP_DUMP_BATCH, sizeof(*batch), GFP_KERNEL);
	if (!batch)
		return -ENOMEM;
	for (;;) {
		n = gp_rto_snapshot(sock_net(skb->sk), cb->args[0], batch, GP_DUMP_BATCH);
		for (i = 0; i < n; i++) {
			if (gp_fill_rto(skb, &batch[i], NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq))
				goto out;	/* skb full: resume here */
			cb->args[0]++;
		}
		if (n < GP_DUMP_BATCH)
			break;
	}
out:
	kfree(batch);
	return skb->len;
}

/* ------------------------------------------------------------------ hints */

enum gp_mcgrp {
	GP_MCGRP_HINTS,
};

#if GP_HAVE_PRIVATE_MCGRP
static const struct genl_multicast_group gp_mcgrps[] = {
	[GP_MCGRP_HINTS] = { .name = GAPPACE_MCGRP_HINTS, .flags = GENL_MCAST_CAP_NET_ADMIN },
};
#endif

/* What the kernel adds to the sender's nest: three u32 attributes. */
#define GP_HINT_STAMP_SIZE	(3 * nla_total_size(sizeof(u32)))
/* The stamped nest must still fit the 16-bit length of an attribute. */
#define GP_HINT_PAYLOAD_MAX	(U16_MAX - NLA_HDRLEN - GP_HINT_STAMP_SIZE)

/* A peer is a host (DADDR only: every connection to it) or one connection
 * (the whole tuple); a partial tuple names nothing, so it is refused. */
static int gp_hint_check_peer(const struct nlattr *peer, struct netlink_ext_ack *extack)
{
	struct nlattr *pb[GAPPACE_A_PEER_MAX + 1], *saddr, *other_saddr;
	int err;

	err = nla_parse_nested(pb, GAPPACE_A_PEER_MAX, peer, gp_peer_policy, extack);
	if (err)
		return err;
	if (pb[GAPPACE_A_PEER_DADDR_IPV4] && pb[GAPPACE_A_PEER_DADDR_IPV6]) {
		NL_SET_ERR_MSG_ATTR(extack, pb[GAPPACE_A_PEER_DADDR_IPV6],
				    "give a peer one address, not two");
		return -EINVAL;
	}
	if (pb[GAPPACE_A_PEER_DADDR_IPV4]) {
		saddr = pb[GAPPACE_A_PEER_SADDR_IPV4];
		other_saddr = pb[GAPPACE_A_PEER_SADDR_IPV6];
	} else if (pb[GAPPACE_A_PEER_DADDR_IPV6]) {
		saddr = pb[GAPPACE_A_PEER_SADDR_IPV6];
		other_saddr = pb[GAPPACE_A_PEER_SADDR_IPV4];
	} else {
		NL_SET_ERR_ATTR_MISS(extack, peer, GAPPACE_A_PEER_DADDR_IPV4);
		NL_SET_ERR_MSG_ATTR(extack, peer, "a peer needs an address (daddr-ipv4 or daddr-ipv6)");
		return -EINVAL;
	}
	if (other_saddr) {
		NL_SET_ERR_MSG_ATTR(extack, other_saddr,
				    "local and peer address of a peer are of different families");
		return -EINVAL;
	}
	if (!saddr && !pb[GAPPACE_A_PEER_SPORT] && !pb[GAPPACE_A_PEER_DPORT])
		return 0;	/* a host */
	if (!saddr || !pb[GAPPACE_A_PEER_SPORT] || !pb[GAPPACE_A_PEER_DPORT]) {
		NL_SET_ERR_MSG_ATTR(extack, peer,
				    "a connection needs saddr, sport, daddr and dport (or only daddr for every connection to the peer)");
		return -EINVAL;
	}
	if (!nla_get_be16(pb[GAPPACE_A_PEER_SPORT]) || !nla_get_be16(pb[GAPPACE_A_PEER_DPORT])) {
		NL_SET_ERR_MSG_ATTR(extack, nla_get_be16(pb[GAPPACE_A_PEER_SPORT]) ?
					    pb[GAPPACE_A_PEER_DPORT] : pb[GAPPACE_A_PEER_SPORT],
				    "port 0 is no connection's port");
		return -EINVAL;
	}
	return 0;
}

/* The policies have checked every attribute; what is left is what they cannot
 * say: which attributes a hint needs, the shape of each peer, their number. */
static int gp_hint_check(struct nlattr *nest, struct netlink_ext_ack *extack)
{
	struct nlattr *hb[GAPPACE_A_HINT_MAX + 1], *attr;
	unsigned int peers = 0;
	int rem, err;

	err = nla_parse_nested(hb, GAPPACE_A_HINT_MAX, nest, gp_hint_policy, extack);
	if (err)
		return err;
	if (NL_REQ_ATTR_CHECK(extack, nest, hb, GAPPACE_A_HINT_EVENT)) {
		NL_SET_ERR_MSG_ATTR(extack, nest, "the hint needs an event (begin or end)");
		return -EINVAL;
	}
	if (NL_REQ_ATTR_CHECK(extack, nest, hb, GAPPACE_A_HINT_PHASE_ID)) {
		NL_SET_ERR_MSG_ATTR(extack, nest, "the hint needs a phase-id");
		return -EINVAL;
	}
	if (nla_get_u32(hb[GAPPACE_A_HINT_EVENT]) == GAPPACE_HINT_EVENT_BEGIN &&
	    NL_REQ_ATTR_CHECK(extack, nest, hb, GAPPACE_A_HINT_KIND)) {
		NL_SET_ERR_MSG_ATTR(extack, nest, "a begin hint needs the kind of the collective");
		return -EINVAL;
	}
	if (!hb[GAPPACE_A_HINT_QUIET_PHASES] != !hb[GAPPACE_A_HINT_QUIET_NS]) {
		NL_SET_ERR_MSG_ATTR(extack, hb[GAPPACE_A_HINT_QUIET_PHASES] ?: hb[GAPPACE_A_HINT_QUIET_NS],
				    "a quiet summary needs both quiet-phases and quiet-ns");
		return -EINVAL;
	}
	nla_for_each_nested(attr, nest, rem) {
		if (nla_type(attr) != GAPPACE_A_HINT_PEER)
			continue;
		if (++peers > GAPPACE_HINT_MAX_PEERS) {
			NL_SET_ERR_MSG_ATTR(extack, attr,
					    "at most " __stringify(GAPPACE_HINT_MAX_PEERS) " peers per hint (send the rest flagged peers-truncated)");
			return -EINVAL;
		}
		err = gp_hint_check_peer(attr, extack);
		if (err)
			return err;
	}
	if (nla_len(nest) > GP_HINT_PAYLOAD_MAX) {
		NL_SET_ERR_MSG_ATTR(extack, nest,
				    "the hint leaves no room for the sender's stamp in 64 KiB: send fewer peers");
		return -EMSGSIZE;
	}
	return 0;
}

#if GP_HAVE_PRIVATE_MCGRP
/*
 * The listener gets the sender's nest as it was sent (it passed the strict
 * policies, so it holds nothing but known attributes) and after it the stamps,
 * which a request may not carry: the thread-group id in the initial pid
 * namespace, the uid in the initial user namespace and the inode of the netns
 * of the sending socket. The hint goes to listeners in that netns only (and,
 * as any netlink multicast, to sockets of other namespaces that asked for
 * NETLINK_LISTEN_ALL_NSID and have CAP_NET_BROADCAST over this one).
 */
static int gp_hint_multicast(struct net *net, const struct nlattr *nest,
			     struct netlink_ext_ack *extack)
{
	struct nlattr *stamped;
	struct sk_buff *msg;
	void *hdr;
	int err;

	/* A first look without allocating. It sees the group's listeners of every
	 * netns; the multicast below delivers in @net only and says ESRCH too. */
	if (!genl_has_listeners(&gp_genl_family, net, GP_MCGRP_HINTS)) {
		NL_SET_ERR_MSG_MOD(extack, "no daemon listens for hints");
		return -ESRCH;
	}
	msg = genlmsg_new(nla_total_size(nla_len(nest) + GP_HINT_STAMP_SIZE), GFP_KERNEL);
	if (!msg) {
		NL_SET_ERR_MSG_MOD(extack, "no memory to pass the hint on");
		return -ENOMEM;
	}
	hdr = genlmsg_put(msg, 0, 0, &gp_genl_family, 0, GAPPACE_CMD_HINT);
	if (!hdr)
		goto too_big;
	stamped = nla_nest_start(msg, GAPPACE_A_HINT);
	if (!stamped ||
	    nla_put_nohdr(msg, nla_len(nest), nla_data(nest)) ||
	    nla_put_u32(msg, GAPPACE_A_HINT_SENDER_PID, task_tgid_nr(current)) ||
	    nla_put_u32(msg, GAPPACE_A_HINT_SENDER_UID, from_kuid(&init_user_ns, current_euid())) ||
	    nla_put_u32(msg, GAPPACE_A_HINT_SENDER_NETNS, net->ns.inum))
		goto too_big;
	nla_nest_end(msg, stamped);
	genlmsg_end(msg, hdr);

	err = genlmsg_multicast_netns(&gp_genl_family, net, msg, 0, GP_MCGRP_HINTS, GFP_KERNEL);
	if (err == -ESRCH)	/* none in @net, or the last one just left */
		NL_SET_ERR_MSG_MOD(extack, "no daemon listens for hints");
	else if (err == -ENOBUFS)
		NL_SET_ERR_MSG_MOD(extack, "a listener's receive buffer is full: it lost the hint");
	else if (err)
		NL_SET_ERR_MSG_MOD(extack, "the hint could not be passed on");
	return err;

too_big:	/* cannot happen: the message was sized for exactly this */
	nlmsg_free(msg);
	NL_SET_ERR_MSG_MOD(extack, "the stamped hint does not fit its message");
	return -EMSGSIZE;
}
#else
static int gp_hint_multicast(struct net *net, const struct nlattr *nest,
			     struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG_MOD(extack,
			   "this kernel cannot keep hints from unprivileged listeners: send them to gappaced's socket");
	return -EOPNOTSUPP;
}
#endif

/* GAPPACE_CMD_HINT needs no privilege: it changes nothing by itself, and the
 * listeners (CAP_NET_ADMIN over the netns) see who sent it. */
static int gp_cmd_hint(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *nest = info->attrs[GAPPACE_A_HINT];
	int err;

	if (GENL_REQ_ATTR_CHECK(info, GAPPACE_A_HINT)) {
		NL_SET_ERR_MSG_MOD(info->extack, "the request needs a hint nest");
		return -EINVAL;
	}
	err = gp_hint_check(nest, info->extack);
	if (err)
		return err;
	return gp_hint_multicast(genl_info_net(info), nest, info->extack);
}

static const struct genl_ops gp_genl_ops[] = {
	{
		.cmd	= GAPPACE_CMD_RULE_NEW,
		.doit	= gp_cmd_rule_new,	/* gp_check_admin() */
	},
	{
		.cmd	= GAPPACE_CMD_RULE_DEL,
		.doit	= gp_cmd_rule_del,	/* gp_check_admin() */
	},
	{
		.cmd	= GAPPACE_CMD_RULE_GET,
		.dumpit	= gp_cmd_rule_dump,
	},
	{
		.cmd	= GAPPACE_CMD_STATS_GET,
		.doit	= gp_cmd_stats_get,
		.dumpit	= gp_cmd_stats_dump,
	},
	{
		.cmd	= GAPPACE_CMD_RULE_SET,
		.doit	= gp_cmd_rule_new,	/* gp_check_admin() */
	},
	{
		.cmd	= GAPPACE_CMD_RTO_SET,
		.doit	= gp_cmd_rto_set,	/* gp_check_admin() */
	},
	{
		.cmd	= GAPPACE_CMD_RTO_CLEAR,
		.doit	= gp_cmd_rto_clear,	/* gp_check_admin() */
	},
	{
		.cmd	= GAPPACE_CMD_RTO_GET,
		.dumpit	= gp_cmd_rto_dump,
	},
	{
		.cmd	= GAPPACE_CMD_HINT,
		.doit	= gp_cmd_hint,		/* anyone: the kernel stamps the sender */
	},
};

static struct genl_family gp_genl_family __ro_after_init = {
	.name		= GAPPACE_GENL_NAME,
	.version	= GAPPACE_GENL_VERSION,
	.maxattr	= GAPPACE_A_MAX,
	.policy		= gp_policy,
	.netnsok	= true,
	/* Every handler takes the lock its state needs (RTNL for rules and stats,
	 * rto.c's mutex and the sockets' own locks for overrides); the global
	 * genl_mutex would only make an RTO request that waits for a busy socket's
	 * lock stall every other family without parallel ops. */
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.ops		= gp_genl_ops,
	.n_ops		= ARRAY_SIZE(gp_genl_ops),
#if GP_HAVE_PRIVATE_MCGRP
	.mcgrps		= gp_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(gp_mcgrps),
#endif
};

int gp_genl_register(void)
{
	return genl_register_family(&gp_genl_family);
}

void gp_genl_unregister(void)
{
	genl_unregister_family(&gp_genl_family);
}
