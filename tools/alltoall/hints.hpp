// Phase hints to gappace through libgapctl (libctl/include/gapctl.h): the benchmark announces
// each all-to-all iteration (or the whole run) like an MPI runtime with the PMPI shim would.
//
// The handle is opened with GAPCTL_OPEN_NO_THREAD: gp-alltoall stays one thread, and a hint is
// one non-blocking send from the loop (dropped and counted when nobody listens).
// Algorithm: PAIRWISE for pairwise, RING for ring, and PAIRWISE for half as well: half is the
// rotated pairwise exchange restricted to the other side (one partner per phase), and its
// peers are exactly the connections that cross the bottleneck.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gapctl.h"
#include "mesh.hpp"
#include "result.hpp"
#include "schedule.hpp"
#include "types.hpp"

namespace gp::alltoall {

class PhaseHints {
public:
	PhaseHints() = default; // no hints
	// mode None: no handle. Failure to open: `warning` says why and hints stay off.
	static PhaseHints open(HintMode mode, std::string &warning);

	// The phase every hint describes: kind ALLTOALL, this rank's data connections to the
	// schedule's peers as TCP 4-tuples (resolved once here, not per hint).
	void describe(Pattern pattern, int rank, int ranks, uint64_t msg, uint64_t iterations,
		      const std::vector<PeerLink> &links, const Schedule &schedule);

	void run_begin();
	void iteration_begin();
	void iteration_end(uint64_t duration_ns);
	void run_end(uint64_t duration_ns);
	// The run stopped early (timeout): ends the phase still open, so that the daemon does not
	// keep its settings until its own phase timeout.
	void end_open_phase(uint64_t duration_ns) { end(duration_ns); }

	HintStats stats() const;
	// A rejected hint (bad arguments: a bug here, not the daemon's absence), once.
	const std::string &warning() const { return warning_; }

private:
	void begin();
	void end(uint64_t duration_ns);

	struct Closer {
		void operator()(gapctl_t *handle) const { gapctl_close(handle); }
	};
	std::unique_ptr<gapctl_t, Closer> handle_;
	HintMode mode_ = HintMode::None;
	std::vector<gapctl_peer> peers_;
	gapctl_phase phase_{};
	uint64_t phase_id_ = 0;
	std::string warning_;
};

} // namespace gp::alltoall
