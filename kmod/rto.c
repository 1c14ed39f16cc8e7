// SPDX-License-Identifier: GPL-2.0
/*
 * rto.c - per-socket minimum-RTO override with leases.
 *
 * The tail of a message lost in an all-to-all costs a whole RTO, at least
 * 200 ms in Linux. For the connections of a collective, and only while it
 * runs, an administrator's daemon lowers the RTO floor (icsk_rto_min) and the
 * delayed-ACK ceiling (icsk_delack_max) of sockets it does not own.
 *
 *  - Lookup: by 4-tuple in the requester's netns (the established hash), or
 *    every established socket to a peer address (a walk of the hash).
 *  - Bounds as TCP_BPF_RTO_MIN: from TCP_TIMEOUT_MIN (2 jiffies) to
 *    TCP_RTO_MIN (200 ms), rounded up to jiffies; the reply reports what was
 *    applied. The delayed-ACK ceiling defaults to the floor minus one jiffy
 *    (at least one), so that a receiver's delayed ACK cannot fire the
 *    sender's shortened timer; 6.1 does not derive it from the floor itself.
 *  - Immediate effect: the RTO is srtt + rttvar with rttvar floored at
 *    rto_min, and the floor only decays over several RTTs after a change.
 *    We apply at once what the estimator converges to:
 *        rttvar = mdev_max = max(mdev, new floor);  rto = srtt + rttvar
 *    (bounded by tcp_bound_rto(): TCP_RTO_MAX, or from 6.15 the socket's own
 *    TCP_RTO_MAX_MS). It keeps the measured deviation mdev, so the
 *    RTO never drops below what the estimator itself would compute with the
 *    new floor; raising the floor (on restore) takes effect at once too.
 *  - Leases: each override is owned by the netlink socket that made it. When
 *    that socket is released (the process closed it or died; lease.c tells
 *    us), a TTL passes, or the module unloads, the socket's own values come
 *    back. We hold a
 *    reference on each overridden socket: a connection that closes meanwhile
 *    is simply dropped from the list by the next sweep, never dereferenced
 *    after free.
 *
 * Locking: gp_rto_lock (a mutex) protects the override list; socket fields
 * change under lock_sock(). Order: gp_rto_lock, then the socket lock.
 */
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/genetlink.h>
#include <net/inet6_hashtables.h>
#include <net/inet_hashtables.h>
#include <net/ipv6.h>
#include <net/tcp.h>
#include <uapi/linux/gappace.h>

#include "compat.h"
#include "gappace.h"

#define GP_RTO_MAX_OVERRIDES	65536
#define GP_RTO_SWEEP		(HZ / 10)	/* TTLs and closed sockets: 100 ms */

struct gp_rto_override {
	struct list_head list;
	struct sock *sk;		/* referenced */
	possible_net_t net;
	u32 owner_portid;
	u32 owner_pid;
	u64 lease_stamp;		/* gp_lease_stamp() when its owner set it */
	u32 orig_rto_min;		/* jiffies, as the socket had them */
	u32 orig_delack_max;
	u32 rto_min_us;			/* as requested */
	u32 delack_max_us;
	u32 rto_min;			/* jiffies, as applied */
	u32 delack_max;
	unsigned long expires;		/* jiffies; 0 = no TTL */
	struct gp_rto_tuple tuple;
};

static LIST_HEAD(gp_rto_list);
static DEFINE_MUTEX(gp_rto_lock);
static unsigned int gp_rto_count;
static struct workqueue_struct *gp_rto_wq;	/* the sweep: may sleep */
static void gp_rto_sweep(struct work_struct *work);
static DECLARE_DELAYED_WORK(gp_rto_sweeper, gp_rto_sweep);

/* ------------------------------------------------------------ sockets */

/* The socket's floor as TCP uses it (a locked route metric wins). */
static u32 gp_effective_rto_min_us(struct sock *sk)
{
	u32 us;

	rcu_read_lock();	/* the route's metrics */
	us = tcp_rto_min_us(sk);
	rcu_read_unlock();
	return us;
}

/*
 * Set the floor and ceiling and bring the estimator in line at once. Under the
 * socket lock. A timer backing off (icsk_backoff > 0, a loss episode) keeps
 * its doubled RTO: recomputing it from srtt would restart the doubling from the
 * new floor; the next ACK of new data recomputes it from the estimator anyway.
 */
static void gp_rto_apply_locked(struct sock *sk, u32 rto_min, u32 delack_max)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	WRITE_ONCE(icsk->icsk_rto_min, rto_min);
	WRITE_ONCE(icsk->icsk_delack_max, delack_max);
	if (sk->sk_state != TCP_CLOSE && tp->srtt_us) {
		u32 floor_us = gp_effective_rto_min_us(sk);

		tp->mdev_max_us = max(tp->mdev_us, floor_us);
		tp->rttvar_us = tp->mdev_max_us;
		if (!icsk->icsk_backoff) {
			icsk->icsk_rto = __tcp_set_rto(tp);
			tcp_bound_rto(sk);
		}
	}
}

static void gp_rto_apply(struct sock *sk, u32 rto_min, u32 delack_max)
{
	lock_sock(sk);
	gp_rto_apply_locked(sk, rto_min, delack_max);
	release_sock(sk);
}

/*
 * The socket's own values back, each only while it is still ours: a floor or
 * ceiling its owner set since (TCP_RTO_MIN_US from 6.15, TCP_BPF_RTO_MIN,
 * TCP_BPF_DELACK_MAX) is its choice now and stays, as it would without us.
 */
static void gp_rto_restore(struct gp_rto_override *o)
{
	struct inet_connection_sock *icsk = inet_csk(o->sk);
	u32 rto_min, delack_max;

	lock_sock(o->sk);
	rto_min = READ_ONCE(icsk->icsk_rto_min);
	delack_max = READ_ONCE(icsk->icsk_delack_max);
	gp_rto_apply_locked(o->sk, rto_min == o->rto_min ? o->orig_rto_min : rto_min,
			    delack_max == o->delack_max ? o->orig_delack_max : delack_max);
	release_sock(o->sk);
}

static void gp_rto_free(struct gp_rto_override *o)
{
	list_del(&o->list);
	gp_rto_count--;
	sock_put(o->sk);
	kfree(o);
}

/* An IPv6 socket connected to an IPv4 peer (v4-mapped) is an IPv4 connection. */
static int gp_sk_family(const struct sock *sk)
{
#if IS_ENABLED(CONFIG_IPV6)
	if (sk->sk_family == AF_INET6 && ipv6_addr_v4mapped(&sk->sk_v6_daddr))
		return AF_INET;
#endif
	return sk->sk_family;
}

static bool gp_sk_to_peer(const struct sock *sk, const struct gp_rto_tuple *peer)
{
	if (gp_sk_family(sk) != peer->family)
		return false;
	if (peer->family == AF_INET)
		return sk->sk_daddr == peer->daddr.v4;
#if IS_ENABLED(CONFIG_IPV6)
	return ipv6_addr_equal(&sk->sk_v6_daddr, &peer->daddr.v6);
#else
	return false;
#endif
}

/* Up to @max established sockets of @net to the peer of @t, referenced. */
static unsigned int gp_walk_established(struct net *net, const struct gp_rto_tuple *t,
					struct sock **out, unsigned int max)
{
	struct inet_hashinfo *hinfo = net->ipv4.tcp_death_row.hashinfo;
	unsigned int i, n = 0;

	for (i = 0; i <= hinfo->ehash_mask && n < max; i++) {
		struct inet_ehash_bucket *head = &hinfo->ehash[i];
		struct hlist_nulls_node *node;
		struct sock *sk;

		if (hlist_nulls_empty(&head->chain))
			continue;
		spin_lock_bh(inet_ehash_lockp(hinfo, i));
		sk_nulls_for_each(sk, node, &head->chain) {
			/* timewait sockets share the hash: look at common fields first */
			if (sk->sk_state != TCP_ESTABLISHED || !net_eq(sock_net(sk), net) ||
			    !gp_sk_to_peer(sk, t))
				continue;
			if (n < max && refcount_inc_not_zero(&sk->sk_refcnt))
				out[n++] = sk;
		}
		spin_unlock_bh(inet_ehash_lockp(hinfo, i));
		cond_resched();
	}
	return n;
}

static struct sock *gp_lookup_established_dif(struct net *net, const struct gp_rto_tuple *t,
					      int dif)
{
	struct inet_hashinfo *hinfo = net->ipv4.tcp_death_row.hashinfo;

	/* the established hash is keyed from the incoming packet's view: the
	 * peer is the source, the local end the destination */
	if (t->family == AF_INET)
		return gp_lookup_established4(net, hinfo, t->daddr.v4, t->dport, t->saddr.v4,
					      ntohs(t->sport), dif);
#if IS_ENABLED(CONFIG_IPV6)
	return gp_lookup_established6(net, hinfo, &t->daddr.v6, t->dport, &t->saddr.v6,
				      ntohs(t->sport), dif);
#else
	return NULL;
#endif
}

/* @sk if it is established, else NULL with its reference dropped: the lookup
 * also finds timewait and request sockets of the tuple. */
static struct sock *gp_established_only(struct sock *sk)
{
	if (sk && sk->sk_state != TCP_ESTABLISHED) {
		sock_gen_put(sk);
		return NULL;
	}
	return sk;
}

/* An established TCP socket by tuple in @net, referenced, or NULL. */
static struct sock *gp_lookup_tuple(struct net *net, const struct gp_rto_tuple *t)
{
	struct net_device *dev;
	struct sock *sk;

	/* The hash chains are walked under RCU (as in softirq): a socket freed
	 * meanwhile stays readable, and the lookup takes a reference on the
	 * one it returns. A socket bound to a device (SO_BINDTODEVICE, a VRF,
	 * an IPv6 link-local peer) matches only packets of that device, so
	 * when no unbound socket has the tuple, each device of the namespace
	 * is asked in turn: one hash lookup per device, where a walk of the
	 * whole established hash would take each bucket's lock. */
	rcu_read_lock();
	sk = gp_established_only(gp_lookup_established_dif(net, t, 0));
	if (!sk) {
		for_each_netdev_rcu(net, dev) {
			sk = gp_established_only(gp_lookup_established_dif(net, t, dev->ifindex));
			if (sk)
				break;
		}
	}
	rcu_read_unlock();
	return sk;
}

static void gp_sk_tuple(const struct sock *sk, struct gp_rto_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = gp_sk_family(sk);
	t->sport = htons(sk->sk_num);
	t->dport = sk->sk_dport;
	if (t->family == AF_INET) {
		t->saddr.v4 = sk->sk_rcv_saddr;
		t->daddr.v4 = sk->sk_daddr;
	}
#if IS_ENABLED(CONFIG_IPV6)
	else {
		t->saddr.v6 = sk->sk_v6_rcv_saddr;
		t->daddr.v6 = sk->sk_v6_daddr;
	}
#endif
}

static struct gp_rto_override *gp_rto_find(struct sock *sk)
{
	struct gp_rto_override *o;

	list_for_each_entry(o, &gp_rto_list, list)
		if (o->sk == sk)
			return o;
	return NULL;
}

/* --------------------------------------------------------------- API */

int gp_rto_set(struct net *net, const struct gp_rto_tuple *t, bool by_peer,
	       const struct gp_rto_request *req, u32 owner_portid, struct gp_rto_result *res,
	       struct netlink_ext_ack *extack)
{
	unsigned int max = by_peer ? 4096 : 1, n, i;
	struct gp_rto_override *fresh;
	struct sock **socks;
	int err = 0;

	socks = kmalloc_array(max, sizeof(*socks), GFP_KERNEL);
	if (!socks)
		return -ENOMEM;
	if (by_peer) {
		n = gp_walk_established(net, t, socks, max);
	} else {
		socks[0] = gp_lookup_tuple(net, t);
		n = socks[0] ? 1 : 0;
	}
	if (!n) {
		if (by_peer)
			NL_SET_ERR_MSG_MOD(extack, "no established TCP connection to this peer");
		else
			NL_SET_ERR_MSG_MOD(extack, "no established TCP connection with this tuple");
		kfree(socks);
		return -ENOENT;
	}

	memset(res, 0, sizeof(*res));
	mutex_lock(&gp_rto_lock);
	for (i = 0; i < n; i++) {
		struct sock *sk = socks[i];
		struct gp_rto_override *o = gp_rto_find(sk);

		if (!o) {
			if (gp_rto_count >= GP_RTO_MAX_OVERRIDES) {
				NL_SET_ERR_MSG_MOD(extack, "too many RTO overrides");
				err = -ENOSPC;
				sock_put(sk);
				continue;
			}
			fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
			if (!fresh) {
				err = -ENOMEM;
				sock_put(sk);
				continue;
			}
			o = fresh;
			o->sk = sk;	/* keeps the lookup's reference */
			write_pnet(&o->net, net);
			o->orig_rto_min = READ_ONCE(inet_csk(sk)->icsk_rto_min);
			o->orig_delack_max = READ_ONCE(inet_csk(sk)->icsk_delack_max);
			gp_sk_tuple(sk, &o->tuple);
			list_add_tail(&o->list, &gp_rto_list);
			gp_rto_count++;
		} else {
			sock_put(sk);	/* the override holds its own reference */
		}
		/* a later request takes the lease over; the originals stay */
		o->owner_portid = owner_portid;
		o->owner_pid = task_tgid_nr(current);
		o->lease_stamp = gp_lease_stamp();
		o->rto_min_us = req->rto_min_us;
		o->delack_max_us = req->delack_max_us;
		o->rto_min = req->rto_min;
		o->delack_max = req->delack_max;
		o->expires = req->ttl_ms ? jiffies + msecs_to_jiffies(req->ttl_ms) : 0;
		gp_rto_apply(sk, o->rto_min, o->delack_max);
		res->count++;
		res->effective_rto_min_us = gp_effective_rto_min_us(sk);
		res->effective_delack_max_us = jiffies_to_usecs(READ_ONCE(inet_csk(sk)->icsk_delack_max));
	}
	/* queue, not mod: a pending sweep keeps its time. Postponing it on every
	 * request would starve it under a daemon that sets floors more often
	 * than every sweep period: TTLs would never end. */
	if (gp_rto_count)
		queue_delayed_work(gp_rto_wq, &gp_rto_sweeper, GP_RTO_SWEEP);
	mutex_unlock(&gp_rto_lock);
	kfree(socks);
	return res->count ? 0 : err;
}

static bool gp_rto_matches(const struct gp_rto_override *o, struct net *net,
			   const struct gp_rto_tuple *t, bool by_peer)
{
	if (!net_eq(read_pnet(&o->net), net) || o->tuple.family != t->family)
		return false;
	if (by_peer)
		return gp_sk_to_peer(o->sk, t);
	if (o->tuple.sport != t->sport || o->tuple.dport != t->dport)
		return false;
	if (t->family == AF_INET)
		return o->tuple.saddr.v4 == t->saddr.v4 && o->tuple.daddr.v4 == t->daddr.v4;
	return ipv6_addr_equal(&o->tuple.saddr.v6, &t->saddr.v6) &&
	       ipv6_addr_equal(&o->tuple.daddr.v6, &t->daddr.v6);
}

int gp_rto_clear(struct net *net, const struct gp_rto_tuple *t, bool by_peer, u32 *count,
		 struct netlink_ext_ack *extack)
{
	struct gp_rto_override *o, *tmp;

	*count = 0;
	mutex_lock(&gp_rto_lock);
	list_for_each_entry_safe(o, tmp, &gp_rto_list, list) {
		if (!gp_rto_matches(o, net, t, by_peer))
			continue;
		gp_rto_restore(o);
		gp_rto_free(o);
		(*count)++;
	}
	mutex_unlock(&gp_rto_lock);
	if (!*count) {
		NL_SET_ERR_MSG_MOD(extack, "no RTO override matches");
		return -ENOENT;
	}
	return 0;
}

unsigned int gp_rto_snapshot(struct net *net, unsigned int first, struct gp_rto_info *out,
			     unsigned int max)
{
	struct gp_rto_override *o;
	unsigned int pos = 0, n = 0;

	mutex_lock(&gp_rto_lock);
	list_for_each_entry(o, &gp_rto_list, list) {
		struct gp_rto_info *info = &out[n];

		if (!net_eq(read_pnet(&o->net), net) || pos++ < first)
			continue;
		if (n == max)
			break;
		info->tuple = o->tuple;
		info->rto_min_us = o->rto_min_us;
		info->delack_max_us = o->delack_max_us;
		info->effective_rto_min_us = gp_effective_rto_min_us(o->sk);
		info->effective_delack_max_us = jiffies_to_usecs(READ_ONCE(inet_csk(o->sk)->icsk_delack_max));
		info->orig_rto_min_us = jiffies_to_usecs(o->orig_rto_min);
		info->orig_delack_max_us = jiffies_to_usecs(o->orig_delack_max);
		info->rto_us = jiffies_to_usecs(READ_ONCE(inet_csk(o->sk)->icsk_rto));
		info->owner_portid = o->owner_portid;
		info->owner_pid = o->owner_pid;
		info->has_ttl = o->expires != 0;
		info->ttl_left_ms = o->expires && time_before(jiffies, o->expires) ?
				    jiffies_to_msecs(o->expires - jiffies) : 0;
		n++;
	}
	mutex_unlock(&gp_rto_lock);
	return n;
}

/* Restores what @pred selects; called with gp_rto_lock held. */
static void gp_rto_restore_where(bool (*pred)(const struct gp_rto_override *, const void *),
				 const void *arg)
{
	struct gp_rto_override *o, *tmp;

	list_for_each_entry_safe(o, tmp, &gp_rto_list, list) {
		if (!pred(o, arg))
			continue;
		gp_rto_restore(o);
		gp_rto_free(o);
	}
}

/*
 * An override ends when its TTL passes or its connection is gone: closed, or
 * the socket connected again elsewhere (connect(AF_UNSPEC), then connect()),
 * which the sweep may see only as a new tuple. The socket gets its own values
 * back either way: it may be connected again later.
 */
static bool gp_rto_expired(const struct gp_rto_override *o, const void *unused)
{
	struct gp_rto_tuple now;

	if (o->sk->sk_state == TCP_CLOSE || (o->expires && time_after_eq(jiffies, o->expires)))
		return true;
	gp_sk_tuple(o->sk, &now);
	return memcmp(&now, &o->tuple, sizeof(now)) != 0;
}

static void gp_rto_sweep(struct work_struct *work)
{
	mutex_lock(&gp_rto_lock);
	gp_rto_restore_where(gp_rto_expired, NULL);
	if (gp_rto_count)
		mod_delayed_work(gp_rto_wq, &gp_rto_sweeper, GP_RTO_SWEEP);
	mutex_unlock(&gp_rto_lock);
}

/* ------------------------------------------------------------ leases */

static bool gp_rto_owned_by(const struct gp_rto_override *o, const void *arg)
{
	const struct gp_rto_override *owner = arg;

	return o->owner_portid == owner->owner_portid && read_pnet(&o->net) == read_pnet(&owner->net) &&
	       o->lease_stamp <= owner->lease_stamp;
}

unsigned int gp_rto_live(void)
{
	return READ_ONCE(gp_rto_count);
}

/* The netlink socket @portid of @net was released (lease.c): its overrides
 * stamped at or before @before end. @net is only compared, never dereferenced:
 * it may be dying. */
void gp_rto_release_owner(const struct net *net, u32 portid, u64 before)
{
	struct gp_rto_override key = { .owner_portid = portid, .lease_stamp = before };

	if (!READ_ONCE(gp_rto_count))
		return;
	write_pnet(&key.net, (struct net *)net);
	mutex_lock(&gp_rto_lock);
	gp_rto_restore_where(gp_rto_owned_by, &key);
	mutex_unlock(&gp_rto_lock);
}

int gp_rto_init(void)
{
	/* unbound: no work here needs its CPU (and kernels from 7.2 warn
	 * about a workqueue that says neither per-CPU nor unbound) */
	gp_rto_wq = alloc_workqueue("gappace_rto", WQ_UNBOUND, 0);
	return gp_rto_wq ? 0 : -ENOMEM;
}

static bool gp_rto_all(const struct gp_rto_override *o, const void *unused)
{
	return true;
}

/* Module unload: every override ends, every socket gets its values back. */
void gp_rto_exit(void)
{
	cancel_delayed_work_sync(&gp_rto_sweeper);
	mutex_lock(&gp_rto_lock);
	gp_rto_restore_where(gp_rto_all, NULL);
	mutex_unlock(&gp_rto_lock);
	destroy_workqueue(gp_rto_wq);
}
