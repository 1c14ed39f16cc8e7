// PlanLearner (plan_learner.hpp): the models' choice until it has a full window of measured
// phases, then the plan whose window mean beats the current one by the margin, and exploration
// of unmeasured (or stale) plans whose predicted time is within 4x of the current plan's, every
// 8th phase.
#include "plan_learner.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace gp::models {
namespace {

const CalibrationKey kKey{1, 12, 8};

// The models' view of a 4 KB all-to-all they believe overflows: pacing predicted 2.7 ms, the
// RTO floor 7.7 ms (a loss at a 5 ms floor), nothing 203 ms (a loss at the stock 200 ms).
std::array<PlanCandidate, 4> overflow_candidates()
{
	std::array<PlanCandidate, 4> c{};
	c[static_cast<size_t>(PlanKind::Nothing)] = {true, 203000};
	c[static_cast<size_t>(PlanKind::Pace)] = {true, 2700};
	c[static_cast<size_t>(PlanKind::Rto)] = {true, 7700};
	c[static_cast<size_t>(PlanKind::Both)] = {true, 2800};
	return c;
}

TEST(PlanLearner, TheModelsChoiceRunsUntilItIsMeasured)
{
	PlanLearner learner;
	const auto c = overflow_candidates();
	for (uint64_t i = 0; i < PlanLearner::kWindow; ++i) {
		for (int j = 0; j < 8; ++j) { // exploration waits for the model's own window
			const PlanChoice choice = learner.choose(kKey, PlanKind::Pace, c);
			EXPECT_EQ(choice.plan, PlanKind::Pace);
			EXPECT_EQ(choice.why, ChoiceReason::Model);
		}
		ASSERT_TRUE(learner.record(kKey, PlanKind::Pace, 2700));
	}
}

// A world where the models' loss verdict is wrong: unpaced phases never lose their tail, so the
// RTO floor (which costs nothing without a loss) is fastest. Exploration tries the floor and
// both (within 4x of pacing's 2.7 ms) and never "nothing" (203 ms predicted); then the floor
// runs. When the floor's phases start to lose tails, pacing is back.
TEST(PlanLearner, AMeasuredFasterPlanReplacesTheModelsChoice)
{
	PlanLearner learner;
	const auto c = overflow_candidates();
	std::array<double, 4> world{};
	world[static_cast<size_t>(PlanKind::Nothing)] = 2000;
	world[static_cast<size_t>(PlanKind::Rto)] = 2000;
	world[static_cast<size_t>(PlanKind::Pace)] = 2700;
	world[static_cast<size_t>(PlanKind::Both)] = 2750;
	std::array<int, 4> runs{};
	PlanChoice last;
	for (int i = 0; i < 400; ++i) {
		last = learner.choose(kKey, PlanKind::Pace, c);
		++runs[static_cast<size_t>(last.plan)];
		learner.record(kKey, last.plan, world[static_cast<size_t>(last.plan)]);
	}
	EXPECT_EQ(runs[static_cast<size_t>(PlanKind::Nothing)], 0) << "predicted to pay the stock RTO: never explored";
	EXPECT_EQ(runs[static_cast<size_t>(PlanKind::Both)], static_cast<int>(PlanLearner::kWindow));
	EXPECT_GE(runs[static_cast<size_t>(PlanKind::Rto)], 2 * static_cast<int>(PlanLearner::kWindow));
	EXPECT_EQ(last.plan, PlanKind::Rto);
	EXPECT_EQ(last.why, ChoiceReason::Measured);

	// The floor's phases start to lose tails: its window mean rises above pacing's.
	for (size_t i = 0; i < PlanLearner::kWindow; ++i)
		learner.record(kKey, PlanKind::Rto, 9000);
	for (int i = 0; i < 16; ++i)
		EXPECT_EQ(learner.choose(kKey, PlanKind::Pace, c).plan, PlanKind::Pace);
}

TEST(PlanLearner, WithinTheMarginTheModelsChoiceStays)
{
	PlanLearner learner;
	auto c = overflow_candidates();
	c[static_cast<size_t>(PlanKind::Both)].allowed = false;
	for (uint64_t i = 0; i < PlanLearner::kWindow; ++i) {
		learner.record(kKey, PlanKind::Pace, 2700);
		learner.record(kKey, PlanKind::Rto, 2700 * (1 - PlanLearner::kSwitchMargin / 2));
	}
	for (int i = 0; i < 50; ++i) {
		const PlanChoice choice = learner.choose(kKey, PlanKind::Pace, c);
		EXPECT_EQ(choice.plan, PlanKind::Pace) << "phase " << i;
	}
}

TEST(PlanLearner, ADisallowedPlanIsNeverChosenHoweverFastItWas)
{
	PlanLearner learner;
	auto c = overflow_candidates();
	for (uint64_t i = 0; i < PlanLearner::kWindow; ++i) {
		learner.record(kKey, PlanKind::Pace, 2700);
		learner.record(kKey, PlanKind::Rto, 1000);
	}
	c[static_cast<size_t>(PlanKind::Rto)].allowed = false; // the config switched the floor off
	for (int i = 0; i < 50; ++i)
		EXPECT_NE(learner.choose(kKey, PlanKind::Pace, c).plan, PlanKind::Rto);
}

// A plan left for longer than kStaleAfter phases is measured afresh, so an old verdict does not
// hold forever: the world changed, and the floor is good again.
TEST(PlanLearner, AStaleVerdictIsMeasuredAgain)
{
	PlanLearner learner;
	auto c = overflow_candidates();
	c[static_cast<size_t>(PlanKind::Both)].allowed = false;
	for (size_t i = 0; i < PlanLearner::kWindow; ++i) {
		learner.choose(kKey, PlanKind::Pace, c);
		learner.record(kKey, PlanKind::Pace, 2700);
	}
	for (size_t i = 0; i < PlanLearner::kWindow; ++i)
		learner.record(kKey, PlanKind::Rto, 9000); // the floor was bad then
	int explored = 0;
	for (uint64_t i = 0; i < PlanLearner::kStaleAfter + 200; ++i) {
		const PlanChoice choice = learner.choose(kKey, PlanKind::Pace, c);
		explored += choice.why == ChoiceReason::Exploring;
		learner.record(kKey, choice.plan, choice.plan == PlanKind::Rto ? 1500 : 2700); // the floor is good now
	}
	EXPECT_GE(explored, static_cast<int>(PlanLearner::kWindow)) << "the old verdict was never revisited";
	const PlanChoice now = learner.choose(kKey, PlanKind::Pace, c);
	EXPECT_EQ(now.plan, PlanKind::Rto);
	EXPECT_EQ(now.why, ChoiceReason::Measured);
}

TEST(PlanLearner, BadSamplesAreRefusedAndKeysAreBounded)
{
	PlanLearner learner(2);
	EXPECT_FALSE(learner.record(kKey, PlanKind::Pace, 0));
	EXPECT_FALSE(learner.record(kKey, PlanKind::Pace, -1));
	EXPECT_FALSE(learner.record(kKey, PlanKind::Pace, std::numeric_limits<double>::infinity()));
	EXPECT_FALSE(learner.outcomes(kKey));
	ASSERT_TRUE(learner.record(kKey, PlanKind::Pace, 100));
	ASSERT_TRUE(learner.record(kKey, PlanKind::Pace, 200));
	EXPECT_EQ((*learner.outcomes(kKey))[static_cast<size_t>(PlanKind::Pace)].samples, 2u);
	EXPECT_DOUBLE_EQ((*learner.outcomes(kKey))[static_cast<size_t>(PlanKind::Pace)].mean_us, 150);
	learner.record(CalibrationKey{1, 13, 8}, PlanKind::Pace, 1);
	learner.record(CalibrationKey{1, 14, 8}, PlanKind::Pace, 1); // evicts the least recent: kKey
	EXPECT_FALSE(learner.outcomes(kKey));
}

} // namespace
} // namespace gp::models
