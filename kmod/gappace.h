/* SPDX-License-Identifier: GPL-2.0 */
/* Interfaces between the parts of the gappace module. */
#ifndef GAPPACE_H
#define GAPPACE_H

#include <linux/in6.h>
#include <linux/netdevice.h>
#include <linux/types.h>
#include <net/sch_generic.h>

/* A destination prefix, host bits cleared. */
struct gp_prefix {
	u8 family;	/* AF_INET or AF_INET6 */
	u8 len;		/* prefix length in bits */
	union {
		__be32 v4;
		struct in6_addr v6;
	} addr;
};

struct gp_counters {
	u64 data_packets;
	u64 data_bytes;
	u64 data_wire_bytes;
	u64 gap_frames;
	u64 gap_bytes;
	u64 gap_wire_bytes;
	u64 drops;
};

/* What RULE_NEW / RULE_SET ask for. */
struct gp_rule_request {
	struct gp_prefix prefix;
	u64 rate;
	u32 group;	/* 0: a schedule of its own */
};

/* A copy of one rule, taken under the qdisc lock, for netlink replies. A
 * grouped rule has its group's rate, backlog and counters. */
struct gp_rule_info {
	struct gp_prefix prefix;
	u64 rate;
	u32 group;
	u32 owner_portid;
	u64 achieved_rate;
	u32 backlog;
	struct gp_counters stats;
};

/* A copy of the qdisc's configuration and counters. */
struct gp_qdisc_info {
	u64 linkrate;
	bool linkrate_auto;
	u32 ifg;
	u32 limit;
	u32 rules;
	u32 qlen;
	u64 achieved_rate;
	struct gp_counters stats;
	u64 paced_packets;
	u64 gso_segmented;
	u64 idle_resyncs;
	u64 gap_alloc_failures;
};

#define GP_RATE_MIN		1000ULL		/* bit/s */
#define GP_MAX_RULES		65536
#define GP_RTO_TTL_MAX_MS	(24U * 3600 * 1000)	/* an RTO override's TTL: one day at most */

/* qdisc.c */
int gp_qdisc_register(void);
void gp_qdisc_unregister(void);
/* The gappace root qdisc of @dev, or NULL. Caller holds RTNL. */
struct Qdisc *gp_qdisc_of(struct net_device *dev);
void gp_prefix_mask(struct gp_prefix *prefix);
int gp_rule_set(struct Qdisc *sch, const struct gp_rule_request *req, bool create, bool replace,
		u32 owner_portid, struct netlink_ext_ack *extack);
/* The rules of netlink port @portid stamped at or before @before go (lease.c). */
unsigned int gp_rules_release_owner(struct Qdisc *sch, u32 portid, u64 before);
/* Rules that exist on any device: none, and a released socket has none to end. */
unsigned int gp_rules_live(void);
/* Moves whenever a gappace qdisc comes or goes, on any device. */
u32 gp_qdisc_epoch(void);
/* Moves whenever a rule of @sch comes or goes. Under RTNL. */
u32 gp_rules_generation(struct Qdisc *sch);
int gp_rule_del(struct Qdisc *sch, const struct gp_prefix *prefix, struct netlink_ext_ack *extack);
/* Copies up to @max rules starting at position @first; returns how many (a
 * dump across calls checks gp_rules_generation() for changes in between). */
unsigned int gp_rules_snapshot(struct Qdisc *sch, unsigned int first, struct gp_rule_info *out,
			       unsigned int max);
void gp_qdisc_snapshot(struct Qdisc *sch, struct gp_qdisc_info *out);

/* A TCP connection as ss shows it: s* the local end, d* the peer (or only
 * daddr, for "every connection to this peer"). Ports in network order. */
struct gp_rto_tuple {
	u8 family;
	__be16 sport, dport;
	union {
		__be32 v4;
		struct in6_addr v6;
	} saddr, daddr;
};

struct gp_rto_request {
	u32 rto_min_us, delack_max_us;	/* as asked (delack: the default if not) */
	u32 rto_min, delack_max;	/* jiffies to apply */
	u32 ttl_ms;			/* 0 = until the lease ends */
};

struct gp_rto_result {
	u32 count;
	u32 effective_rto_min_us, effective_delack_max_us;
};

struct gp_rto_info {
	struct gp_rto_tuple tuple;
	u32 rto_min_us, delack_max_us;
	u32 effective_rto_min_us, effective_delack_max_us;
	u32 orig_rto_min_us, orig_delack_max_us;
	u32 rto_us;
	u32 owner_portid, owner_pid;
	bool has_ttl;
	u32 ttl_left_ms;
};

/* rto.c */
int gp_rto_init(void);
void gp_rto_exit(void);
void gp_rto_release_owner(const struct net *net, u32 portid, u64 before);
unsigned int gp_rto_live(void);
int gp_rto_set(struct net *net, const struct gp_rto_tuple *t, bool by_peer,
	       const struct gp_rto_request *req, u32 owner_portid, struct gp_rto_result *res,
	       struct netlink_ext_ack *extack);
int gp_rto_clear(struct net *net, const struct gp_rto_tuple *t, bool by_peer, u32 *count,
		 struct netlink_ext_ack *extack);
unsigned int gp_rto_snapshot(struct net *net, unsigned int first, struct gp_rto_info *out,
			     unsigned int max);

/* lease.c: when a netlink socket is released, what it set ends */
int gp_lease_init(void);
void gp_lease_exit(void);
/*
 * A lease's stamp, taken when a socket makes or takes over a rule or an
 * override: a release ends only the leases stamped before it, so that a new
 * socket that got the released one's port id keeps what it set meanwhile.
 */
u64 gp_lease_stamp(void);

/* netlink.c */
int gp_genl_register(void);
void gp_genl_unregister(void);

#endif /* GAPPACE_H */
