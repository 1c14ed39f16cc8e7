// LossCheck: the trial, the verdicts and the audits (Documentation/models.md, "Checking the loss
// verdict"). The counters here stand for the host's /proc/net/snmp and /proc/net/netstat.
#include <gtest/gtest.h>

#include <array>

#include "loss_check.hpp"

namespace gp::models {
namespace {

const CalibrationKey kKey{1, 12, 16};

// A host whose counters move as the test says: every phase sends `per_phase` segments and takes
// `phase_us`; losses are added by hand.
struct Host {
	HostTcpCounters c;
	uint64_t reads = 0;
	bool readable = true;
	std::optional<HostTcpCounters> read()
	{
		++reads;
		if (!readable)
			return std::nullopt;
		return c;
	}
	void phase(uint64_t per_phase = 40, double phase_us = 3000, uint64_t retransmitted = 0, uint64_t timeouts = 0)
	{
		c.segments_sent += per_phase;
		c.segments_retransmitted += std::max(retransmitted, timeouts); // a timeout retransmits
		c.timeouts += timeouts;
		c.at_us += phase_us;
	}
};

// One phase of kKey: BEGIN, the host's traffic, END with the plan the directive implies.
constexpr double kFloorUs = 5000;

LossDirective run_phase(LossCheck &check, Host &host, uint64_t retransmitted = 0, uint64_t timeouts = 0,
			uint64_t per_phase = 40, double phase_us = 3000, LossBudget budget = {kFloorUs})
{
	const LossDirective d = check.begin(kKey, true, 3000, [&] { return host.read(); }, budget);
	host.phase(per_phase, phase_us, retransmitted, timeouts);
	const PlanKind applied = d == LossDirective::Trial || d == LossDirective::Floored ? PlanKind::Rto
				 : d == LossDirective::Lossless ? PlanKind::Nothing
								: PlanKind::Pace;
	check.end(kKey, applied, [&] { return host.read(); });
	return d;
}

// A trial that pays a timeout in its first phase: it fails at the second END.
void fail_a_trial(LossCheck &check, Host &host)
{
	run_phase(check, host, 0, 1);
	run_phase(check, host);
}

TEST(LossCheck, ALosslessTrialTurnsTheKeyLossless)
{
	LossCheck check(8);
	Host host;
	for (int i = 0; i < 8; ++i)
		EXPECT_EQ(run_phase(check, host), LossDirective::Trial) << "phase " << i;
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossless);
	EXPECT_EQ(check.state(kKey)->trial_sent, 7u * 40) << "judged up to the reading before the last END";
	EXPECT_EQ(run_phase(check, host), LossDirective::Lossless);
	// One lost segment in 320 fails a trial: for small messages every loss is a tail loss.
	LossCheck strict(8);
	Host other;
	for (int i = 0; i < 8; ++i)
		run_phase(strict, other, i == 3 ? 1 : 0);
	EXPECT_EQ(strict.state(kKey)->stage, LossStage::Lossy);
	EXPECT_STREQ(strict.state(kKey)->last_failure, "losses");
}

TEST(LossCheck, ALostSegmentFailsTheTrialAtTheNextEnd)
{
	LossCheck check(32);
	Host host;
	// Each END judges the trial up to the reading before, whose duplicate reports have come in
	// by now: the first phase's losses at the second END.
	EXPECT_EQ(run_phase(check, host, 2), LossDirective::Trial);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Trial);
	EXPECT_EQ(run_phase(check, host), LossDirective::Trial);
	const auto s = check.state(kKey);
	EXPECT_EQ(s->stage, LossStage::Lossy);
	EXPECT_STREQ(s->last_failure, "losses");
	EXPECT_EQ(s->trial_lost, 2u);
	EXPECT_EQ(s->failures, 1u);
	EXPECT_EQ(run_phase(check, host), LossDirective::Model);
}

TEST(LossCheck, ATimeoutFailsAShortTrialAtOnce)
{
	LossCheck check(32);
	Host host;
	EXPECT_EQ(run_phase(check, host, 0, 1), LossDirective::Trial);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Trial) << "judged at the next reading (F-RTO's verdict)";
	EXPECT_EQ(run_phase(check, host), LossDirective::Trial);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossy);
	EXPECT_STREQ(check.state(kKey)->last_failure, "timeouts");
}

TEST(LossCheck, AuditsEndAVerdictWhenLossesAppear)
{
	LossCheck check(4);
	Host host;
	for (int i = 0; i < 4; ++i)
		run_phase(check, host);
	ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossless);
	// Quiet phases the daemon does not see: a second of traffic between audits.
	host.phase(5000, 1e6);
	EXPECT_EQ(run_phase(check, host), LossDirective::Lossless);
	// One timeout in four seconds costs 200 ms of 4 s (5 %): tolerated; in one second it is not.
	host.phase(5000, 4e6, 0, 1);
	EXPECT_EQ(run_phase(check, host), LossDirective::Lossless);
	host.phase(5000, 1e6, 0, 1);
	EXPECT_EQ(run_phase(check, host), LossDirective::Floored) << "timeouts after a clean trial: the floor alone";
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Floored);
	EXPECT_STREQ(check.state(kKey)->last_failure, "timeouts");
	EXPECT_EQ(check.state(kKey)->audit_timeouts, 2u);
	EXPECT_EQ(check.state(kKey)->floored, 1u);
	EXPECT_EQ(check.state(kKey)->failures, 1u) << "counted as a failure: tried again later";

	// The lost share over at least 1000 segments since the last judgment: 2 % fails it after a
	// long clean history, where 1 % over the whole verdict would not.
	LossCheck again(4);
	Host h2;
	for (int i = 0; i < 4; ++i)
		run_phase(again, h2);
	h2.phase(1000000, 60e6);
	EXPECT_EQ(run_phase(again, h2), LossDirective::Lossless);
	h2.phase(400, 1e6, 1);
	EXPECT_EQ(run_phase(again, h2), LossDirective::Lossless) << "440 segments: too few to judge a share";
	h2.phase(5000, 1e6, 100);
	EXPECT_EQ(run_phase(again, h2), LossDirective::Model);
	EXPECT_STREQ(again.state(kKey)->last_failure, "losses");
	// Where the models' plan does not pace (no budget), a residue below 1 % is not pacing's to
	// prevent: the phases stay unpaced. Lost in one second after another, though, any of those
	// segments can be a tail that waits for the RTO: the floor alone, as after a timeout.
	LossCheck residue(4);
	Host h3;
	for (int i = 0; i < 4; ++i)
		run_phase(residue, h3);
	h3.phase(20000, 1e6, 100); // 0.5 %
	EXPECT_EQ(run_phase(residue, h3), LossDirective::Lossless) << "one window";
	h3.phase(20000, 1e6, 100);
	EXPECT_EQ(run_phase(residue, h3), LossDirective::Floored) << "two windows";
	EXPECT_STREQ(residue.state(kKey)->last_failure, "rare losses");
	EXPECT_EQ(residue.state(kKey)->failures, 1u) << "counted as a failure: tried again later";
}

// A new lossless verdict settles: until the backstop has judged kAuditSegments of its segments,
// and for at most kBudgetWindowUs, its sender is advised quiet for a tenth of a second, so that a
// verdict whose trial was wrong ends within that, not after a second of losses.
TEST(LossCheck, ANewVerdictSettlesUntilItsFirstJudgment)
{
	LossCheck check(4);
	Host host;
	for (int i = 0; i < 4; ++i)
		run_phase(check, host);
	ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossless);
	EXPECT_TRUE(check.state(kKey)->settling);
	host.phase(400, 100000); // 100 ms of quiet phases: 440 segments, too few to judge
	EXPECT_EQ(run_phase(check, host), LossDirective::Lossless);
	EXPECT_TRUE(check.state(kKey)->settling);
	host.phase(1000, 100000, 30); // 3 % of the next 100 ms lost: the backstop ends it now
	EXPECT_EQ(run_phase(check, host), LossDirective::Model);
	EXPECT_STREQ(check.state(kKey)->last_failure, "losses");
	EXPECT_FALSE(check.state(kKey)->settling);

	// Judged clean once: settled, and audited a quiet period apart from then on.
	LossCheck clean(4);
	Host h2;
	for (int i = 0; i < 4; ++i)
		run_phase(clean, h2);
	h2.phase(1200, 100000);
	EXPECT_EQ(run_phase(clean, h2), LossDirective::Lossless);
	EXPECT_FALSE(clean.state(kKey)->settling);

	// A host that sends little settles by time: a second after the verdict began.
	LossCheck slow(4);
	Host h3;
	for (int i = 0; i < 4; ++i)
		run_phase(slow, h3);
	for (int i = 0; i < 9; ++i) {
		h3.phase(10, 100000);
		EXPECT_EQ(run_phase(slow, h3), LossDirective::Lossless);
		EXPECT_TRUE(slow.state(kKey)->settling) << "audit " << i;
	}
	h3.phase(10, 100000);
	EXPECT_EQ(run_phase(slow, h3), LossDirective::Lossless);
	EXPECT_FALSE(slow.state(kKey)->settling);

	// A trial is not settling: only a lossless verdict is.
	LossCheck trial(4);
	Host h4;
	run_phase(trial, h4);
	EXPECT_EQ(trial.state(kKey)->stage, LossStage::Trial);
	EXPECT_FALSE(trial.state(kKey)->settling);
}

// Losses that cost more than pacing would: lost x recovery_us against (paced_slack + 5 %) x the
// elapsed time, in two consecutive windows of a second or more (loss_check.hpp, 3.). Here a loss
// costs 5 ms (two round trips through a full 40-packet queue at 200 Mbit/s) and the models'
// paced plan adds 5 % to the unpaced phase.
TEST(LossCheck, LossesThatCostMoreThanPacingEndAVerdict)
{
	const LossBudget budget{kFloorUs, 5000, 0.05};
	auto lossless = [&](LossCheck &check, Host &host) {
		for (int i = 0; i < 4; ++i)
			run_phase(check, host, 0, 0, 40, 3000, budget);
		ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossless);
	};
	// Two windows of a second, each with `lost` of 5000 segments: the directive after each.
	auto two_windows = [&](LossCheck &check, Host &host, const LossBudget &b, uint64_t lost) {
		std::array<LossDirective, 2> after{};
		for (LossDirective &d : after) {
			host.phase(5000, 1e6, lost);
			d = run_phase(check, host, 0, 0, 40, 3000, b);
		}
		return after;
	};
	// 0.5 % of 5000 segments a second: 25 losses x 5 ms = 125 ms of each second, more than the
	// 100 ms pacing would cost. (Session 15's 4+4 4 KB cell lost 0.5-0.85 %.) The first such
	// second could be a burst; the second makes it a rate.
	// And 15 losses a second on one of two hosts of a symmetric collective: the other is
	// presumed to lose alike, and each phase waits for both, 150 ms of each second.
	// And 15 losses a second alone where the models find pacing free (the bottleneck limits the
	// phase either way): 75 ms > 50 ms, twice. That comes before the floor.
	const LossBudget two_hosts{kFloorUs, 5000, 0.05, 2};
	const LossBudget free_pacing{kFloorUs, 5000, 0};
	for (const auto &[b, lost] : {std::pair{budget, uint64_t{25}}, std::pair{two_hosts, uint64_t{15}},
				      std::pair{free_pacing, uint64_t{15}}}) {
		LossCheck check(4);
		Host host;
		lossless(check, host);
		const auto after = two_windows(check, host, b, lost);
		EXPECT_EQ(after[0], LossDirective::Lossless) << lost << " lost: one window";
		EXPECT_EQ(after[1], LossDirective::Model) << lost << " lost: two windows";
		EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossy);
		EXPECT_STREQ(check.state(kKey)->last_failure, "recovery");
		EXPECT_EQ(check.state(kKey)->failures, 1u);
	}
	// Bursts with clean seconds between them (a new process's connections starting up): each
	// window over the budget is followed by one under it. Unpaced stays.
	{
		LossCheck check(4);
		Host host;
		lossless(check, host);
		for (int i = 0; i < 6; ++i) {
			host.phase(5000, 1e6, i % 2 ? 0 : 40);
			EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, budget), LossDirective::Lossless) << "window " << i;
		}
	}
	// 15 losses a second: 75 ms of each second, less than pacing's 100 ms. Unpaced stays, and
	// from the second such second on with the floor: those are rare losses, not a burst.
	{
		LossCheck check(4);
		Host host;
		lossless(check, host);
		const auto after = two_windows(check, host, budget, 15);
		EXPECT_EQ(after[0], LossDirective::Lossless);
		EXPECT_EQ(after[1], LossDirective::Floored);
		EXPECT_STREQ(check.state(kKey)->last_failure, "rare losses");
		for (int i = 0; i < 3; ++i) {
			host.phase(5000, 1e6, 15);
			EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, budget), LossDirective::Floored) << "window " << i;
		}
	}
	// Fewer than kBudgetMinLosses a second stay a matter of one event each, however many hosts
	// there are.
	{
		const LossBudget many_hosts{kFloorUs, 5000, 0.05, 1000};
		LossCheck check(4);
		Host host;
		lossless(check, host);
		for (int i = 0; i < 4; ++i) {
			host.phase(5000, 1e6, LossCheck::kBudgetMinLosses - 1);
			EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, many_hosts), LossDirective::Lossless) << "window " << i;
		}
	}
	// Fewer than kBudgetMinLosses in a second, or that many in seconds apart, stay lossless
	// without the floor: a loaded machine's spurious retransmissions made the floor cost 8+8
	// hosts a fifth of a 1 KB all-to-all.
	{
		LossCheck check(4);
		Host host;
		lossless(check, host);
		for (int i = 0; i < 6; ++i) {
			host.phase(5000, 1e6, i % 2 ? LossCheck::kBudgetMinLosses : LossCheck::kBudgetMinLosses - 1);
			EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, budget), LossDirective::Lossless) << "window " << i;
		}
	}
	// A window shorter than a second is not weighed, and two losses are not a rate: on a path
	// where a loss costs 100 ms they would cost 20 % of a second, but fewer than
	// kBudgetMinLosses are not judged by cost. Three are.
	{
		const LossBudget slow{kFloorUs, 100000, 0};
		LossCheck check(4);
		Host host;
		for (int i = 0; i < 4; ++i)
			run_phase(check, host, 0, 0, 40, 3000, slow);
		host.phase(1000, 0.5e6, 5);
		EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, slow), LossDirective::Lossless) << "half a second";
		host.phase(1000, 0.5e6);
		EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, slow), LossDirective::Lossless) << "the first second";
		host.phase(1000, 1e6, 5);
		EXPECT_EQ(run_phase(check, host, 0, 0, 40, 3000, slow), LossDirective::Model) << "the second one";
		EXPECT_STREQ(check.state(kKey)->last_failure, "recovery");
		LossCheck two(4);
		Host h2;
		for (int i = 0; i < 4; ++i)
			run_phase(two, h2, 0, 0, 40, 3000, slow);
		for (int i = 0; i < 3; ++i) {
			h2.phase(1000, 1e6, LossCheck::kBudgetMinLosses - 1);
			EXPECT_EQ(run_phase(two, h2, 0, 0, 40, 3000, slow), LossDirective::Lossless) << "window " << i;
		}
		h2.phase(1000, 1e6, LossCheck::kBudgetMinLosses);
		EXPECT_EQ(run_phase(two, h2, 0, 0, 40, 3000, slow), LossDirective::Lossless);
		h2.phase(1000, 1e6, LossCheck::kBudgetMinLosses);
		EXPECT_EQ(run_phase(two, h2, 0, 0, 40, 3000, slow), LossDirective::Model);
	}
	// The floored stage weighs its losses alike.
	{
		LossCheck check(4);
		Host host;
		lossless(check, host);
		host.phase(5000, 1e6, 0, 1);
		ASSERT_EQ(run_phase(check, host, 0, 0, 40, 3000, budget), LossDirective::Floored);
		// 1 loss (0.2 %) per 10 ms phase: 50 % of the time, judged once two seconds have passed.
		uint64_t phases = 0;
		for (; phases < 400 && check.state(kKey)->stage == LossStage::Floored; ++phases)
			run_phase(check, host, 1, 0, 500, 10000, budget);
		EXPECT_GE(phases, 200u);
		EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossy);
		EXPECT_STREQ(check.state(kKey)->last_failure, "recovery");
	}
}

// A lossless verdict ended by its timeouts runs its phases with the floor alone, unpaced, in step
// with hosts whose verdicts still stand; it is audited every 16 phases, the timeouts priced at
// the floor over windows of at least a second, ends lossy when they cost more than 5 %, and is
// tried again when a lossy key would be.
TEST(LossCheck, AFlooredVerdictPricesTimeoutsAtTheFloor)
{
	LossCheck check(4);
	Host host;
	for (int i = 0; i < 4; ++i)
		run_phase(check, host);
	ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossless);
	host.phase(5000, 1e6, 0, 1);
	ASSERT_EQ(run_phase(check, host), LossDirective::Floored);
	ASSERT_EQ(check.state(kKey)->retry_at, LossCheck::kRetryAfterPhases);

	// Phases of 3 ms with a timeout about every 150 ms (one per 50 phases): 5 ms each, 3.3 %
	// of the time at the floor (at the stock RTO it would be 133 %). Read every 16th phase only.
	const uint64_t reads_before = host.reads;
	int i = 0;
	for (; check.state(kKey)->phases + 1 < LossCheck::kRetryAfterPhases; ++i)
		ASSERT_EQ(run_phase(check, host, 0, i % 50 == 25 ? 1 : 0), LossDirective::Floored) << "phase " << i;
	EXPECT_LE(host.reads - reads_before, i / LossCheck::kFlooredAuditEvery + 1);
	EXPECT_GE(host.reads - reads_before, i / LossCheck::kFlooredAuditEvery - 1);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Floored);
	EXPECT_GE(check.state(kKey)->floored_timeouts, 4u);
	EXPECT_GE(check.state(kKey)->floored_sent, 9000u);

	// At phase 256 a new trial (unpaced with the floor, as before): passed, the key is lossless
	// again; a stray timeout does not keep it floored for ever.
	EXPECT_EQ(run_phase(check, host), LossDirective::Trial);
	for (int t = 0; t < 4; ++t)
		run_phase(check, host);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossless);
	EXPECT_EQ(check.state(kKey)->trials, 2u);

	// Timeouts again: floored, and the wait has doubled (second failure: a multiple of 512).
	host.phase(5000, 1e6, 0, 1);
	ASSERT_EQ(run_phase(check, host), LossDirective::Floored);
	EXPECT_EQ(check.state(kKey)->floored, 2u);
	EXPECT_EQ(check.state(kKey)->retry_at, 2 * LossCheck::kRetryAfterPhases);

	// A burst of timeouts ends it before the window's second is over: 12 × 5 ms > 5 % of 1 s.
	uint64_t phases = 0;
	while (run_phase(check, host, 0, 1) == LossDirective::Floored && phases < 100)
		++phases;
	EXPECT_LE(phases, 2 * LossCheck::kFlooredAuditEvery);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossy);
	EXPECT_STREQ(check.state(kKey)->last_failure, "timeouts");
	EXPECT_EQ(check.state(kKey)->failures, 3u);
	EXPECT_EQ(check.state(kKey)->retry_at, 4 * LossCheck::kRetryAfterPhases) << "tried again later, as any lossy key";

	// A lossless verdict ended by its lost share (losses that the floor does not make cheaper,
	// and that pacing prevents) goes to the models, not to the floor.
	LossCheck share(4);
	Host h2;
	for (int i = 0; i < 4; ++i)
		run_phase(share, h2);
	h2.phase(5000, 1e6, 100);
	EXPECT_EQ(run_phase(share, h2), LossDirective::Model);
	EXPECT_EQ(share.state(kKey)->stage, LossStage::Lossy);
	EXPECT_EQ(share.state(kKey)->floored, 0u);

	// Without a floor (0) a floored timeout is priced at the stock RTO.
	LossCheck stock(4);
	Host h3;
	for (int i = 0; i < 4; ++i)
		run_phase(stock, h3);
	h3.phase(5000, 1e6, 0, 1);
	ASSERT_EQ(stock.begin(kKey, true, 3000, [&] { return h3.read(); }), LossDirective::Floored);
	stock.end(kKey, PlanKind::Rto, [&] { return h3.read(); });
	for (int p = 0; p < 64 && stock.state(kKey)->stage == LossStage::Floored; ++p) {
		stock.begin(kKey, true, 3000, [&] { return h3.read(); });
		h3.phase(40, 3000, 0, p == 0 ? 1 : 0);
		stock.end(kKey, PlanKind::Rto, [&] { return h3.read(); });
	}
	EXPECT_EQ(stock.state(kKey)->stage, LossStage::Lossy) << "one 200 ms timeout is 20 % of a second";
}

// The floor makes late ACKs look like losses: a tail loss probe of a one-segment flight waits
// 2 SRTT + the floor, and a 5 ms RTO fires before a delayed ACK. The receivers report those
// retransmissions as duplicates (DSACK), F-RTO the timeouts as spurious: not losses.
TEST(LossCheck, NeedlessRetransmissionsAndSpuriousTimeoutsAreNotLosses)
{
	LossCheck check(8);
	Host host;
	for (int i = 0; i < 8; ++i) {
		run_phase(check, host, 3, i == 4 ? 1 : 0); // 3 of 40 segments retransmitted (7.5 %)
		host.c.segments_reported_duplicate += 3;
		host.c.spurious_timeouts += i == 4 ? 1 : 0;
	}
	// The duplicates come an RTT after the retransmissions: the reading at END may count a
	// phase's retransmissions before their DSACKs, but the trial judges its whole sum.
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossless) << check.state(kKey)->last_failure;
	EXPECT_LE(check.state(kKey)->trial_lost, 3u);
	EXPECT_EQ(check.state(kKey)->trial_timeouts, 0u);
}

// A timeout retransmits at least one segment: where the receivers report every retransmission of
// a stretch as a duplicate, its timeouts lost nothing, whether F-RTO could tell or not (a flight of
// one segment gives it no new data to probe with). A host whose CPU stalls longer than the floor
// pays them; they are the floor's running cost, not a loss (loss_check.cpp, losses()).
TEST(LossCheck, ATimeoutThatRetransmittedOnlyDuplicatesLostNothing)
{
	LossCheck check(8);
	Host host;
	for (int i = 0; i < 8; ++i) {
		run_phase(check, host, 0, i == 0 ? 1 : 0);
		if (i == 0)
			host.c.segments_reported_duplicate += 1; // no spurious_timeouts: F-RTO could not tell
	}
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossless) << check.state(kKey)->last_failure;
	EXPECT_EQ(check.state(kKey)->trial_timeouts, 0u);
	// The same timeout whose segment was not reported: lost, the trial fails.
	LossCheck other(8);
	Host lossy;
	for (int i = 0; i < 2; ++i)
		run_phase(other, lossy, 0, i == 0 ? 1 : 0);
	EXPECT_EQ(other.state(kKey)->stage, LossStage::Lossy);
	EXPECT_STREQ(other.state(kKey)->last_failure, "timeouts");
	EXPECT_EQ(other.state(kKey)->trial_timeouts, 1u);
}

TEST(LossCheck, ALossyKeyIsTriedAgainAfterAGrowingWait)
{
	LossCheck check(32);
	Host host;
	fail_a_trial(check, host); // phases 1 and 2
	ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossy);
	uint64_t phases = 2;
	while (run_phase(check, host) == LossDirective::Model && phases < 10000)
		++phases;
	EXPECT_EQ(phases, LossCheck::kRetryAfterPhases - 1)
		<< "the second trial starts at phase 256, the next multiple of the wait (hosts retry together)";
	EXPECT_EQ(check.state(kKey)->trials, 2u);
	// It fails again (phases 256 and 257): the wait doubles.
	fail_a_trial(check, host);
	ASSERT_EQ(check.state(kKey)->failures, 2u);
	EXPECT_EQ(check.state(kKey)->retry_at, 2 * LossCheck::kRetryAfterPhases) << "phase 257 failed: next at 512";
}

// A lossy key's paced phases may be held (quiet advice): its sender skips their hints and sums
// them up, and the skipped phases count towards the next trial as if they had been seen.
TEST(LossCheck, SkippedPhasesCountTowardsTheNextTrial)
{
	LossCheck check(32);
	Host host;
	fail_a_trial(check, host); // phases 1 and 2
	ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossy);
	ASSERT_EQ(check.state(kKey)->retry_at, LossCheck::kRetryAfterPhases);
	check.skipped(kKey, 100);
	EXPECT_EQ(run_phase(check, host), LossDirective::Model) << "phase 103 of 256";
	check.skipped(kKey, 200);
	EXPECT_EQ(check.state(kKey)->phases, 303u);
	EXPECT_EQ(run_phase(check, host), LossDirective::Trial) << "phase 304: past the retry's 256";
	check.skipped(CalibrationKey{1, 13, 16}, 1000);
	EXPECT_FALSE(check.state(CalibrationKey{1, 13, 16})) << "a key the check never saw is not created";
}

// A burst that fits the whole queue, though not the share the models plan with (6.): a key never
// checked starts lossless without a trial, under the audits; a verdict its losses end leaves
// the key lossy, and its next trial is a real one.
TEST(LossCheck, ABurstThatFitsTheWholeQueueStartsLosslessWithoutATrial)
{
	LossCheck check(8);
	Host host;
	auto phase = [&](uint64_t retransmitted = 0) {
		const LossDirective d = check.begin(kKey, true, 3000, [&] { return host.read(); }, {kFloorUs}, true);
		host.phase(40, 3000, retransmitted);
		check.end(kKey, d == LossDirective::Trial ? PlanKind::Rto : PlanKind::Nothing, [&] { return host.read(); });
		return d;
	};
	EXPECT_EQ(phase(), LossDirective::Lossless);
	auto s = check.state(kKey);
	EXPECT_EQ(s->stage, LossStage::Lossless);
	EXPECT_TRUE(s->presumed);
	EXPECT_EQ(s->trials, 0u);
	EXPECT_EQ(host.reads, 1u) << "the audits' baseline, read at the first BEGIN";
	// Lossless phases stay so; 2 % of the segments lost end the verdict at an audit.
	for (int i = 0; i < 30; ++i)
		EXPECT_EQ(phase(), LossDirective::Lossless) << i;
	int phases = 0;
	while (check.state(kKey)->stage == LossStage::Lossless && phases < 200) {
		phase(1);
		++phases;
	}
	s = check.state(kKey);
	EXPECT_EQ(s->stage, LossStage::Lossy);
	EXPECT_STREQ(s->last_failure, "losses");
	EXPECT_LT(phases, 60);
	// From now on the presumption is spent: the retry is a trial.
	LossDirective d = LossDirective::Model;
	for (int i = 0; i < 300 && d == LossDirective::Model; ++i)
		d = phase();
	EXPECT_EQ(d, LossDirective::Trial);
	// Without the presumption a key never checked starts with a trial, as before.
	LossCheck plain(8);
	Host other;
	EXPECT_EQ(plain.begin(kKey, true, 3000, [&] { return other.read(); }, {kFloorUs}, false), LossDirective::Trial);
}

TEST(LossCheck, CountersAreReadOnlyWhenNeeded)
{
	LossCheck check(4);
	Host host;
	fail_a_trial(check, host); // 1 read at BEGIN, 1 at each END
	ASSERT_EQ(check.state(kKey)->stage, LossStage::Lossy);
	EXPECT_EQ(host.reads, 3u);
	for (int i = 0; i < 100; ++i)
		run_phase(check, host);
	EXPECT_EQ(host.reads, 3u) << "a lossy key waiting for its next trial reads nothing";
}

TEST(LossCheck, WithoutCountersOrWithoutRemediesTheModelsDecide)
{
	LossCheck check(4);
	Host host;
	host.readable = false;
	EXPECT_EQ(run_phase(check, host), LossDirective::Model) << "no trial without a first reading";
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Unchecked);
	host.readable = true;
	EXPECT_EQ(check.begin(kKey, false, 3000, [&] { return host.read(); }), LossDirective::Model)
		<< "a plan that remedies nothing has no loss verdict to check";
	LossCheck off(0);
	EXPECT_EQ(run_phase(off, host), LossDirective::Model);
	EXPECT_FALSE(off.state(kKey));
}

// A failed trial runs about two phases unpaced: long phases (a 4 MB all-to-all takes seconds)
// are never tried, and their counters never read.
TEST(LossCheck, LongPhasesAreNotTried)
{
	LossCheck check(4);
	Host host;
	for (int i = 0; i < 300; ++i)
		EXPECT_EQ(check.begin(kKey, true, LossCheck::kTrialPhaseMaxUs * 1.01, [&] { return host.read(); }),
			  LossDirective::Model);
	EXPECT_EQ(host.reads, 0u);
	EXPECT_EQ(check.state(kKey)->trials, 0u);
	EXPECT_EQ(check.begin(kKey, true, LossCheck::kTrialPhaseMaxUs, [&] { return host.read(); }), LossDirective::Trial)
		<< "the same key once its phases are short enough";
}

// Nor is a burst far beyond the whole queue (more than kTrialBurstOverQueueMax times it):
// stock Linux would need the flows' starts spread over more than half the phase.
TEST(LossCheck, BurstsFarBeyondTheQueueAreNotTried)
{
	LossCheck check(4);
	Host host;
	const double beyond = LossCheck::kTrialBurstOverQueueMax * 1.01;
	for (int i = 0; i < 300; ++i)
		EXPECT_EQ(check.begin(kKey, true, 3000, [&] { return host.read(); }, {}, false, beyond),
			  LossDirective::Model);
	EXPECT_EQ(host.reads, 0u);
	EXPECT_EQ(check.state(kKey)->trials, 0u);
	EXPECT_EQ(check.begin(kKey, true, 3000, [&] { return host.read(); }, {}, false,
			      LossCheck::kTrialBurstOverQueueMax),
		  LossDirective::Trial)
		<< "the same key once its burst is at most twice the queue";
}

TEST(LossCheck, ATrialWhoseEndsNeverComeGivesUp)
{
	LossCheck check(4);
	Host host;
	uint64_t trials = 0;
	for (int i = 0; i < 40; ++i)
		if (check.begin(kKey, true, 3000, [&] { return host.read(); }) == LossDirective::Trial)
			++trials;
	EXPECT_EQ(trials, 2u * 4 + 8);
	EXPECT_EQ(check.state(kKey)->stage, LossStage::Lossy);
	EXPECT_STREQ(check.state(kKey)->last_failure, "unfinished");
	// Ends of phases that did not run the trial's plan do not count.
	LossCheck other(2);
	Host h;
	other.begin(kKey, true, 3000, [&] { return h.read(); });
	other.end(kKey, PlanKind::Pace, [&] { return h.read(); });
	other.end(kKey, PlanKind::Nothing, [&] { return h.read(); });
	EXPECT_EQ(other.state(kKey)->trial_phases, 0u);
}

TEST(LossCheck, KeysAreBounded)
{
	LossCheck check(4, 200000, 2);
	Host host;
	for (uint32_t p = 2; p < 10; ++p)
		check.begin(CalibrationKey{1, 12, p}, true, 3000, [&] { return host.read(); });
	int keys = 0;
	check.for_each([&](const CalibrationKey &, const LossCheckState &) { ++keys; });
	EXPECT_EQ(keys, 2);
}

} // namespace
} // namespace gp::models
