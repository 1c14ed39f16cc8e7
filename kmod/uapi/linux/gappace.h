/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * gappace: the contract between the gappace kernel module and userspace.
 *
 * This header is append-only. Enum values never change meaning or number;
 * new attributes, commands and structure members are only ever added at
 * the end. Userspace must accept replies that carry attributes it does not
 * know and structures longer than the ones it was built with.
 *
 * Units, everywhere:
 *   rates      bit/s on the wire, u64. A rate counts *wire* bytes: a frame of
 *              L bytes (without FCS) costs max(L + 4, 64) + 8 + 12 wire bytes
 *              (FCS, minimum frame, preamble, inter-packet gap).
 *   sizes      bytes. "bytes" counters are frame bytes without FCS (what a
 *              capture shows); "wire bytes" counters are the wire cost above.
 *
 * Two interfaces live here:
 *   1. the `gappace` qdisc options (rtnetlink, TCA_OPTIONS) and its xstats;
 *   2. the `gappace` generic netlink family (flow rules and statistics),
 *      specified in Documentation/netlink/gappace.yaml.
 */
#ifndef _UAPI_LINUX_GAPPACE_H
#define _UAPI_LINUX_GAPPACE_H

#include <linux/types.h>

/* ---------------------------------------------------------------- qdisc */

#define GAPPACE_QDISC_KIND "gappace"

/* Standard inter-frame gap of Ethernet, bytes: the default of TCA_GAPPACE_IFG. */
#define GAPPACE_IFG_STANDARD	12
#define GAPPACE_IFG_MAX		(16U << 20)
/* Largest TCA_GAPPACE_LOOKAHEAD, ns (one second). */
#define GAPPACE_LOOKAHEAD_MAX	1000000000U

/* Nested in TCA_OPTIONS. All optional; validated all, then committed. */
enum {
	TCA_GAPPACE_UNSPEC,
	TCA_GAPPACE_PAD,
	TCA_GAPPACE_LINKRATE,	/* u64 bit/s of the wire; 0 = read from the device (default) */
	TCA_GAPPACE_IFG,	/* u32 bytes: total gap after every data frame, >= 12 (default 12) */
	TCA_GAPPACE_LIMIT,	/* u32 packets queued at most (default: device txqueuelen, at least 1000) */
	TCA_GAPPACE_LOOKAHEAD,	/* u32 ns: hand frames to the device at most this far ahead of real
				 * time on the wire clock; 0 = no bound (default): the device's own
				 * back-pressure (a NIC's ring) keeps the clock in step. For devices
				 * that never push back (veth, ifb, tun), at most GAPPACE_LOOKAHEAD_MAX */
	__TCA_GAPPACE_MAX
};
#define TCA_GAPPACE_MAX (__TCA_GAPPACE_MAX - 1)

/* TCA_XSTATS / TCA_STATS_APP of the qdisc. Append-only: check the length. */
struct tc_gappace_xstats {
	__u64 linkrate;		/* effective link rate, bit/s (0: unknown) */
	__u64 data_packets;	/* data frames handed to the device (GSO counted as segments) */
	__u64 data_bytes;	/* their frame bytes */
	__u64 data_wire_bytes;	/* their wire bytes */
	__u64 gap_frames;	/* gap (PAUSE, pause_time 0) frames handed to the device */
	__u64 gap_bytes;
	__u64 gap_wire_bytes;
	__u64 paced_packets;	/* data frames that matched a flow rule */
	__u64 gso_segmented;	/* GSO packets split in the qdisc (paced flows, IFG mode) */
	__u64 drops;		/* packets dropped at enqueue (limit, segmentation failure) */
	__u64 idle_resyncs;	/* wire clock moved forward to real time after idle */
	__u64 gap_alloc_failures; /* gap frames that could not be built: sent data early */
	__u32 rules;		/* flow rules installed */
	__u32 ifg;		/* configured total inter-frame gap, bytes */
	__u32 limit;		/* packets */
	__u32 qlen;		/* packets queued now */
	__u64 lookahead_waits;	/* dequeues held back by TCA_GAPPACE_LOOKAHEAD */
};

/* ------------------------------------------------------- generic netlink */

#define GAPPACE_GENL_NAME	"gappace"
/* 2: hints may carry a quiet summary (GAPPACE_A_HINT_QUIET_PHASES/_NS).
 * 3: rules may share a schedule (GAPPACE_A_RULE_GROUP). */
#define GAPPACE_GENL_VERSION	3

/*
 * Commands. Changing state needs CAP_NET_ADMIN in the user namespace that
 * owns the network namespace of the request's socket.
 */
enum gappace_cmd {
	GAPPACE_CMD_UNSPEC,
	/* Add a flow rule {IFINDEX, RULE{DST_IPV4|DST_IPV6, [PREFIX_LEN], RATE}}.
	 * A rule is a lease of the requesting netlink socket: it is removed when
	 * that socket is closed (or its process dies), like an RTO override.
	 * EEXIST if the prefix has a rule (see GAPPACE_CMD_RULE_SET). Generic
	 * netlink takes no NLM_F_CREATE/EXCL/REPLACE: those bits alias the dump
	 * flags and strict families refuse them. */
	GAPPACE_CMD_RULE_NEW,
	/* Delete the rule {IFINDEX, RULE{DST_IPV4|DST_IPV6, [PREFIX_LEN]}}.
	 * Its queued packets move to the unpaced queue: nothing is dropped. */
	GAPPACE_CMD_RULE_DEL,
	/* Dump rules with their statistics: all gappace devices of the
	 * netns, or only IFINDEX. Reply: {IFINDEX, RULE{..., STATS{...}}}. */
	GAPPACE_CMD_RULE_GET,
	/* Qdisc configuration and statistics of IFINDEX (doit), or of every
	 * gappace device of the netns (dump). Reply: {IFINDEX, QDISC{...}}. */
	GAPPACE_CMD_STATS_GET,
	/* Set the rate (and group) of the rule for a prefix, adding the rule if
	 * there is none (same attributes as RULE_NEW). The counters of its
	 * schedule restart when the rate changes (always for an ungrouped rule). */
	GAPPACE_CMD_RULE_SET,
	/* Lower the minimum RTO (and the delayed-ACK ceiling) of established TCP
	 * sockets: {RTO{tuple | DADDR only (every socket to that peer),
	 * RTO_MIN_US, [DELACK_MAX_US], [TTL_MS]}}. The override is a lease owned
	 * by the requesting netlink socket: when it closes (or TTL_MS passes, or
	 * the module unloads), the socket's own values come back. Reply:
	 * {RTO{COUNT, EFFECTIVE_RTO_MIN_US, EFFECTIVE_DELACK_MAX_US}}. */
	GAPPACE_CMD_RTO_SET,
	/* Restore sockets now: {RTO{tuple | DADDR only}}. Reply {RTO{COUNT}}. */
	GAPPACE_CMD_RTO_CLEAR,
	/* Dump the active overrides of the netns: {RTO{tuple, ...all values}}. */
	GAPPACE_CMD_RTO_GET,
	/* A collective-phase hint {HINT{EVENT, PHASE_ID, ...}} from an MPI
	 * runtime (libgapctl). Needs no privilege and changes nothing by itself:
	 * the kernel stamps the sender (HINT_SENDER_PID/UID/NETNS; a request
	 * that carries them is refused), and multicasts {HINT{...}} with this
	 * command to the GAPPACE_MCGRP_HINTS group of the sender's network
	 * namespace, where gappaced listens. ESRCH when nobody listens;
	 * EOPNOTSUPP from kernels that cannot keep unprivileged processes out
	 * of the group (no GENL_MCAST_CAP_NET_ADMIN): use the Unix socket. */
	GAPPACE_CMD_HINT,
	/* Advice from gappaced to a hint sender, over the hints socket only
	 * (never sent or accepted by the kernel): {ADVICE{SIGNATURE,
	 * QUIET_MS}}: BEGIN hints whose HINT_SIGNATURE is SIGNATURE need not be
	 * sent for QUIET_MS, because the daemon would change nothing for them
	 * (every bottleneck's burst fits its queue). The sender may still send.
	 * With QUIET_SUMMARY, the daemon also takes the count and summed
	 * duration of the phases skipped that way with the next BEGIN of the
	 * signature (HINT_QUIET_PHASES, HINT_QUIET_NS): it learns their phase
	 * time from all of them, not only from the few it sees. */
	GAPPACE_CMD_HINT_ADVICE,
	__GAPPACE_CMD_MAX
};
#define GAPPACE_CMD_MAX (__GAPPACE_CMD_MAX - 1)

enum gappace_a {
	GAPPACE_A_UNSPEC,
	GAPPACE_A_PAD,
	GAPPACE_A_IFINDEX,	/* u32 */
	GAPPACE_A_RULE,		/* nest, enum gappace_a_rule */
	GAPPACE_A_QDISC,	/* nest, enum gappace_a_qdisc */
	GAPPACE_A_RTO,		/* nest, enum gappace_a_rto */
	GAPPACE_A_HINT,		/* nest, enum gappace_a_hint */
	GAPPACE_A_ADVICE,	/* nest, enum gappace_a_advice */
	__GAPPACE_A_MAX
};
#define GAPPACE_A_MAX (__GAPPACE_A_MAX - 1)

enum gappace_a_rule {
	GAPPACE_A_RULE_UNSPEC,
	GAPPACE_A_RULE_PAD,
	GAPPACE_A_RULE_DST_IPV4,	/* binary[4], network order */
	GAPPACE_A_RULE_DST_IPV6,	/* binary[16], network order */
	GAPPACE_A_RULE_PREFIX_LEN,	/* u8, default: the full address length */
	GAPPACE_A_RULE_RATE,		/* u64 bit/s on the wire, 1000 .. link rate */
	GAPPACE_A_RULE_STATS,		/* nest, enum gappace_a_stats (replies only) */
	GAPPACE_A_RULE_OWNER_PORTID,	/* u32 (replies only): the netlink port id holding
					 * the rule's lease; the rule ends when it closes */
	/* u32 >= 1 (family version >= 3): the rules of one device with the same
	 * group share one FIFO and one schedule, paced together at the rate
	 * of the request that last set one of them (it applies to the whole
	 * group). Without it a rule has a schedule of its own. A destination
	 * of the group with nothing to send leaves its share to the others.
	 * Replies carry it for grouped rules, with the group's backlog and
	 * counters in STATS. A rule that leaves its group (RULE_SET with
	 * another or none) leaves the packets it queued there. */
	GAPPACE_A_RULE_GROUP,
	__GAPPACE_A_RULE_MAX
};
#define GAPPACE_A_RULE_MAX (__GAPPACE_A_RULE_MAX - 1)

enum gappace_a_qdisc {
	GAPPACE_A_QDISC_UNSPEC,
	GAPPACE_A_QDISC_PAD,
	GAPPACE_A_QDISC_LINKRATE,	/* u64 bit/s, effective */
	GAPPACE_A_QDISC_LINKRATE_AUTO,	/* flag: link rate follows the device */
	GAPPACE_A_QDISC_IFG,		/* u32 bytes */
	GAPPACE_A_QDISC_LIMIT,		/* u32 packets */
	GAPPACE_A_QDISC_RULES,		/* u32 */
	GAPPACE_A_QDISC_STATS,		/* nest, enum gappace_a_stats */
	__GAPPACE_A_QDISC_MAX
};
#define GAPPACE_A_QDISC_MAX (__GAPPACE_A_QDISC_MAX - 1)

/* Counters of a rule or of the whole qdisc. Unsigned 64-bit unless noted. */
enum gappace_a_stats {
	GAPPACE_A_STATS_UNSPEC,
	GAPPACE_A_STATS_PAD,
	GAPPACE_A_STATS_DATA_PACKETS,
	GAPPACE_A_STATS_DATA_BYTES,
	GAPPACE_A_STATS_DATA_WIRE_BYTES,
	/* Gap frames. For a rule: the gaps emitted while waiting for it. */
	GAPPACE_A_STATS_GAP_FRAMES,
	GAPPACE_A_STATS_GAP_BYTES,
	GAPPACE_A_STATS_GAP_WIRE_BYTES,
	GAPPACE_A_STATS_DROPS,
	/* bit/s: data wire bytes over the wire time from the first frame to
	 * the end of the last one, times the link rate (rule: since it was
	 * added or last replaced; qdisc: since attach). */
	GAPPACE_A_STATS_ACHIEVED_RATE,
	GAPPACE_A_STATS_BACKLOG,	/* u32 packets queued now */
	GAPPACE_A_STATS_PACED_PACKETS,	/* qdisc only */
	GAPPACE_A_STATS_GSO_SEGMENTED,	/* qdisc only */
	GAPPACE_A_STATS_IDLE_RESYNCS,	/* qdisc only */
	GAPPACE_A_STATS_GAP_ALLOC_FAILURES, /* qdisc only */
	__GAPPACE_A_STATS_MAX
};
#define GAPPACE_A_STATS_MAX (__GAPPACE_A_STATS_MAX - 1)

/*
 * A TCP connection as `ss` shows it: SADDR:SPORT is the local end, DADDR:DPORT
 * the peer. Ports are in network byte order. Times are microseconds; the
 * kernel rounds them up to jiffies and reports what it applied (at HZ=250,
 * 5000 us becomes 8000 us).
 */
enum gappace_a_rto {
	GAPPACE_A_RTO_UNSPEC,
	GAPPACE_A_RTO_PAD,
	GAPPACE_A_RTO_SADDR_IPV4,	/* binary[4] */
	GAPPACE_A_RTO_SADDR_IPV6,	/* binary[16] */
	GAPPACE_A_RTO_SPORT,		/* be16 */
	GAPPACE_A_RTO_DADDR_IPV4,	/* binary[4] */
	GAPPACE_A_RTO_DADDR_IPV6,	/* binary[16] */
	GAPPACE_A_RTO_DPORT,		/* be16 */
	GAPPACE_A_RTO_RTO_MIN_US,	/* u32: requested floor, 2 jiffies .. 200 ms */
	GAPPACE_A_RTO_DELACK_MAX_US,	/* u32: delayed-ACK ceiling; default floor - 1 jiffy */
	GAPPACE_A_RTO_TTL_MS,		/* u32: the override ends after this long */
	GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US,	/* u32: what the socket's RTO is floored at now */
	GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US,	/* u32 */
	GAPPACE_A_RTO_ORIG_RTO_MIN_US,		/* u32: the socket's own value, restored at the end */
	GAPPACE_A_RTO_ORIG_DELACK_MAX_US,	/* u32 */
	GAPPACE_A_RTO_RTO_US,		/* u32: the socket's current RTO */
	GAPPACE_A_RTO_OWNER_PORTID,	/* u32: netlink port id holding the lease */
	GAPPACE_A_RTO_OWNER_PID,	/* u32: process that made the request */
	GAPPACE_A_RTO_TTL_LEFT_MS,	/* u32: absent without a TTL */
	GAPPACE_A_RTO_COUNT,		/* u32: sockets changed or restored */
	__GAPPACE_A_RTO_MAX
};
#define GAPPACE_A_RTO_MAX (__GAPPACE_A_RTO_MAX - 1)

/*
 * Collective-phase hints. One encoding, two carriers: libgapctl sends the
 * same netlink message (nlmsghdr, genlmsghdr with GAPPACE_CMD_HINT, then
 * GAPPACE_A_HINT) to the kernel, which multicasts it to the group below, or,
 * without the module, over gappaced's Unix seqpacket socket
 * (GAPPACE_HINTS_SOCKET), where the daemon stamps the sender from
 * SO_PEERCRED. A hint may only ever affect the sockets of its sender's uid.
 */
#define GAPPACE_MCGRP_HINTS	"hints"
#define GAPPACE_HINTS_SOCKET	"/run/gappace/hints.sock"
/* Peers per message. The hint nest, with the kernel's 24-byte stamp, must
 * also fit an attribute's 16-bit length: full IPv6 tuples (68 bytes each)
 * reach that first, at about 960 peers (EMSGSIZE). */
#define GAPPACE_HINT_MAX_PEERS	1024

enum gappace_hint_event {
	GAPPACE_HINT_EVENT_BEGIN = 1,	/* a phase starts: plan and apply */
	GAPPACE_HINT_EVENT_END,		/* it ended: revert, learn from DURATION_NS */
};

enum gappace_hint_kind {
	GAPPACE_HINT_KIND_UNSPEC,
	GAPPACE_HINT_KIND_ALLTOALL,
	GAPPACE_HINT_KIND_ALLGATHER,
	GAPPACE_HINT_KIND_BCAST,
	GAPPACE_HINT_KIND_REDUCE_SCATTER,
	GAPPACE_HINT_KIND_ALLREDUCE,
	GAPPACE_HINT_KIND_GATHER,
	GAPPACE_HINT_KIND_SCATTER,
	GAPPACE_HINT_KIND_BARRIER,
	GAPPACE_HINT_KIND_P2P_BURST,
	GAPPACE_HINT_KIND_REDUCE,
	__GAPPACE_HINT_KIND_MAX
};
#define GAPPACE_HINT_KIND_MAX (__GAPPACE_HINT_KIND_MAX - 1)

/* How the runtime moves the data, when it knows. */
enum gappace_hint_algorithm {
	GAPPACE_HINT_ALGORITHM_UNKNOWN,
	GAPPACE_HINT_ALGORITHM_LINEAR,		/* all sends posted at once */
	GAPPACE_HINT_ALGORITHM_PAIRWISE,	/* phase i: exchange with rank ^ i */
	GAPPACE_HINT_ALGORITHM_RING,		/* phase i: send to rank + i */
	GAPPACE_HINT_ALGORITHM_BINOMIAL,
	GAPPACE_HINT_ALGORITHM_SCATTER_ALLGATHER,
	GAPPACE_HINT_ALGORITHM_RECURSIVE_DOUBLING,
	__GAPPACE_HINT_ALGORITHM_MAX
};
#define GAPPACE_HINT_ALGORITHM_MAX (__GAPPACE_HINT_ALGORITHM_MAX - 1)

/* GAPPACE_A_HINT_FLAGS */
#define GAPPACE_HINT_F_VECTOR		(1U << 0)	/* a v-variant: BYTES_PER_PEER is the largest */
#define GAPPACE_HINT_F_NONBLOCKING	(1U << 1)	/* MPI_I*: END comes with the completion */
#define GAPPACE_HINT_F_PERSISTENT	(1U << 2)	/* MPI_*_init + MPI_Start */
#define GAPPACE_HINT_F_PEERS_TRUNCATED	(1U << 3)	/* more peers than one message holds */
/* Appended. Each message is larger than the MPI transport's eager limit: it waits for the
 * receiver's clear-to-send, which comes back over the same connection. */
#define GAPPACE_HINT_F_RENDEZVOUS	(1U << 4)
#define GAPPACE_HINT_F_ALL		((1U << 5) - 1)

enum gappace_a_hint {
	GAPPACE_A_HINT_UNSPEC,
	GAPPACE_A_HINT_PAD,
	GAPPACE_A_HINT_EVENT,		/* u32, enum gappace_hint_event (required) */
	GAPPACE_A_HINT_PHASE_ID,	/* u64, chosen by the sender, unique per sender process (required) */
	GAPPACE_A_HINT_KIND,		/* u32, enum gappace_hint_kind (BEGIN: required) */
	GAPPACE_A_HINT_ALGORITHM,	/* u32, enum gappace_hint_algorithm */
	GAPPACE_A_HINT_FLAGS,		/* u32, GAPPACE_HINT_F_* */
	GAPPACE_A_HINT_BYTES_PER_PEER,	/* u64: bytes each peer pair moves in the phase */
	GAPPACE_A_HINT_COMM_SIZE,	/* u32: processes taking part (P) */
	GAPPACE_A_HINT_RANK,		/* u32: the sender's rank among them */
	GAPPACE_A_HINT_REPETITIONS,	/* u32: expected back-to-back repetitions */
	GAPPACE_A_HINT_DURATION_NS,	/* u64 (END): measured phase duration */
	GAPPACE_A_HINT_PEER,		/* nest, enum gappace_a_peer; repeated, one per peer */
	GAPPACE_A_HINT_SENDER_PID,	/* u32, stamped: thread-group id of the sender */
	GAPPACE_A_HINT_SENDER_UID,	/* u32, stamped: effective uid in the initial user namespace (what SO_PEERCRED gives the socket carrier) */
	GAPPACE_A_HINT_SENDER_NETNS,	/* u32, stamped: inode number of the sender's netns */
	GAPPACE_A_HINT_SIGNATURE,	/* u64 (BEGIN): the sender's digest of the phase's
					 * description (kind ... peers), echoed in advice */
	GAPPACE_A_HINT_QUIET_PHASES,	/* u32 (BEGIN, with QUIET_NS; family version >= 2):
					 * phases of this SIGNATURE that the sender skipped
					 * under quiet advice since its last BEGIN of it */
	GAPPACE_A_HINT_QUIET_NS,	/* u64 (BEGIN, with QUIET_PHASES): their summed
					 * durations, as END's DURATION_NS would have said */
	__GAPPACE_A_HINT_MAX
};
#define GAPPACE_A_HINT_MAX (__GAPPACE_A_HINT_MAX - 1)

/*
 * A peer of a phase: an address (DADDR only: every connection of the sender's
 * uid to that host) or one TCP connection (the full tuple, as `ss` shows it
 * from the sender's side; ports in network byte order).
 */
enum gappace_a_peer {
	GAPPACE_A_PEER_UNSPEC,
	GAPPACE_A_PEER_PAD,
	GAPPACE_A_PEER_DADDR_IPV4,	/* binary[4] */
	GAPPACE_A_PEER_DADDR_IPV6,	/* binary[16] */
	GAPPACE_A_PEER_SADDR_IPV4,	/* binary[4] */
	GAPPACE_A_PEER_SADDR_IPV6,	/* binary[16] */
	GAPPACE_A_PEER_SPORT,		/* be16 */
	GAPPACE_A_PEER_DPORT,		/* be16 */
	GAPPACE_A_PEER_RANK,		/* u32: the peer's rank */
	__GAPPACE_A_PEER_MAX
};
#define GAPPACE_A_PEER_MAX (__GAPPACE_A_PEER_MAX - 1)

/* Advice of gappaced to a hint sender (GAPPACE_CMD_HINT_ADVICE). */
enum gappace_a_advice {
	GAPPACE_A_ADVICE_UNSPEC,
	GAPPACE_A_ADVICE_PAD,
	GAPPACE_A_ADVICE_SIGNATURE,	/* u64: the HINT_SIGNATURE it is about */
	GAPPACE_A_ADVICE_QUIET_MS,	/* u32: how long such phases need no hints */
	GAPPACE_A_ADVICE_QUIET_SUMMARY,	/* flag: send the skipped phases' summary with the
					 * signature's next BEGIN (HINT_QUIET_PHASES/_NS) */
	__GAPPACE_A_ADVICE_MAX
};
#define GAPPACE_A_ADVICE_MAX (__GAPPACE_A_ADVICE_MAX - 1)

#endif /* _UAPI_LINUX_GAPPACE_H */
