// Latency fluctuation and fan-in (Niinomi; Documentation/models.md, "Latency fluctuation").
//
// With latencies X ~ N(mu, sigma^2), a receiver that needs the messages of P-1 contributors
// completes with the slowest of them, so the latency a model should use grows with the fan-in.
// Our definition (derived in models.md): in a sequence of collective phases a contributor sends
// when its own previous message arrived, so its arrival deviates from the schedule by two
// independent latency deviations, D_i = (Y_i - mu) + (X_i - mu) ~ N(0, 2 sigma^2). The
// representative latency is the expected completion:
//     l_P = mu + E[max(D_1 .. D_{P-1})] = mu + sqrt(2) e_{P-1} sigma,
// with e_n = E[max of n iid N(0,1)] (e_1 = 0, e_2 = 1/sqrt(pi), e_3 = 3/(2 sqrt(pi))).
// P = 2 gives mu; P = 3 gives mu + 0.798 sigma (Niinomi reports 0.76 sigma; models.md discusses
// the difference).
#pragma once

#include <cstdint>

namespace gp::models {

// e_n = E[max(Z_1 .. Z_n)] for iid Z_i ~ N(0,1), by Simpson's rule on
//   e_n = integral of x * n phi(x) Phi(x)^(n-1) dx over [-12, 12]
// (phi, Phi: the standard normal density and distribution; Phi via std::erfc). Accurate to about
// 1e-9 for n up to 2^24 (larger n are clamped to it). e_0 is defined as 0: nobody to wait for.
double expected_max_std_normal(uint64_t n);

// E[(Z)+] for Z ~ N(0,1): 1 / sqrt(2 pi) = 0.3989. The expected excess over mu of one latency,
// i.e. what a 2-process exchange modelled with mu waits on average beyond it (in sigma).
double expected_excess_sigma();

// (l_P - mu) / sigma = sqrt(2) e_{P-1}: the representative latency's distance above the mean, in
// standard deviations, for a receiver with P-1 contributors. 0 for P <= 2.
double representative_excess_sigma(uint64_t processes);

// l_P = mu + sqrt(2) e_{P-1} sigma.
double representative_latency_us(double mean_us, double sigma_us, uint64_t processes);

// A minimum RTO for the connections of a P-process phase: the representative RTT plus a margin,
// never below the delayed-ACK limit (a receiver that holds its ACK up to that long would
// otherwise trigger a spurious retransmission):
//   floor = max(rtt_mean + sqrt(2) e_{P-1} rtt_sigma + margin, delack_limit).
double rto_floor_us(double rtt_mean_us, double rtt_sigma_us, uint64_t processes, double margin_us,
		    double delack_limit_us);

} // namespace gp::models
