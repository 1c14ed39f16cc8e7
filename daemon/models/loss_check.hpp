// Checking the models' loss verdict against the host's TCP counters (Documentation/models.md,
// "Checking the loss verdict").
//
// PlogP-BR predicts a tail loss whenever the phase's burst exceeds the switch queue, as if every
// flow started at the same instant. Where they do not (small messages, MPI ranks that drift
// apart), stock Linux loses nothing and every remedy only costs time: the control plane's work
// for each phase, the paced rate's slack. Pacing hides whether the verdict was right, so it is
// checked on purpose:
//
//   1. Trial. A key (kind, size class, P) whose plan remedies a predicted unpaced loss runs its
//      next kTrialPhases phases unpaced, with the RTO floor (a loss then costs the floor, not
//      200 ms). The host's counters are read when the trial starts and after each trial phase.
//      Only short phases are tried (predicted at most kTrialPhaseMaxUs): a failed trial runs
//      about two phases unpaced, and what a wrong verdict costs a remedied phase, the control
//      plane's work for it, matters only where phases are short. Long phases are long because
//      n·m is many times the queue, where the verdict is not in doubt. Nor is it where the
//      unpaced burst is more than kTrialBurstOverQueueMax times the whole queue, however short
//      the phase: stock Linux survives a burst B > q only if its flows' starts spread over
//      (B − q)/C, and at B = 2q that is half the phase's own time at the bottleneck.
//   2. Verdict. The trial fails as soon as the host loses a segment or pays a timeout (needless
//      retransmissions and spurious timeouts not counted: HostTcpCounters). It passes after
//      kTrialPhases phases without either: the unpaced burst does not overflow. Nothing less
//      strict is safe: for small messages every loss is a tail loss, a host sees only its own,
//      and a phase waits for the slowest of all hosts; a stock 4 KB all-to-all of 8+8 hosts ran
//      at 0.30 of C from losses of 0.1-0.3 % of the segments (a trial of 32 phases counted 0-9).
//   3. Lossless: the key's phases run as the application sends them, and are inert (the daemon
//      advises the sender to skip alike hints). Every phase that still reaches the daemon (one
//      per quiet period) audits the counters since the last one: timeouts that would cost more
//      than kTimeoutShareMax of the elapsed time at the stock RTO, or, once kAuditSegments were
//      sent since the last judgment, losses that cost more than pacing would (below), end the
//      verdict (timeouts: floored, 4.; losses: lossy, 5.). Until the backstop has judged a
//      new verdict once (kAuditSegments sent), for at most kBudgetWindowUs, the quiet period
//      is kSettlingQuietUs: a trial's phases reach the daemon, which reads the counters and
//      sets the floor for each, and on a host whose CPUs the ranks share that work spreads
//      their bursts. On 4+4 hosts at 4 KB, trials of 32 phases passed without a loss on most
//      hosts, and the unobserved phases after them lost 1-3 % of their segments; with audits
//      a second apart that ran unchecked for the first second (LossStage::Lossless).
//      What losses cost: a segment lost without a timeout is recovered by a fast retransmit or
//      a tail loss probe, about two round trips of a path whose queue is full (LossBudget::
//      recovery_us), during which its phase waits. Over a window, lost x recovery_us is the
//      time the host's flows spent recovering, and a phase waits for the slowest host: in a
//      symmetric collective every other host is presumed to lose alike (LossBudget::hosts), so
//      the collective's phases spend up to hosts x lost x recovery_us recovering; the verdict
//      ends when that is more than the share of the elapsed time the models' paced plan would
//      add to the unpaced phase
//      (LossBudget::paced_slack; 0 where the bottleneck limits both) plus kPacingOverhead,
//      in two consecutive windows of at least kBudgetWindowUs each, with at least
//      kBudgetMinLosses losses: a rate is not judged from one event, nor from one burst (8+8
//      hosts at 1 KB lose a few segments at once now and then, 3 % of the time over seconds but
//      5 % over a third of one; a new process's connections starting up lose a burst too).
//      kPacingOverhead stands for what pacing costs that the models do not see (the control
//      plane's work per phase, the hosts' plans changing at different phases) and for one
//      window's noise: 5 % of the time, the spread of one cell of `make bench-system` between
//      repetitions. Where the models' plan does not pace, there is no budget and only the
//      backstop counts: more than kAuditLossShareMax of the segments lost. Losses that stay
//      within all that, but come in window after window (kBudgetMinLosses or more in each of two
//      consecutive budget windows), end the verdict as timeouts do (floored, 4.): any of them can
//      be a tail that waits for the stock RTO, and each host would otherwise learn that from a
//      200 ms timeout of its own (4+4 hosts at 4 KB lost 0.1 % of their segments for seconds
//      after a clean trial, and some host paid an RTO in most 2 s runs). (A fixed share alone
//      was wrong both ways: at 0.1 %, hosts of a 4 KB all-to-all on 4+4 hosts, which stock
//      Linux then ran at 0.85 of C, lost 0.03-0.26 % per window and kept switching between
//      verdicts, 0.74 of C; at 1 %, the same cell in session 15's run lost 0.5-0.85 % for
//      ever, lossless at 0.80 of C against 0.86 for pace and floor by hand.)
//   4. Floored (a lossless verdict ended by its timeouts or rare losses): the losses are real
//      but rare (a trial of kTrialPhases phases saw none), so the key's phases run as the trial's did,
//      unpaced with the RTO floor: a tail loss then costs the floor, not the stock RTO, and the
//      host sends in step with the other hosts of the collective, whose own verdicts may still
//      be lossless. (A host that paces alone sets the pace of the whole all-to-all: every rank
//      waits for its data. On 8+8 hosts at 1 KB, hosts that fell back to the models' pacing
//      after an audit took the collective from 0.79 to 0.55 of C over three repetitions.)
//      Every kFlooredAuditEvery-th phase audits the counters; once a window spans at least
//      kFlooredWindowUs, timeouts that cost more than kTimeoutShareMax of it at the floor, or
//      the lost share as above, end the verdict: lossy. Entering it counts as a failure: a new
//      trial starts when a lossy key's would (5.), and a passed one makes the key lossless
//      again. A stray timeout then costs the floor's running cost for kRetryAfterPhases
//      phases, not for ever (where the floor is no gain, on a loaded machine, its spurious
//      retransmissions slowed a 1 KB all-to-all of 8+8 hosts by a fifth).
//   5. Lossy (a failed trial, a lossless verdict ended by its lost share, or a floored one
//      ended): the models decide again; a new trial at the next multiple of kRetryAfterPhases
//      phases of the key, doubled after every failure (at most kRetryMaxPhases), so that the
//      hosts of one collective try again together.
//   6. Presumed lossless. The models plan with a share of the switch queue (queue_share), so
//      they predict a loss for an unpaced burst that fits the whole queue but not the share.
//      Such a loss is the least likely of all the verdicts the check doubts, and the trial
//      that would disprove it is the costliest part of the check where phases are short
//      against the control plane's work: 32 hinted phases with the floor. On 4+4 hosts in the
//      one-CPU guest at 1 KB (16 flows of 1 KB into a 16-packet FIFO, 8 of them the share)
//      the trial's phases took 75-200 ms against stock's 37 ms, and passed on most hosts. So a
//      key never checked whose burst fits the whole queue starts lossless, without a trial,
//      under the audits of 3.; a failure there makes it lossy, and its later trials are real.
//
// The counters are the host's (its network namespace's): any traffic's losses count against a
// verdict, never for one. Pure: the counters come from the caller, with the time they were read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "calibration.hpp"
#include "decision.hpp"

namespace gp::models {

// A snapshot of the host's TCP counters (Tcp: OutSegs, RetransSegs; TcpExt: TCPTimeouts,
// TCPDSACKRecvSegs, TCPSpuriousRTOs).
//
// Retransmissions that the receiver reports as duplicates (DSACK) and timeouts that F-RTO finds
// spurious lost nothing: they are what a low floor costs on a host whose ACKs come late (with the
// floor, a tail loss probe of a one-segment flight waits 2 SRTT + the floor, not + 200 ms). A
// trial runs with the floor, so they are taken off before the counts are judged.
struct HostTcpCounters {
	uint64_t segments_sent = 0;
	uint64_t segments_retransmitted = 0;
	uint64_t segments_reported_duplicate = 0;	// DSACKed: retransmitted needlessly
	uint64_t timeouts = 0;
	uint64_t spurious_timeouts = 0;
	double at_us = 0;	// monotonic time of the reading
};

// What the key's losses are weighed against (filled in by the planner from the models).
struct LossBudget {
	// What a timeout costs under the floor the trial and the floored stage run with (0: the
	// stock RTO).
	double floor_us = 0;
	// What one segment lost and recovered without a timeout costs its phase: two round trips
	// of the path with its bottleneck queue full (a tail loss probe waits 2 SRTT). 0: the
	// models' plan does not pace, and the losses are judged by the backstop share alone.
	double recovery_us = 0;
	// The models' paced plan's predicted phase time over the unpaced phase's without a loss,
	// less 1 (0.11: pacing adds 11 %; 0 where the bottleneck limits both).
	double paced_slack = 0;
	// The hosts whose losses the key's phases wait for, this one included: every host of a
	// symmetric collective, 1 for a rooted one. A host sees only its own losses, and presumes
	// that each of the others loses alike: a phase waits for the slowest of them (3.).
	double hosts = 1;
};

// The timeouts between two readings that lost something: less the spurious ones, and never more
// than the segments lost (a timeout whose retransmission the receiver reports as a duplicate lost
// nothing). Reports that come after `to` are not seen: read them at least an RTT later to judge
// strictly (the loss check does).
uint64_t timeouts_that_lost(const HostTcpCounters &from, const HostTcpCounters &to);

enum class LossStage { Unchecked, Trial, Lossless, Floored, Lossy };
// "unchecked", "trial", "lossless", "floored", "lossy"
const char *loss_stage_name(LossStage stage);

// What the key's next phase runs: the models' plan, the trial's (unpaced, RTO floor), nothing,
// or the floor alone (unpaced, as in a trial).
enum class LossDirective { Model, Trial, Lossless, Floored };

struct LossCheckState {
	LossStage stage = LossStage::Unchecked;
	uint64_t phases = 0;		// of the key, while its models' plan remedies a predicted loss
	uint64_t trial_phases = 0;	// ended in the current (or last) trial
	uint64_t trials = 0, failures = 0;
	uint64_t retry_at = 0;		// phase count of the next trial (lossy)
	// The host's segments sent and lost (retransmitted less those reported as duplicates) and
	// its timeouts (less the spurious ones), over the current (or last) trial, and over the
	// audits since the last lossless verdict.
	uint64_t trial_sent = 0, trial_lost = 0, trial_timeouts = 0;
	uint64_t audit_sent = 0, audit_lost = 0, audit_timeouts = 0;
	// Since the key became floored (the audits of that stage).
	uint64_t floored_sent = 0, floored_lost = 0, floored_timeouts = 0;
	uint64_t floored = 0;		// times a lossless verdict was ended by its timeouts
	bool presumed = false;		// the first lossless verdict came without a trial (6.)
	// A lossless verdict not yet judged on kAuditSegments segments of its own, within
	// kBudgetWindowUs of its start: its sender is advised quiet for kSettlingQuietUs only, so
	// that audits come often while a verdict may still be wrong (3.).
	bool settling = false;
	LossBudget budget;		// the last BEGIN's
	// "losses" (the backstop share), "recovery" (losses that cost more than pacing),
	// "timeouts", "unfinished"
	const char *last_failure = "";
};

class LossCheck {
public:
	static constexpr double kTimeoutShareMax = 0.05;
	static constexpr double kAuditLossShareMax = 0.01;
	static constexpr uint64_t kBudgetMinLosses = 3;
	static constexpr double kPacingOverhead = 0.05;
	static constexpr double kBudgetWindowUs = 1e6;
	static constexpr uint64_t kAuditSegments = 1000;
	static constexpr uint64_t kRetryAfterPhases = 256;
	static constexpr uint64_t kRetryMaxPhases = 65536;
	static constexpr uint64_t kDefaultTrialPhases = 32;
	static constexpr double kTrialPhaseMaxUs = 50000;
	static constexpr double kTrialBurstOverQueueMax = 2;
	static constexpr uint64_t kFlooredAuditEvery = 16;
	static constexpr double kFlooredWindowUs = 1e6;
	static constexpr double kSettlingQuietUs = 100000;

	// trial_phases = 0: never check (the models' verdict stands). stock_rto_us: what a timeout
	// costs a phase without the floor.
	explicit LossCheck(uint64_t trial_phases = kDefaultTrialPhases, double stock_rto_us = 200000,
			   size_t max_keys = 1024);

	// At the BEGIN of a phase of `key`. `remedied`: the models' plan remedies a predicted loss
	// of the unpaced burst (otherwise the check has nothing to say: Model). `phase_us`: the
	// plan's predicted (calibrated) phase time; no trial starts above kTrialPhaseMaxUs. `read`
	// gives the host's counters (nullopt: unreadable; then no trial starts and a verdict is not
	// judged); it is called only when the stage needs them. `budget`: what the losses are
	// weighed against (LossBudget).
	// `burst_fits_queue`: the unpaced burst fits the whole switch queue, though not the
	// share the models plan with; a key never checked then starts lossless (6.).
	// `burst_over_queue`: the unpaced burst over the whole switch queue (the largest of the
	// phase's bottlenecks); no trial starts above kTrialBurstOverQueueMax.
	template <class Read>
	LossDirective begin(const CalibrationKey &key, bool remedied, double phase_us, Read &&read,
			    const LossBudget &budget = {}, bool burst_fits_queue = false, double burst_over_queue = 0);
	// After the END of a phase of `key` that ran with `applied`.
	template <class Read> void end(const CalibrationKey &key, PlanKind applied, Read &&read);
	// `phases` phases of `key` ran without reaching the daemon (its sender skipped their hints
	// on quiet advice): they count among the key's phases, which schedule its next trial.
	void skipped(const CalibrationKey &key, uint64_t phases);

	uint64_t trial_phases() const { return trial_phases_; }
	std::optional<LossCheckState> state(const CalibrationKey &key) const;
	template <class Fn> void for_each(Fn &&fn) const
	{
		for (const auto &[key, entry] : entries_)
			fn(key, entry.state);
	}

private:
	struct Entry {
		LossCheckState state;
		HostTcpCounters from;		// the trial's start
		HostTcpCounters previous;	// the last reading (trial phase end, or audit)
		HostTcpCounters audited;	// the last audit that judged the lost share
		HostTcpCounters window;		// the start of the floored stage's current timeout window
		HostTcpCounters weighed;	// the start of the current window of the loss budget
		double lossless_at_us = 0;	// when the current lossless verdict began
		bool over_budget = false;	// the last window's losses cost more than pacing
		bool losing = false;		// the last window lost kBudgetMinLosses segments or more
		bool losing_on = false;		// and so did the one before it
		uint64_t trial_begins = 0;
		uint64_t last_use = 0;
	};
	Entry *entry(const CalibrationKey &key, bool create);
	LossDirective on_begin(Entry &e, const std::optional<HostTcpCounters> &now, bool have_read, bool may_start,
			       bool presumed);
	void on_end(Entry &e, const std::optional<HostTcpCounters> &now);
	// Judges the counters up to `now` by the stage's rules; returns the failure ("" if none).
	const char *judge(Entry &e, const HostTcpCounters &now);
	const char *judge_losses(Entry &e, const HostTcpCounters &now);
	void enter_floored(Entry &e, const HostTcpCounters &now, const char *why);
	LossDirective start_trial(Entry &e, const HostTcpCounters &now);
	// Counts a failure and sets the phase of the next trial (the wait doubles per failure).
	void schedule_retry(Entry &e);
	void fail(Entry &e, const char *why);
	bool needs_counters_at_begin(const Entry &e, bool may_start, bool presumed) const;
	void enter_lossless(Entry &e, const HostTcpCounters &now);

	uint64_t trial_phases_;
	double stock_rto_us_;
	size_t max_keys_;
	uint64_t clock_ = 0;
	std::map<CalibrationKey, Entry> entries_;
};

template <class Read>
LossDirective LossCheck::begin(const CalibrationKey &key, bool remedied, double phase_us, Read &&read,
			       const LossBudget &budget, bool burst_fits_queue, double burst_over_queue)
{
	if (!remedied || trial_phases_ == 0)
		return LossDirective::Model;
	Entry *e = entry(key, true);
	if (!e)
		return LossDirective::Model;
	++e->state.phases;
	e->state.budget = budget;
	const bool may_start = phase_us <= kTrialPhaseMaxUs && burst_over_queue <= kTrialBurstOverQueueMax;
	if (!needs_counters_at_begin(*e, may_start, burst_fits_queue))
		return on_begin(*e, std::nullopt, false, may_start, burst_fits_queue);
	return on_begin(*e, read(), true, may_start, burst_fits_queue);
}

template <class Read> void LossCheck::end(const CalibrationKey &key, PlanKind applied, Read &&read)
{
	Entry *e = entry(key, false);
	if (!e || e->state.stage != LossStage::Trial || applied != PlanKind::Rto)
		return;
	on_end(*e, read());
}

} // namespace gp::models
