// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - gappace module entry: registers the qdisc, the RTO override, the
 * lease tracking and the generic netlink family, and unwinds in reverse order.
 */
#include <linux/module.h>
#include <uapi/linux/gappace.h>

#include "compat.h"
#include "gappace.h"

#ifndef GAPPACE_VERSION
#define GAPPACE_VERSION "0.1"
#endif

static int __init gp_mod_init(void)
{
	int err;

	err = gp_qdisc_register();
	if (err)
		goto err_qdisc;
	err = gp_rto_init();
	if (err)
		goto err_rto;
	err = gp_lease_init();
	if (err)
		goto err_lease;
	err = gp_genl_register();
	if (err)
		goto err_genl;
	pr_info("gappace " GAPPACE_VERSION ": gap-frame pacing qdisc and netlink family loaded\n");
	return 0;

err_genl:
	gp_lease_exit();
err_lease:
	gp_rto_exit();
err_rto:
	gp_qdisc_unregister();
err_qdisc:
	return err;
}

static void __exit gp_mod_exit(void)
{
	gp_genl_unregister();	/* no new requests */
	gp_lease_exit();	/* lease ends already queued run first */
	gp_rto_exit();		/* every overridden socket gets its values back */
	gp_qdisc_unregister();
}

module_init(gp_mod_init);
module_exit(gp_mod_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gappace: wire-clock pacing with 802.3x gap frames");
MODULE_VERSION(GAPPACE_VERSION);
MODULE_ALIAS_NET_SCH(GAPPACE_QDISC_KIND);
MODULE_ALIAS_GENL_FAMILY(GAPPACE_GENL_NAME);
