/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * pace_core.h - the integer arithmetic of wire-clock gap-frame pacing.
 *
 * Shared verbatim by the kernel module (sch_gappace.c) and the userspace
 * unit tests and benchmarks; it depends on nothing but fixed-width integers.
 * No floating point, no allocation, no locking: every function is a pure
 * step on the state it is given.
 *
 * The wire clock
 * --------------
 * Time is measured in *wire bytes*: the number of byte times the link has
 * spent since an arbitrary origin. A frame of L bytes (without FCS) occupies
 * gp_wire_bytes(L) = max(L + 4, 64) + 8 + 12 byte times: FCS, minimum frame,
 * preamble and the standard inter-packet gap. The qdisc hands the device one
 * frame after another; while it has backlog it never stops (if no data frame
 * may go yet, it hands over a gap frame), so the device transmits back to back
 * and the sum of wire bytes handed over *is* the time on the wire. No timer is
 * involved and the clock is exact to the byte.
 *
 * A flow paced at rate r on a link of rate C may start its next frame
 * wire(frame) * C / r byte times after the scheduled start of the previous
 * one. The quotient is kept with its remainder (gp_flow_clock.rem), so the
 * long-run rate is exact, not merely close.
 *
 * Gap plan and error diffusion
 * ----------------------------
 * A gap frame is an 802.3x PAUSE frame with pause_time 0 of 60..1514 bytes,
 * i.e. GP_GAP_WIRE_MIN..GP_GAP_WIRE_MAX (84..1538) wire bytes - every integer
 * in that range is possible. A deficit D >= 84 is therefore filled exactly by
 * pieces of at most 1538 (the last two pieces are balanced so neither falls
 * below 84). A deficit below 84 cannot be filled: the data frame leaves up to
 * 83 byte times early, and because the flow's schedule is advanced from its
 * *scheduled* start, not from the early one, the shortfall is carried into the
 * next gap (error diffusion). Every single gap is within 84 wire bytes of the
 * plan and the error never accumulates. (PSPacer skipped such gaps and inserted
 * an MTU-sized one later: an error of up to one MTU.)
 *
 * Classes and fairness
 * --------------------
 * Frames of paced flows have deadlines, so an eligible paced frame goes before
 * unpaced traffic, and paced flows can take at most the sum of their rates.
 * When the rates are overcommitted, unpaced traffic would starve; a byte
 * credit gives it at least 1/GP_UNPACED_SHARE of the contended wire. A paced
 * flow that was delayed while backlogged (by a large unpaced GSO packet, or by
 * other paced flows) catches up, but never by more than GP_MAX_LAG byte times:
 * a bounded burst instead of an unbounded one.
 */
#ifndef GAPPACE_PACE_CORE_H
#define GAPPACE_PACE_CORE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/math64.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

#define GP_FCS_BYTES		4
#define GP_MIN_FRAME_BYTES	64	/* with FCS */
#define GP_PREAMBLE_BYTES	8
#define GP_IPG_BYTES		12
#define GP_WIRE_OVERHEAD	(GP_FCS_BYTES + GP_PREAMBLE_BYTES + GP_IPG_BYTES)

#define GP_GAP_FRAME_MIN	60	/* bytes without FCS: the Ethernet minimum */
#define GP_GAP_FRAME_MAX	1514	/* bytes without FCS: fits every MTU >= 1500 */
#define GP_GAP_WIRE_MIN		(GP_GAP_FRAME_MIN + GP_WIRE_OVERHEAD)	/* 84 */
#define GP_GAP_WIRE_MAX		(GP_GAP_FRAME_MAX + GP_WIRE_OVERHEAD)	/* 1538 */

/* Largest catch-up of a delayed, backlogged paced flow, in byte times: two
 * 64 KB GSO packets of unpaced traffic may delay it without rate loss. */
#define GP_MAX_LAG		(128U * 1024)
/* Under contention unpaced traffic gets at least 1/GP_UNPACED_SHARE of the wire. */
#define GP_UNPACED_SHARE	8
#define GP_CREDIT_LIMIT		(256 * 1024)

/* Real time is converted to wire bytes over at most this many ns at once: any
 * longer idle period has certainly released every pending deadline. Keeps the
 * 64x64 multiply-divide far from overflow (2^40 ns * 2^42 bit/s / 8e9 < 2^50). */
#define GP_MAX_IDLE_NS		(1ULL << 40)
#define GP_LINKRATE_MAX		(4000ULL * 1000 * 1000 * 1000)	/* 4 Tbit/s */

static inline uint64_t gp_mul_div(uint64_t a, uint64_t b, uint64_t c)
{
#ifdef __KERNEL__
	return mul_u64_u64_div_u64(a, b, c);
#else
	return (uint64_t)((unsigned __int128)a * b / c);
#endif
}

static inline uint64_t gp_div_rem(uint64_t dividend, uint64_t divisor, uint64_t *rem)
{
#ifdef __KERNEL__
	return div64_u64_rem(dividend, divisor, rem);
#else
	*rem = dividend % divisor;
	return dividend / divisor;
#endif
}

/* Byte times are compared modulo 2^64, like jiffies. */
static inline bool gp_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static inline uint64_t gp_later(uint64_t a, uint64_t b)
{
	return gp_before(a, b) ? b : a;
}

/* Byte times from @now until @due; 0 if @due has passed. */
static inline uint64_t gp_until(uint64_t now, uint64_t due)
{
	return gp_before(now, due) ? due - now : 0;
}

/* Wire cost of a frame of @len bytes without FCS. */
static inline uint32_t gp_wire_bytes(uint32_t len)
{
	uint32_t framed = len + GP_FCS_BYTES;

	if (framed < GP_MIN_FRAME_BYTES)
		framed = GP_MIN_FRAME_BYTES;
	return framed + GP_PREAMBLE_BYTES + GP_IPG_BYTES;
}

/* Wire cost of a GSO packet of @len bytes (all segment headers included, as
 * qdisc_pkt_len() counts them) that leaves as @segs frames. Segments are
 * assumed to be at least minimum-size frames. */
static inline uint64_t gp_wire_bytes_gso(uint64_t len, uint32_t segs)
{
	return len + (uint64_t)segs * GP_WIRE_OVERHEAD;
}

/*
 * Gap plan: the wire size of the next gap frame that fills a deficit of
 * @deficit byte times, or 0 when the deficit is below one minimum gap frame
 * (the caller sends data now and the remainder is carried). Repeated calls
 * with the deficit reduced by each piece sum to the deficit exactly.
 */
static inline uint32_t gp_gap_piece(uint64_t deficit)
{
	if (deficit < GP_GAP_WIRE_MIN)
		return 0;
	if (deficit <= GP_GAP_WIRE_MAX)
		return (uint32_t)deficit;
	if (deficit - GP_GAP_WIRE_MAX >= GP_GAP_WIRE_MIN)
		return GP_GAP_WIRE_MAX;
	/* 1538 < deficit < 1622: leave exactly one minimum piece for next time */
	return (uint32_t)(deficit - GP_GAP_WIRE_MIN);
}

/* Frame length (without FCS) of a gap frame of @wire wire bytes (84..1538). */
static inline uint32_t gp_gap_frame_len(uint32_t wire)
{
	return wire - GP_WIRE_OVERHEAD;
}

/* -------------------------------------------------------------- per flow */

struct gp_flow_clock {
	uint64_t next;	/* scheduled start of the flow's next frame, byte time */
	uint64_t rem;	/* remainder of the last interval, in 1/rate byte times */
};

/* The flow had nothing queued and gets a packet at wire time @now: an idle
 * flow earns no credit (no burst) and owes nothing (no debt). */
static inline void gp_flow_wake(struct gp_flow_clock *c, uint64_t now)
{
	if (gp_before(c->next, now)) {
		c->next = now;
		c->rem = 0;
	}
}

/*
 * A frame of @wire wire bytes of a flow paced at @rate on a link of @link
 * (both bit/s, rate <= link) was handed to the device at wire time @now.
 * The next frame may start wire * link / rate byte times after this one's
 * scheduled start; a backlogged flow that fell behind catches up by at most
 * GP_MAX_LAG. Requires wire * link < 2^64 (wire < 2^17 bytes, link <= 4 Tbit/s).
 */
static inline void gp_flow_charge(struct gp_flow_clock *c, uint64_t now, uint32_t wire,
				  uint64_t link, uint64_t rate)
{
	uint64_t start = c->next;
	uint64_t interval;

	if (gp_before(start, now - GP_MAX_LAG)) {
		start = now - GP_MAX_LAG;
		c->rem = 0;
	}
	interval = gp_div_rem((uint64_t)wire * link + c->rem, rate, &c->rem);
	c->next = start + interval;
}

/* ---------------------------------------------------------- per device */

struct gp_wire {
	uint64_t now;		/* byte times handed to the device so far */
	uint64_t dev_next;	/* scheduled start of the next data frame (IFG mode) */
	uint32_t ifg_extra;	/* configured inter-frame gap - GP_IPG_BYTES */
	int32_t unpaced_credit;	/* > 0: unpaced traffic is owed a turn */
};

enum gp_verdict {
	GP_IDLE,	/* nothing to send */
	GP_SEND_PACED,	/* the head of the earliest paced flow goes now */
	GP_SEND_UNPACED,/* the head of the unpaced queue goes now */
	GP_SEND_GAP,	/* a gap frame of .gap_wire wire bytes goes now */
};

struct gp_choice {
	enum gp_verdict verdict;
	uint32_t gap_wire;	/* GP_SEND_GAP: wire bytes of the gap frame */
	bool contended;		/* paced and unpaced were both ready */
};

/*
 * What to hand to the device next. @paced_next is the scheduled start of the
 * earliest backlogged paced flow (only read if @have_paced). A frame is ready
 * when less than one minimum gap frame separates it from its start time.
 * With nothing queued, the gap owed after the last data frame in IFG mode is
 * still sent: every frame is followed by its gap, even the last of a burst.
 */
static inline struct gp_choice gp_choose(const struct gp_wire *w, bool have_unpaced,
					 bool have_paced, uint64_t paced_next)
{
	struct gp_choice c = { GP_IDLE, 0, false };
	uint64_t wait_unpaced = gp_until(w->now, w->dev_next);
	uint64_t wait_paced = gp_until(w->now, gp_later(paced_next, w->dev_next));
	bool unpaced_ready = have_unpaced && wait_unpaced < GP_GAP_WIRE_MIN;
	bool paced_ready = have_paced && wait_paced < GP_GAP_WIRE_MIN;
	uint64_t wait;

	if (paced_ready && unpaced_ready) {
		c.contended = true;
		c.verdict = w->unpaced_credit > 0 ? GP_SEND_UNPACED : GP_SEND_PACED;
		return c;
	}
	if (paced_ready) {
		c.verdict = GP_SEND_PACED;
		return c;
	}
	if (unpaced_ready) {
		c.verdict = GP_SEND_UNPACED;
		return c;
	}
	if (have_paced && have_unpaced)
		wait = wait_paced < wait_unpaced ? wait_paced : wait_unpaced;
	else if (have_paced)
		wait = wait_paced;
	else
		wait = wait_unpaced;	/* also the IFG tail when nothing is queued */
	c.gap_wire = gp_gap_piece(wait);
	if (c.gap_wire)
		c.verdict = GP_SEND_GAP;
	return c;
}

/* A data frame of @wire wire bytes was handed to the device. */
static inline void gp_wire_sent_data(struct gp_wire *w, uint64_t wire, bool paced, bool contended)
{
	uint64_t start = gp_later(w->now, w->dev_next);

	w->dev_next = start + wire + w->ifg_extra;
	w->now += wire;

	if (!contended)
		return;
	if (paced)
		w->unpaced_credit += (int32_t)(wire > GP_CREDIT_LIMIT ? GP_CREDIT_LIMIT : wire);
	else
		w->unpaced_credit -= (int32_t)((wire > GP_CREDIT_LIMIT ? GP_CREDIT_LIMIT : wire) *
					       (GP_UNPACED_SHARE - 1));
	if (w->unpaced_credit > GP_CREDIT_LIMIT)
		w->unpaced_credit = GP_CREDIT_LIMIT;
	if (w->unpaced_credit < -GP_CREDIT_LIMIT)
		w->unpaced_credit = -GP_CREDIT_LIMIT;
}

static inline void gp_wire_sent_gap(struct gp_wire *w, uint32_t wire)
{
	w->now += wire;
}

/* Byte times the link spends in @ns nanoseconds at @link bit/s. */
static inline uint64_t gp_ns_to_wire(uint64_t ns, uint64_t link)
{
	if (ns > GP_MAX_IDLE_NS)
		ns = GP_MAX_IDLE_NS;
	return gp_mul_div(ns, link, 8ULL * 1000 * 1000 * 1000);
}

/* Nanoseconds the link takes for @wire byte times at @link bit/s (rounded up). */
static inline uint64_t gp_wire_to_ns(uint64_t wire, uint64_t link)
{
	uint64_t ns;

	if (!link)
		return 0;
	ns = gp_mul_div(wire, 8ULL * 1000 * 1000 * 1000, link);
	return gp_mul_div(ns, link, 8ULL * 1000 * 1000 * 1000) < wire ? ns + 1 : ns;
}

/*
 * The queue was empty; real time says the link may have been idle until
 * @real (byte time). Move the clock forward to it, never back: frames handed
 * to the device but not yet on the wire keep the clock ahead of real time.
 * Returns true if the clock moved.
 */
static inline bool gp_wire_resync(struct gp_wire *w, uint64_t real)
{
	if (!gp_before(w->now, real))
		return false;
	w->now = real;
	return true;
}

/* bit/s achieved by @wire_bytes over @span byte times of a link of @link bit/s. */
static inline uint64_t gp_achieved_rate(uint64_t wire_bytes, uint64_t span, uint64_t link)
{
	if (!span)
		return 0;
	return gp_mul_div(wire_bytes, link, span);
}

#endif /* GAPPACE_PACE_CORE_H */
