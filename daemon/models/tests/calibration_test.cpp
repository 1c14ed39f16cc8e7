// Online calibration (Documentation/models.md, "Calibration"): per (kind, floor(log2 m), P) the
// median r of the last nine ratios measured / predicted, correction clamp(r, 0.5, 3), mean
// absolute error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "calibration.hpp"

namespace gp::models {
namespace {

const CalibrationKey kKey{1, 16, 8};

// The key's size class: floor(log2 m), -1 for 0 bytes.
TEST(Calibration, SizeClassIsFloorLog2)
{
	EXPECT_EQ(size_class(0), -1);
	EXPECT_EQ(size_class(0.5), -1);
	EXPECT_EQ(size_class(1), 0);
	EXPECT_EQ(size_class(1023), 9);
	EXPECT_EQ(size_class(1024), 10);
	EXPECT_EQ(size_class(65536 + 1), 16);
}

// No sample yet: factor 1, the model as it is.
TEST(Calibration, UnknownKeyIsUncorrected)
{
	Calibration c;
	EXPECT_EQ(c.correction(kKey), 1.0);
	EXPECT_DOUBLE_EQ(c.corrected_us(kKey, 250), 250);
	EXPECT_FALSE(c.stats(kKey));
}

// A model that is consistently 2x optimistic: the first sample sets r = 2, the raw error stays at
// the prediction (|2p - p|), the calibrated error is only the first sample's (judged with 1).
TEST(Calibration, LearnsAConstantBias)
{
	Calibration c;
	for (int i = 0; i < 10; ++i)
		ASSERT_TRUE(c.record(kKey, 100, 200));
	auto s = c.stats(kKey);
	ASSERT_TRUE(s);
	EXPECT_EQ(s->samples, 10u);
	EXPECT_DOUBLE_EQ(s->correction, 2);
	EXPECT_DOUBLE_EQ(c.corrected_us(kKey, 150), 300);
	EXPECT_DOUBLE_EQ(s->mean_abs_error_us, 100);
	EXPECT_DOUBLE_EQ(s->mean_abs_error_corrected_us, 100.0 / 10);
}

// r = the median of the last nine ratios: of two, their mean; of three, the middle one.
TEST(Calibration, MedianOfTheLastRatios)
{
	ASSERT_EQ(Calibration::kWindow, 9u);
	Calibration c;
	c.record(kKey, 100, 100);
	c.record(kKey, 100, 200);
	EXPECT_DOUBLE_EQ(c.correction(kKey), 1.5);
	c.record(kKey, 100, 120);
	EXPECT_DOUBLE_EQ(c.correction(kKey), 1.2);
	// Nine ratios fill the window; the tenth pushes out the first.
	Calibration w;
	for (double ratio : {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8})
		w.record(kKey, 100, 100 * ratio);
	EXPECT_DOUBLE_EQ(w.correction(kKey), 1.4);
	w.record(kKey, 100, 190);
	EXPECT_DOUBLE_EQ(w.correction(kKey), 1.5);
}

// A run's first phase (connections set up) or a phase that waited on a 200 ms RTO moves the
// factor of a 1 ms phase by nothing, where an average (alpha 0.2) would have put it at the clamp
// for the next dozen phases: the 4+4 1 KB all-to-all of session 11 predicted +174 % that way.
TEST(Calibration, SingleOutliersDoNotMoveTheFactor)
{
	Calibration c;
	c.record(kKey, 1000, 9000); // the first phase of the run: 9x
	c.record(kKey, 1000, 1200);
	c.record(kKey, 1000, 1100);
	EXPECT_DOUBLE_EQ(c.correction(kKey), 1.2);
	for (int i = 0; i < 10; ++i)
		c.record(kKey, 1000, i == 5 ? 201000 : 1100); // one RTO among them
	EXPECT_DOUBLE_EQ(c.correction(kKey), 1.1);
	EXPECT_DOUBLE_EQ(c.stats(kKey)->ratio_median, 1.1);
	// Four of nine can be stalls; five are the key's new normal.
	for (int i = 0; i < 5; ++i)
		c.record(kKey, 1000, 2500);
	EXPECT_DOUBLE_EQ(c.correction(kKey), 2.5);
}

// A quiet summary stands for the phases it sums up: the median is over phases. Eight hinted
// phases at 3x (the ones that reach the daemon pay for the hint: 1.4-1.8x the benchmark's
// median at 1 KB) against one summary of 40 phases at 1.2x: 1.2, where a median over samples
// would say 3. Their errors weigh as many phases too.
TEST(Calibration, ASummaryWeighsAsManyPhasesAsItStandsFor)
{
	Calibration c;
	for (int i = 0; i < 8; ++i)
		c.record(kKey, 100, 300);
	EXPECT_DOUBLE_EQ(c.correction(kKey), 3.0);
	ASSERT_TRUE(c.record(kKey, 100, 120, 40));
	EXPECT_DOUBLE_EQ(c.correction(kKey), 1.2);
	EXPECT_EQ(c.stats(kKey)->samples, 48u);
	EXPECT_DOUBLE_EQ(c.stats(kKey)->mean_abs_error_us, (8 * 200.0 + 40 * 20.0) / 48);
	// Exactly half the weight on each side: the mean of the two ratios around it.
	Calibration h;
	h.record(kKey, 100, 100, 3);
	h.record(kKey, 100, 200, 3);
	EXPECT_DOUBLE_EQ(h.correction(kKey), 1.5);
	// The window is nine samples, whatever their weight: the summary leaves after nine more.
	for (int i = 0; i < 9; ++i)
		c.record(kKey, 100, 250);
	EXPECT_DOUBLE_EQ(c.correction(kKey), 2.5);
}

// The factor is clamped to [0.5, 3]; the median itself is kept unclamped.
TEST(Calibration, CorrectionIsClamped)
{
	Calibration c;
	const CalibrationKey slow{1, 20, 8}, fast{1, 21, 8};
	c.record(slow, 100, 100000); // an RTO the model did not predict
	c.record(fast, 100, 10);
	EXPECT_DOUBLE_EQ(c.correction(slow), kMaxCorrection);
	EXPECT_DOUBLE_EQ(c.stats(slow)->ratio_median, 1000);
	EXPECT_DOUBLE_EQ(c.correction(fast), kMinCorrection);
}

// measured / predicted needs two finite times > 0, and a sample at least one phase.
TEST(Calibration, RefusesMeaninglessSamples)
{
	Calibration c;
	EXPECT_FALSE(c.record(kKey, 0, 100));
	EXPECT_FALSE(c.record(kKey, 100, -1));
	EXPECT_FALSE(c.record(kKey, std::numeric_limits<double>::quiet_NaN(), 100));
	EXPECT_FALSE(c.record(kKey, 100, std::numeric_limits<double>::infinity()));
	EXPECT_FALSE(c.record(kKey, 100, 100, 0)) << "a sample stands for at least one phase";
	EXPECT_EQ(c.size(), 0u);
}

// Keys differ by kind, size class and P; beyond max_keys the least recently updated goes.
TEST(Calibration, BoundedByLeastRecentlyUpdated)
{
	Calibration c(2);
	const CalibrationKey a{1, 10, 4}, b{1, 10, 8}, d{2, 10, 4};
	c.record(a, 100, 150);
	c.record(b, 100, 250);
	c.record(a, 100, 150); // a is now the most recent
	c.record(d, 100, 50);
	EXPECT_EQ(c.size(), 2u);
	EXPECT_TRUE(c.stats(a));
	EXPECT_FALSE(c.stats(b));
	EXPECT_DOUBLE_EQ(c.correction(d), 0.5);
	EXPECT_DOUBLE_EQ(c.correction(a), 1.5);
}

} // namespace
} // namespace gp::models
