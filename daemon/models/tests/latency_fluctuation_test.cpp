// Latency fluctuation and fan-in (Niinomi; Documentation/models.md, "Latency fluctuation").
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "latency_fluctuation.hpp"

namespace gp::models {
namespace {

// e_n = E[max of n iid N(0,1)] has closed forms for n <= 3: e_1 = 0, e_2 = 1/sqrt(pi),
// e_3 = 3 / (2 sqrt(pi)); e_4 = 1.0293753730 (tabulated, e.g. Harter 1961). The quadrature must
// match to 1e-9: any tolerance in the Niinomi test below is the model's, not the numerics'.
TEST(LatencyFluctuation, ExpectedMaximumOfStandardNormals)
{
	const double sqrt_pi = std::sqrt(std::numbers::pi);
	EXPECT_EQ(expected_max_std_normal(0), 0);
	EXPECT_NEAR(expected_max_std_normal(1), 0, 1e-12);
	EXPECT_NEAR(expected_max_std_normal(2), 1 / sqrt_pi, 1e-9);
	EXPECT_NEAR(expected_max_std_normal(3), 3 / (2 * sqrt_pi), 1e-9);
	EXPECT_NEAR(expected_max_std_normal(4), 1.0293753730, 1e-9);
	// Growing, ever more slowly, with n (about sqrt(2 ln n) for large n).
	double previous = 0;
	for (uint64_t n = 2; n <= (uint64_t{1} << 20); n *= 2) {
		const double e = expected_max_std_normal(n);
		EXPECT_GT(e, previous) << n;
		EXPECT_LT(e, std::sqrt(2 * std::log(static_cast<double>(n)))) << n;
		previous = e;
	}
}

// Niinomi's 2-processor figure: the expected excess of one latency over mu, E[(X - mu)+] =
// sigma / sqrt(2 pi) = 0.399 sigma ("0.4 sigma").
TEST(LatencyFluctuation, ExpectedExcessForTwoProcessors)
{
	EXPECT_NEAR(expected_excess_sigma(), 0.40, 0.005);
	EXPECT_DOUBLE_EQ(expected_excess_sigma(), 1 / std::sqrt(2 * std::numbers::pi));
}

// Niinomi: the representative latency is mu for 2 processors and mu + 0.76 sigma for 3.
// Ours, l_P = mu + sqrt(2) e_{P-1} sigma (arrival deviations D_i ~ N(0, 2 sigma^2)), gives exactly
// 0 for P = 2 and sqrt(2/pi) = 0.798 for P = 3. The 0.04 tolerance is the documented gap between
// this definition and the paper's figure (models.md lists the alternatives: none reproduces 0.76
// exactly from first principles); it is not numerical slack, which the first test bounds at 1e-9.
TEST(LatencyFluctuation, RepresentativeLatencyReproducesNiinomi)
{
	EXPECT_EQ(representative_excess_sigma(2), 0);
	EXPECT_NEAR(representative_excess_sigma(3), std::sqrt(2 / std::numbers::pi), 1e-9);
	EXPECT_NEAR(representative_excess_sigma(3), 0.76, 0.04);
	// Growing with fan-in.
	double previous = 0;
	for (uint64_t P = 3; P <= 4096; P *= 2) {
		EXPECT_GT(representative_excess_sigma(P), previous) << P;
		previous = representative_excess_sigma(P);
	}
	EXPECT_DOUBLE_EQ(representative_latency_us(100, 10, 2), 100);
	EXPECT_NEAR(representative_latency_us(100, 10, 3), 100 + 10 * std::sqrt(2 / std::numbers::pi), 1e-8);
}

// floor = max(rtt_mean + sqrt(2) e_{P-1} rtt_sigma + margin, delack_limit).
TEST(LatencyFluctuation, RtoFloor)
{
	// A fast path: the delayed-ACK limit decides.
	EXPECT_DOUBLE_EQ(rto_floor_us(90, 12, 16, 1000, 4000), 4000);
	// A slow, jittery path: the representative RTT plus margin decides, and grows with P.
	const double p3 = rto_floor_us(3000, 800, 3, 1000, 4000);
	EXPECT_NEAR(p3, 3000 + 800 * std::sqrt(2 / std::numbers::pi) + 1000, 1e-6);
	EXPECT_GT(rto_floor_us(3000, 800, 64, 1000, 4000), p3);
	EXPECT_DOUBLE_EQ(rto_floor_us(3000, 800, 2, 1000, 0), 4000);
}

} // namespace
} // namespace gp::models
