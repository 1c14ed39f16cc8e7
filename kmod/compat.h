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

/* Parsed attributes of a dump request: genl_dumpit_info grew a genl_info in 6.2. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
#define gp_dump_attrs(cb) (genl_info_dump(cb)->attrs)
#else
#define gp_dump_attrs(cb) (genl_dumpit_info(cb)->attrs)
#endif

#endif /* GAPPACE_COMPAT_H */
