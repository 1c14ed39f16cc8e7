#include "hints.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace gp::alltoall {

PhaseHints PhaseHints::open(HintMode mode, std::string &warning)
{
	PhaseHints hints;
	if (mode == HintMode::None)
		return hints;
	gapctl_t *handle = nullptr;
	const int err = gapctl_open(&handle, GAPCTL_OPEN_NO_THREAD);
	if (err < 0) {
		warning = std::string("libgapctl: gapctl_open: ") + gapctl_strerror(err) + "; running without hints";
		return hints;
	}
	hints.handle_.reset(handle);
	hints.mode_ = mode;
	return hints;
}

void PhaseHints::describe(Pattern pattern, int rank, int ranks, uint64_t msg, uint64_t iterations,
			  const std::vector<PeerLink> &links, const Schedule &schedule)
{
	peers_.clear();
	for (int peer : schedule.peers) {
		const PeerLink &link = links[peer];
		gapctl_peer p{};
		p.fd = -1; // tuple form: no getsockname/getpeername per hint
		p.family = link.remote.family;
		std::memcpy(p.addr, link.remote.address.data(), link.remote.address_size());
		std::memcpy(p.local_addr, link.local.address.data(), link.local.address_size());
		p.port = link.remote.port;
		p.local_port = link.local.port;
		p.rank = peer;
		peers_.push_back(p);
	}
	phase_ = gapctl_phase{};
	phase_.struct_size = sizeof(gapctl_phase);
	phase_.kind = GAPCTL_KIND_ALLTOALL;
	// The phase order is pairwise or ring, but no send waits for the one before it to be
	// received: with socket buffers that hold a message, every phase is in flight at once.
	// That is what the planner needs to know (how many connections one rank drives into a
	// bottleneck at once), and it is the `linear` algorithm's concurrency.
	(void)pattern;
	phase_.algorithm = GAPCTL_ALGORITHM_LINEAR;
	phase_.flags = 0;
	phase_.bytes_per_peer = msg;
	phase_.comm_size = static_cast<uint32_t>(ranks);
	phase_.rank = rank;
	phase_.repetitions = static_cast<uint32_t>(iterations);
	phase_.n_peers = static_cast<uint32_t>(peers_.size());
	phase_.peers = peers_.data();
}

void PhaseHints::begin()
{
	if (!handle_)
		return;
	uint64_t id = 0;
	const int err = gapctl_phase_begin(handle_.get(), &phase_, &id);
	// -E2BIG still sent the first GAPCTL_MAX_PEERS peers and gave an id.
	if (err < 0 && err != -E2BIG) {
		if (warning_.empty())
			warning_ = std::string("libgapctl: gapctl_phase_begin: ") + gapctl_strerror(err);
		phase_id_ = 0;
		return;
	}
	phase_id_ = id;
}

void PhaseHints::end(uint64_t duration_ns)
{
	if (!handle_ || phase_id_ == 0)
		return;
	const int err = gapctl_phase_end(handle_.get(), phase_id_, duration_ns);
	if (err < 0 && warning_.empty())
		warning_ = std::string("libgapctl: gapctl_phase_end: ") + gapctl_strerror(err);
	phase_id_ = 0;
}

void PhaseHints::run_begin()
{
	if (mode_ == HintMode::Once)
		begin();
}

void PhaseHints::iteration_begin()
{
	if (mode_ == HintMode::Iteration)
		begin();
}

void PhaseHints::iteration_end(uint64_t duration_ns)
{
	if (mode_ == HintMode::Iteration)
		end(duration_ns);
}

void PhaseHints::run_end(uint64_t duration_ns)
{
	if (mode_ == HintMode::Once)
		end(duration_ns);
}

HintStats PhaseHints::stats() const
{
	HintStats stats;
	if (!handle_)
		return stats;
	gapctl_stats s{};
	s.struct_size = sizeof(s);
	if (gapctl_get_stats(handle_.get(), &s) < 0)
		return stats;
	stats.open = true;
	stats.queued = s.hints_queued;
	stats.sent = s.hints_sent;
	stats.dropped = s.hints_dropped;
	stats.rejected = s.hints_rejected;
	return stats;
}

} // namespace gp::alltoall
