/* SPDX-License-Identifier: GPL-2.0 */
/* Differences between the kernels we build against (6.1 .. current). */
#ifndef GAPPACE_COMPAT_H
#define GAPPACE_COMPAT_H

#include <linux/version.h>
#include <net/genetlink.h>
#include <net/pkt_sched.h>

/* skb_gso_segment() moved to its own header in 6.5. */
#if __has_include(<net/gso.h>)
#include <net/gso.h>
#endif

/* 6.1 autoloads qdisc modules as "sch_<kind>", later kernels as "net-sch-<kind>". */
#ifndef MODULE_ALIAS_NET_SCH
#define MODULE_ALIAS_NET_SCH(id) MODULE_ALIAS("sch_" id)
#endif

/* Parsed attributes of a dump request: genl_dumpit_info grew a genl_info in 6.6. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0)
#define gp_dump_attrs(cb) (genl_info_dump(cb)->attrs)
#else
#define gp_dump_attrs(cb) (genl_dumpit_info(cb)->attrs)
#endif

/*
 * Who may subscribe to the "hints" group. Hints carry other users' pids, uids
 * and communication plans, so only CAP_NET_ADMIN over the network namespace
 * may listen. genl_bind() checks a group's GENL_MCAST_CAP_NET_ADMIN since
 * upstream 6.7, and the stable series got it too (Debian's 6.1.0-56 and 6.12
 * both have it): bind() or NETLINK_ADD_MEMBERSHIP by a task without the
 * capability over the netns's user namespace fails with EPERM. The macro is
 * the test, not the version: it came with the check. Kernels without it let
 * anyone join any generic netlink group, and nothing a module can hook
 * refuses a subscription there: the family's bind callback (6.8+) cannot
 * veto, and netlink_broadcast_filtered() is not exported on 6.1. On those the
 * module offers no "hints" group and refuses GAPPACE_CMD_HINT with
 * EOPNOTSUPP, so that libgapctl uses gappaced's Unix socket, which stamps
 * senders from SO_PEERCRED.
 */
#ifdef GENL_MCAST_CAP_NET_ADMIN
#define GP_HAVE_PRIVATE_MCGRP 1
#else
#define GP_HAVE_PRIVATE_MCGRP 0
#endif

/*
 * Established-socket lookup. 6.18 dropped the hashinfo argument (TCP was
 * the last user after DCCP's removal; the helpers take the netns's own).
 * @hinfo is ignored there. @dif: the device a packet would arrive on (0:
 * none, which matches only sockets not bound to a device).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 18, 0)
#define gp_lookup_established4(net, hinfo, saddr, sport, daddr, hnum, dif) \
	({ (void)(hinfo); __inet_lookup_established(net, saddr, sport, daddr, hnum, dif, 0); })
#define gp_lookup_established6(net, hinfo, saddr, sport, daddr, hnum, dif) \
	({ (void)(hinfo); __inet6_lookup_established(net, saddr, sport, daddr, hnum, dif, 0); })
#else
#define gp_lookup_established4(net, hinfo, saddr, sport, daddr, hnum, dif) \
	__inet_lookup_established(net, hinfo, saddr, sport, daddr, hnum, dif, 0)
#define gp_lookup_established6(net, hinfo, saddr, sport, daddr, hnum, dif) \
	__inet6_lookup_established(net, hinfo, saddr, sport, daddr, hnum, dif, 0)
#endif

/*
 * What the qdisc core counts for an skb the qdisc made itself (a GSO
 * segment, a gap frame): its length, and since 6.19 its packet count
 * (pkt_segs, which bstats now read instead of gso_segs; a segment still
 * carries its parent's, a gap frame's clone carries 0).
 */
static inline void gp_set_qdisc_len(struct sk_buff *skb, unsigned int len)
{
	qdisc_skb_cb(skb)->pkt_len = len;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 19, 0)
	qdisc_skb_cb(skb)->pkt_segs = 1;
#endif
}

#endif /* GAPPACE_COMPAT_H */
