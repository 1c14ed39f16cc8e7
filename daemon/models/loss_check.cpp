#include "loss_check.hpp"

#include <algorithm>
#include <string_view>

namespace gp::models {

const char *loss_stage_name(LossStage stage)
{
	switch (stage) {
	case LossStage::Unchecked:
		return "unchecked";
	case LossStage::Trial:
		return "trial";
	case LossStage::Lossless:
		return "lossless";
	case LossStage::Floored:
		return "floored";
	case LossStage::Lossy:
		return "lossy";
	}
	return "?";
}

LossCheck::LossCheck(uint64_t trial_phases, double stock_rto_us, size_t max_keys)
	: trial_phases_(trial_phases), stock_rto_us_(stock_rto_us), max_keys_(std::max<size_t>(max_keys, 1))
{
}

std::optional<LossCheckState> LossCheck::state(const CalibrationKey &key) const
{
	const auto it = entries_.find(key);
	if (it == entries_.end())
		return std::nullopt;
	return it->second.state;
}

LossCheck::Entry *LossCheck::entry(const CalibrationKey &key, bool create)
{
	auto it = entries_.find(key);
	if (it == entries_.end()) {
		if (!create)
			return nullptr;
		if (entries_.size() >= max_keys_) {
			auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto &a, const auto &b) {
				return a.second.last_use < b.second.last_use;
			});
			entries_.erase(oldest);
		}
		it = entries_.emplace(key, Entry{}).first;
	}
	it->second.last_use = ++clock_;
	return &it->second;
}

void LossCheck::skipped(const CalibrationKey &key, uint64_t phases)
{
	if (auto it = entries_.find(key); it != entries_.end())
		it->second.state.phases += phases;
}

bool LossCheck::needs_counters_at_begin(const Entry &e, bool may_start, bool presumed) const
{
	switch (e.state.stage) {
	case LossStage::Unchecked:
		return may_start || presumed;
	case LossStage::Lossless:
		return true;
	case LossStage::Floored:
		return e.state.phases % kFlooredAuditEvery == 0 || (may_start && e.state.phases >= e.state.retry_at);
	case LossStage::Lossy:
		return may_start && e.state.phases >= e.state.retry_at;
	case LossStage::Trial:
		return false;
	}
	return false;
}

LossDirective LossCheck::on_begin(Entry &e, const std::optional<HostTcpCounters> &now, bool have_read,
				  bool may_start, bool presumed)
{
	LossCheckState &s = e.state;
	switch (s.stage) {
	case LossStage::Floored:
		if (now && may_start && s.phases >= s.retry_at)
			return start_trial(e, *now);
		if (!now)
			return LossDirective::Floored;
		if (const char *why = judge(e, *now); *why) {
			fail(e, why);
			return LossDirective::Model;
		}
		return LossDirective::Floored;
	case LossStage::Unchecked:
		if (presumed && now) {
			s.presumed = true;
			enter_lossless(e, *now);
			return LossDirective::Lossless;
		}
		[[fallthrough]];
	case LossStage::Lossy:
		if (!have_read || !may_start || !now)
			return LossDirective::Model;
		return start_trial(e, *now);
	case LossStage::Trial:
		// ENDs can be lost (a sender gone, a phase timed out): a trial that began far more
		// phases than it saw end gives up rather than run unpaced for ever.
		if (++e.trial_begins > 2 * trial_phases_ + 8) {
			fail(e, "unfinished");
			return LossDirective::Model;
		}
		return LossDirective::Trial;
	case LossStage::Lossless:
		if (!now)
			return LossDirective::Lossless; // judged at the next reading
		if (const char *why = judge(e, *now); *why) {
			// Timeouts after a clean trial, or losses in window after window that cost less
			// than pacing would: rare losses, any of them a tail loss that waits for the RTO,
			// which the floor makes cheap without taking the host out of step with the others
			// (loss_check.hpp, 4.).
			if (std::string_view(why) == "timeouts" || std::string_view(why) == "rare losses") {
				enter_floored(e, *now, why);
				return LossDirective::Floored;
			}
			fail(e, why);
			return LossDirective::Model;
		}
		return LossDirective::Lossless;
	}
	return LossDirective::Model;
}

LossDirective LossCheck::start_trial(Entry &e, const HostTcpCounters &now)
{
	LossCheckState &s = e.state;
	s.stage = LossStage::Trial;
	s.settling = false;
	++s.trials;
	s.trial_phases = 0;
	s.trial_sent = s.trial_lost = s.trial_timeouts = 0;
	e.from = e.previous = now;
	e.trial_begins = 1;
	return LossDirective::Trial;
}

void LossCheck::on_end(Entry &e, const std::optional<HostTcpCounters> &now)
{
	if (!now)
		return;
	LossCheckState &s = e.state;
	++s.trial_phases;
	if (const char *why = judge(e, *now); *why) {
		fail(e, why);
		return;
	}
	if (s.trial_phases >= trial_phases_)
		enter_lossless(e, *now);
}

void LossCheck::enter_lossless(Entry &e, const HostTcpCounters &now)
{
	LossCheckState &s = e.state;
	s.stage = LossStage::Lossless;
	s.audit_sent = s.audit_lost = s.audit_timeouts = 0;
	s.settling = true;
	e.previous = e.audited = e.weighed = now;
	e.lossless_at_us = now.at_us;
	e.over_budget = e.losing = e.losing_on = false;
}

namespace {

uint64_t less(uint64_t a, uint64_t b) { return a >= b ? a - b : 0; }

// What a stretch of the counters lost: retransmissions less those the receivers reported as
// duplicates, timeouts less the spurious ones. The reports come an RTT after what they report,
// so they are taken up to `reports`, a later reading than `to`.
//
// A timeout retransmits at least one segment, so a stretch cannot have paid more timeouts for
// losses than it lost segments: the others retransmitted what had arrived. F-RTO does not flag
// those where it cannot tell (a flight of one segment has no new data to probe with); the
// receiver's duplicate report does. In the guest cluster (one emulated CPU for 8 hosts and their
// daemons, stalls longer than the floor), such timeouts failed trials that lost nothing.
struct Losses {
	uint64_t sent = 0, lost = 0, timeouts = 0;
	double elapsed_us = 0;
};
Losses losses(const HostTcpCounters &from, const HostTcpCounters &to, const HostTcpCounters &reports)
{
	Losses l;
	l.sent = less(to.segments_sent, from.segments_sent);
	l.lost = less(less(to.segments_retransmitted, from.segments_retransmitted),
		      less(reports.segments_reported_duplicate, from.segments_reported_duplicate));
	l.timeouts = std::min(l.lost, less(less(to.timeouts, from.timeouts),
					   less(reports.spurious_timeouts, from.spurious_timeouts)));
	l.elapsed_us = std::max(0.0, to.at_us - from.at_us);
	return l;
}

} // namespace

uint64_t timeouts_that_lost(const HostTcpCounters &from, const HostTcpCounters &to)
{
	return losses(from, to, to).timeouts;
}

void LossCheck::enter_floored(Entry &e, const HostTcpCounters &now, const char *why)
{
	LossCheckState &s = e.state;
	schedule_retry(e);
	s.stage = LossStage::Floored;
	s.settling = false;
	s.last_failure = why;
	++s.floored;
	s.floored_sent = s.floored_lost = s.floored_timeouts = 0;
	e.previous = e.audited = e.window = e.weighed = now;
	e.over_budget = e.losing = e.losing_on = false;
}

const char *LossCheck::judge(Entry &e, const HostTcpCounters &now)
{
	LossCheckState &s = e.state;
	if (s.stage == LossStage::Trial) {
		// The whole trial, up to the reading before this one, whose duplicate reports and
		// spurious-timeout verdicts have come in by now.
		const Losses l = losses(e.from, e.previous, now);
		e.previous = now;
		s.trial_sent = l.sent, s.trial_lost = l.lost, s.trial_timeouts = l.timeouts;
		if (l.timeouts)
			return "timeouts";
		if (l.lost)
			return "losses";
		return "";
	}
	if (s.stage == LossStage::Floored) {
		// Timeouts priced at the floor, over windows of at least kFlooredWindowUs (its
		// phases all reach the daemon, a few milliseconds apart): one timeout must not end
		// the verdict because the last reading was recent, and many must not wait for the
		// window's end.
		const Losses step = losses(e.previous, now, now);
		e.previous = now;
		s.floored_sent += step.sent, s.floored_lost += step.lost, s.floored_timeouts += step.timeouts;
		const Losses window = losses(e.window, now, now);
		const double cost_us = e.state.budget.floor_us > 0 ? e.state.budget.floor_us : stock_rto_us_;
		if (window.timeouts && static_cast<double>(window.timeouts) * cost_us >
					       kTimeoutShareMax * std::max(window.elapsed_us, kFlooredWindowUs))
			return "timeouts";
		if (window.elapsed_us >= kFlooredWindowUs)
			e.window = now;
		return judge_losses(e, now);
	}
	// An audit: the window since the last one (a second or so, so the lag does not matter)
	// for timeouts, priced at the stock RTO against the time that passed; the lost share over
	// at least kAuditSegments, so that one late report does not end a verdict.
	const Losses window = losses(e.previous, now, now);
	e.previous = now;
	s.audit_sent += window.sent, s.audit_lost += window.lost, s.audit_timeouts += window.timeouts;
	if (now.at_us - e.lossless_at_us >= kBudgetWindowUs)
		s.settling = false;
	if (window.timeouts &&
	    static_cast<double>(window.timeouts) * stock_rto_us_ > kTimeoutShareMax * window.elapsed_us)
		return "timeouts";
	if (const char *why = judge_losses(e, now); *why)
		return why;
	return e.losing_on ? "rare losses" : "";
}

// The losses since the last judgment: their recovery time against the paced plan's slack, over
// at least kBudgetWindowUs (loss_check.hpp, 3.), and the backstop share, over at least
// kAuditSegments, so that one late report does not end a verdict and a long clean history does
// not dilute a new loss.
const char *LossCheck::judge_losses(Entry &e, const HostTcpCounters &now)
{
	const LossBudget &b = e.state.budget;
	if (const Losses window = losses(e.weighed, now, now); window.elapsed_us >= kBudgetWindowUs) {
		e.weighed = now;
		const bool over = b.recovery_us > 0 && window.lost >= kBudgetMinLosses &&
				  static_cast<double>(window.lost) * b.recovery_us * std::max(1.0, b.hosts) >
					  (std::max(0.0, b.paced_slack) + kPacingOverhead) * window.elapsed_us;
		const bool sustained = over && e.over_budget;
		e.over_budget = over;
		const bool losing = window.lost >= kBudgetMinLosses;
		e.losing_on = losing && e.losing;
		e.losing = losing;
		if (sustained)
			return "recovery";
	}
	const Losses window = losses(e.audited, now, now);
	if (window.sent < kAuditSegments)
		return "";
	e.audited = now;
	e.state.settling = false;
	if (static_cast<double>(window.lost) > kAuditLossShareMax * static_cast<double>(window.sent))
		return "losses";
	return "";
}

void LossCheck::fail(Entry &e, const char *why)
{
	schedule_retry(e);
	e.state.stage = LossStage::Lossy;
	e.state.settling = false;
	e.state.last_failure = why;
}

void LossCheck::schedule_retry(Entry &e)
{
	LossCheckState &s = e.state;
	const uint64_t wait = std::min(kRetryMaxPhases, kRetryAfterPhases << std::min<uint64_t>(s.failures, 16));
	++s.failures;
	// At the next multiple of the wait: the ranks of a collective begin its phases in step, so
	// hosts that failed alike try again together. A host trying alone while the others pace
	// would find room in the queue that a trial of all of them would not.
	s.retry_at = (s.phases / wait + 1) * wait;
}

} // namespace gp::models
