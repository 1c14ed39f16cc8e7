/* SPDX-License-Identifier: MIT */
/*
 * gapctl.h - libgapctl: collective-phase hints from an MPI runtime to gappace.
 *
 * An MPI runtime (or the PMPI shim libgapctl-mpi.so) tells gappaced when a
 * communication phase begins and ends: which collective, which peers, how
 * many bytes per peer. The daemon decides pacing rates and RTO floors for the
 * connections of the phase and reverts them when it ends.
 *
 * Guarantees, for every function here:
 *   - C ABI, no C++ exceptions escape, no signals are raised;
 *   - calls never block and never stall the caller: a hint is encoded into a
 *     per-handle queue and sent by a background thread; if the queue is full
 *     or the daemon is absent or slow, the hint is dropped and counted
 *     (gapctl_get_stats);
 *   - errors are negative errno values (gapctl_strerror names them).
 *
 * Carriers (chosen at gapctl_open, re-chosen when one fails):
 *   1. the kernel: with the gappace module loaded, hints go to the generic
 *      netlink family "gappace" (no privilege needed); the kernel stamps the
 *      sender and multicasts them to the daemon;
 *   2. the daemon's Unix seqpacket socket (GAPPACE_HINTS_SOCK in the
 *      environment, default /run/gappace/hints.sock): the same message; the
 *      daemon authenticates the sender with SO_PEERCRED.
 *
 * Thread safety: one handle may be used from several threads. After fork(),
 * the child must open its own handle (the parent's is unusable there).
 */
#ifndef GAPCTL_H
#define GAPCTL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GAPCTL_VISIBLE __attribute__((visibility("default")))

typedef struct gapctl gapctl_t;

/* Same numbers as enum gappace_hint_kind in <linux/gappace.h>. */
enum gapctl_kind {
	GAPCTL_KIND_ALLTOALL = 1,
	GAPCTL_KIND_ALLGATHER = 2,
	GAPCTL_KIND_BCAST = 3,
	GAPCTL_KIND_REDUCE_SCATTER = 4,
	GAPCTL_KIND_ALLREDUCE = 5,
	GAPCTL_KIND_GATHER = 6,
	GAPCTL_KIND_SCATTER = 7,
	GAPCTL_KIND_BARRIER = 8,
	GAPCTL_KIND_P2P_BURST = 9,
	GAPCTL_KIND_REDUCE = 10,
};

/* Same numbers as enum gappace_hint_algorithm. */
enum gapctl_algorithm {
	GAPCTL_ALGORITHM_UNKNOWN = 0,
	GAPCTL_ALGORITHM_LINEAR = 1,
	GAPCTL_ALGORITHM_PAIRWISE = 2,
	GAPCTL_ALGORITHM_RING = 3,
	GAPCTL_ALGORITHM_BINOMIAL = 4,
	GAPCTL_ALGORITHM_SCATTER_ALLGATHER = 5,
	GAPCTL_ALGORITHM_RECURSIVE_DOUBLING = 6,
};

/* Same bits as GAPPACE_HINT_F_*. */
#define GAPCTL_F_VECTOR		(1U << 0)	/* v-variant: bytes_per_peer is the largest */
#define GAPCTL_F_NONBLOCKING	(1U << 1)	/* MPI_I*: end is reported at completion */
#define GAPCTL_F_PERSISTENT	(1U << 2)	/* MPI_*_init + MPI_Start */
/* Appended: each message exceeds the MPI transport's eager limit (rendezvous: the sender
 * waits for the receiver's clear-to-send over the same connection). */
#define GAPCTL_F_RENDEZVOUS	(1U << 4)

/*
 * A peer of the phase, in one of three forms:
 *   - fd >= 0: a connected TCP socket of this process (resolved to its tuple
 *     with getsockname/getpeername during the call: two syscalls per peer,
 *     so runtimes on a hot path should resolve once and pass tuples);
 *   - local_port != 0: one TCP connection, local_addr:local_port ->
 *     addr:port, as `ss` shows it from this process;
 *   - otherwise the peer host `addr`: every connection of this uid to it.
 * Addresses are in network byte order: 4 bytes for AF_INET, 16 for AF_INET6.
 * Ports are in host byte order. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, a
 * dual-stack socket's IPv4 connection) is sent as the IPv4 address; a tuple
 * with one address mapped and the other not is -EINVAL.
 */
struct gapctl_peer {
	int fd;			/* -1 unless the first form */
	int family;		/* AF_INET or AF_INET6 (ignored with fd) */
	uint8_t addr[16];	/* the peer's address */
	uint8_t local_addr[16];	/* this end's address (tuple form) */
	uint16_t port;		/* the peer's port (tuple form) */
	uint16_t local_port;	/* this end's port; 0: address form */
	int32_t rank;		/* the peer's rank, or -1 */
};

struct gapctl_phase {
	uint32_t struct_size;	/* sizeof(struct gapctl_phase): lets the ABI grow */
	uint32_t kind;		/* enum gapctl_kind */
	uint32_t algorithm;	/* enum gapctl_algorithm */
	uint32_t flags;		/* GAPCTL_F_* */
	uint64_t bytes_per_peer; /* bytes each peer pair moves (largest for v-variants) */
	uint32_t comm_size;	/* processes taking part, 0 if unknown */
	int32_t rank;		/* this process's rank, or -1 */
	uint32_t repetitions;	/* expected back-to-back repetitions, 0 if unknown */
	uint32_t n_peers;
	const struct gapctl_peer *peers; /* at most GAPCTL_MAX_PEERS are sent (about 960 IPv6
					  * tuples: a netlink attribute holds < 64 KiB) */
};
#define GAPCTL_MAX_PEERS 1024

struct gapctl_stats {
	uint32_t struct_size;	/* set by the caller: sizeof(struct gapctl_stats) */
	uint32_t carrier;	/* enum gapctl_carrier now */
	uint64_t hints_queued;	/* accepted by gapctl_phase_begin/end */
	uint64_t hints_sent;	/* handed to a carrier */
	uint64_t hints_dropped;	/* queue full, no carrier, or the carrier refused */
	uint64_t hints_rejected; /* invalid arguments (never queued) */
	uint64_t carrier_errors; /* errors reported back (e.g. no daemon listening) */
	/* Appended; callers built against the fields above get them without this one. */
	uint64_t hints_quiet;	/* phases not sent because the daemon advised so */
	/* Appended. Of hints_sent, those the calling thread sent itself because the
	 * sender thread slept (cheaper than waking it). */
	uint64_t hints_direct;
	/* Appended. How calling threads got the sender thread to a queued hint: doorbells
	 * wake it at once (a cross-CPU wake-up, paid by the caller); timed looks are armed
	 * by the first queued hint of a burst and wake it about 50 us later, from a timer. */
	uint64_t doorbells;
	uint64_t timed_looks;
};

enum gapctl_carrier {
	GAPCTL_CARRIER_NONE = 0,	/* neither the module nor the daemon is reachable */
	GAPCTL_CARRIER_KERNEL = 1,
	GAPCTL_CARRIER_SOCKET = 2,
};

/* gapctl_open flags */
#define GAPCTL_OPEN_NO_KERNEL	(1U << 0)	/* use the daemon's socket even with the module */
#define GAPCTL_OPEN_NO_THREAD	(1U << 1)	/* send from the calling thread (MSG_DONTWAIT) */

/*
 * Open a handle. Never fails because the daemon or the module is absent (the
 * hints are then dropped and counted); fails only for bad flags (-EINVAL) or
 * resources (-ENOMEM, -EMFILE, -EAGAIN for the thread).
 */
GAPCTL_VISIBLE int gapctl_open(gapctl_t **handle, uint32_t flags);
/* Flush what is queued (bounded: at most 100 ms), stop the thread, free. NULL is fine. */
GAPCTL_VISIBLE void gapctl_close(gapctl_t *handle);

/*
 * A phase begins. On success *phase_id names it for gapctl_phase_end.
 * -EINVAL: bad kind/algorithm/flags/peer, struct_size too small;
 * -E2BIG: more than GAPCTL_MAX_PEERS (the first ones are still sent,
 *  flagged as truncated; *phase_id is valid). Dropping is not an error.
 *
 * Quiet phases: when gappaced has answered that phases like this one (same
 * kind, algorithm, flags, size, processes, rank and peers as passed here)
 * change nothing, for a while (its `quiet` setting), such phases are not
 * sent: the call costs a hash and a table lookup, and *phase_id has
 * GAPCTL_PHASE_QUIET set (gapctl_phase_end of it sends nothing either).
 * The advice arrives on the daemon's socket (with the kernel carrier, the
 * library keeps that socket open for advice only). Where the advice asks for
 * it, the number and summed durations (gapctl_phase_end's duration_ns) of the
 * phases skipped so go to the daemon with the next phase of the same
 * description that is sent, so that it learns their time from all of them.
 */
#define GAPCTL_PHASE_QUIET	(1ULL << 63)
GAPCTL_VISIBLE int gapctl_phase_begin(gapctl_t *handle, const struct gapctl_phase *phase,
				      uint64_t *phase_id);
/* The phase ended after duration_ns (0 if not measured). -EINVAL: unknown id 0. */
GAPCTL_VISIBLE int gapctl_phase_end(gapctl_t *handle, uint64_t phase_id, uint64_t duration_ns);

/* Wait (at most timeout_ms) until the queue is empty. -ETIMEDOUT otherwise. */
GAPCTL_VISIBLE int gapctl_flush(gapctl_t *handle, int timeout_ms);
GAPCTL_VISIBLE int gapctl_get_stats(gapctl_t *handle, struct gapctl_stats *stats);

/* Name of a kind ("alltoall", ...) or NULL; and the reverse (0 if unknown). */
GAPCTL_VISIBLE const char *gapctl_kind_name(uint32_t kind);
GAPCTL_VISIBLE uint32_t gapctl_kind_from_name(const char *name);
GAPCTL_VISIBLE const char *gapctl_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* GAPCTL_H */
