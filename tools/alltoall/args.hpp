// gp-alltoall's command line, parsed into Options. Every run is bounded by --timeout, and its
// setup (rendezvous and mesh) by --setup-timeout as well.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "endpoint.hpp"
#include "expected.hpp"
#include "types.hpp"

namespace gp::alltoall {

inline constexpr int kMaxRanks = 512;			    // fds: rank 0 holds about 2P sockets
inline constexpr uint64_t kMaxIterations = 100000;	    // per-iteration samples travel to rank 0
inline constexpr uint64_t kMaxMessageBytes = 1ULL << 30;
inline constexpr uint64_t kMaxBufferBytes = 1ULL << 30; // the kernel clamps far below anyway
inline constexpr double kDefaultTimeoutSeconds = 120;
inline constexpr double kDefaultSetupTimeoutSeconds = 30;
inline constexpr uint64_t kDefaultStallMs = 100;
inline constexpr size_t kMaxCongestionControlName = 15; // TCP_CA_NAME_MAX - 1

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1; // runtime failure or timeout
inline constexpr int kExitUsage = 2;

struct Options {
	int rank = 0;
	int ranks = 0;
	Endpoint rendezvous; // rank 0 listens here; everyone connects to it
	Endpoint bind;	     // this rank's address on the test network (port 0)
	uint64_t msg = 0;    // bytes one rank sends to one peer per iteration
	// Exactly one of the two: --volume is the total all ranks send together.
	std::optional<uint64_t> volume;
	std::optional<uint64_t> iterations;
	Pattern pattern = Pattern::Pairwise;
	Side side = Side::None;
	std::optional<uint64_t> capacity_bps; // bottleneck rate per direction
	double timeout_seconds = kDefaultTimeoutSeconds;
	double setup_timeout_seconds = kDefaultSetupTimeoutSeconds;
	uint64_t stall_ms = kDefaultStallMs;
	// Unmeasured iterations before the start barrier: a new connection's first segments are
	// neither paced nor in steady state, and MPI benchmarks warm up the same way.
	uint64_t warmup = 1;
	HintMode hints = HintMode::None;
	std::optional<uint64_t> sndbuf;
	std::optional<uint64_t> rcvbuf;
	// SO_MAX_PACING_RATE of every data connection, bit/s: the remedy a user can apply by hand.
	std::optional<uint64_t> pacing_rate_bps;
	std::optional<std::string> cc;
	std::optional<std::string> out;
	bool verify = true;
	// Per iteration: the data sockets' retransmissions (tcpi_total_retrans read at every
	// iteration's end), reported with each iteration's slowest rank. Off by default: the reads
	// cost a few microseconds per peer, which 1 KB iterations would notice.
	bool trace_iterations = false;
	// Idle milliseconds between measured iterations (the computation between an application's
	// collectives): a daemon's settings linger only so long after a phase. Iteration times
	// and the bandwidth leave it out; the warm-up iterations have none.
	uint64_t think_ms = 0;
	bool help = false;
};

std::string usage_text();

// argv[0] is the program. Errors are usage errors (exit 2).
Expected<Options> parse_arguments(int argc, char *const argv[]);

} // namespace gp::alltoall
