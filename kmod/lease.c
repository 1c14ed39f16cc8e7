// SPDX-License-Identifier: GPL-2.0
/*
 * lease.c - what a netlink socket sets lives as long as that socket.
 *
 * Flow rules and RTO overrides are leases of the generic netlink socket that
 * made them: a daemon that crashes, or a gapctl that is killed, leaves nothing
 * behind. When a socket is released (NETLINK_URELEASE: closed, or its process
 * died), a work item ends its leases: RTO overrides get their sockets' values
 * back (rto.c), flow rules are removed from every gappace qdisc of the socket's
 * network namespace (qdisc.c), their queued packets continuing unpaced.
 *
 * The notifier runs in the release path, where taking RTNL or a socket lock is
 * no good idea, so the work is queued and runs at once; tests check that the
 * lease ends within a second.
 */
#include <linux/netdevice.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>

#include "gappace.h"

struct gp_lease_end {
	struct work_struct work;
	const struct net *net_id;	/* for comparisons only: may be dying */
	struct net *net;		/* referenced, or NULL if the netns is going away */
	u32 portid;
	u64 before;			/* the lease clock at the release */
};

static struct workqueue_struct *gp_lease_wq;
static atomic64_t gp_lease_clock = ATOMIC64_INIT(0);

u64 gp_lease_stamp(void)
{
	return atomic64_inc_return(&gp_lease_clock);
}

static void gp_lease_end_work(struct work_struct *work)
{
	struct gp_lease_end *end = container_of(work, struct gp_lease_end, work);
	struct net_device *dev;

	gp_rto_release_owner(end->net_id, end->portid, end->before);
	if (end->net) {
		/* a dying netns takes its devices, qdiscs and rules with it anyway */
		rtnl_lock();
		for_each_netdev(end->net, dev) {
			struct Qdisc *sch = gp_qdisc_of(dev);

			if (sch)
				gp_rules_release_owner(sch, end->portid, end->before);
		}
		rtnl_unlock();
		put_net(end->net);
	}
	kfree(end);
}

static int gp_lease_netlink_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;
	struct gp_lease_end *end;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC || !n->portid)
		return NOTIFY_DONE;
	/* Every generic netlink socket on the host ends here. Without a lease of
	 * anybody's, there is nothing to end: no work, no RTNL. (No request of the
	 * released socket is still running: its leases are counted already.) */
	if (!gp_rto_live() && !gp_rules_live())
		return NOTIFY_DONE;
	end = kzalloc(sizeof(*end), GFP_ATOMIC);
	if (!end) {
		pr_warn_ratelimited("gappace: out of memory: leases of netlink port %u stay until unload\n",
				    n->portid);
		return NOTIFY_DONE;
	}
	INIT_WORK(&end->work, gp_lease_end_work);
	end->net_id = n->net;
	end->net = maybe_get_net(n->net);
	end->portid = n->portid;
	/* The socket is out of the port table already, and the work runs later: a
	 * new socket may get the same port id and set leases meanwhile. Those are
	 * stamped after this and stay. */
	end->before = atomic64_read(&gp_lease_clock);
	queue_work(gp_lease_wq, &end->work);
	return NOTIFY_DONE;
}

static struct notifier_block gp_lease_notifier = {
	.notifier_call = gp_lease_netlink_event,
};

int gp_lease_init(void)
{
	int err;

	/* unbound: no work here needs its CPU (and kernels from 7.2 warn
	 * about a workqueue that says neither per-CPU nor unbound) */
	gp_lease_wq = alloc_workqueue("gappace_lease", WQ_UNBOUND, 0);
	if (!gp_lease_wq)
		return -ENOMEM;
	err = netlink_register_notifier(&gp_lease_notifier);
	if (err)
		destroy_workqueue(gp_lease_wq);
	return err;
}

void gp_lease_exit(void)
{
	netlink_unregister_notifier(&gp_lease_notifier);
	destroy_workqueue(gp_lease_wq);	/* runs what is queued, then goes */
}
