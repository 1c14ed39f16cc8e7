// The measured run: every iteration, send m bytes to every peer in phase order and receive m
// bytes from every peer, with no barrier between phases or iterations.
//
// Sends proceed strictly in phase order: a phase's m bytes are written as far as the socket
// takes them (the rest on EPOLLOUT) before the next phase's send begins. Receives are served
// whenever a socket is readable, in any order. With socket buffers larger than m, all of an
// iteration's sends are in flight at once, like MPI eager sends.
//
// Each connection is a byte stream, so receives are counted per connection: a fast peer's bytes
// of iteration k+1 may arrive while this rank is still in iteration k. Iteration k is complete
// for this rank when all its sends of iteration k are written and at least (k+1)·m bytes
// arrived from every peer; iteration k+1 starts right then (as a back-to-back MPI_Alltoall
// would), and its duration is measured from there to its own completion.
//
// Payload: stream byte o from rank s to rank d is P[(o + shift(s,d)) mod 65521], P a fixed
// pseudo-random sequence of prime period. Checking it (unless --no-verify) is one memcmp per
// read, and catches lost, duplicated, reordered and misdirected bytes.
#pragma once
#include <cstdint>
#include <vector>

#include "event_loop.hpp"
#include "expected.hpp"
#include "hints.hpp"
#include "mesh.hpp"
#include "result.hpp"
#include "schedule.hpp"

namespace gp::alltoall {

struct ExchangeShape {
	int rank = 0;
	int ranks = 0;
	uint64_t msg = 0;
	uint64_t iterations = 0;
	bool verify = true;
	bool trace = false; // record each iteration's retransmissions (Options::trace_iterations)
	// Idle time between one iteration's end and the next one's start (Options::think_ms),
	// like the computation between an application's collectives. Not part of any iteration.
	uint64_t think_ns = 0;
};

class Exchange {
public:
	// links: indexed by peer rank (build_mesh). Only the schedule's peers carry data.
	Exchange(ExchangeShape shape, std::vector<PeerLink> &links, Schedule schedule, PhaseHints &hints);
	Exchange(const Exchange &) = delete;
	Exchange &operator=(const Exchange &) = delete;

	Expected<void> attach(EventLoop &loop);
	// The start barrier passed: iteration 0 begins now.
	void begin();
	// Writes what the sockets take and closes completed iterations; call once per wakeup.
	Expected<Step> pump();
	bool finished() const { return iterations_done_ == shape_.iterations; }
	// End of the run (or stop): no more reading or writing, the clock stops.
	void detach(EventLoop &loop);
	// Bytes, durations, wall time and the sockets' tcp_info.
	void fill(RankResult &result) const;
	// The run ended with an error of a data connection (not of the rendezvous).
	bool failed() const { return failed_; }

private:
	struct Stream {
		PeerLink *link = nullptr;
		uint64_t sent = 0;
		uint64_t received = 0;
		uint64_t send_shift = 0;
		uint64_t recv_shift = 0;
		bool writable = true;
		EventLoop::Id id = 0;
	};

	Expected<void> on_event(Stream &stream, uint32_t events);
	Expected<void> read_all(Stream &stream);
	void start_iteration(uint64_t now);
	// The think timer fired: the next iteration starts.
	Expected<void> on_think_timer();
	// tcpi_total_retrans summed over this rank's data sockets.
	uint64_t sockets_retrans() const;

	ExchangeShape shape_;
	std::vector<PeerLink> &links_;
	Schedule schedule_;
	PhaseHints &hints_;
	std::vector<Stream> streams_; // indexed by peer rank; unused entries have no link
	uint64_t expected_per_peer_ = 0;

	// Send cursor: the current iteration's phase and how much of its message is written.
	size_t phase_ = 0;
	uint64_t phase_written_ = 0;
	bool sends_done_ = false;
	// Peers whose stream has not yet reached (iterations_done_ + 1)·m bytes.
	size_t behind_ = 0;
	uint64_t iterations_done_ = 0;

	uint64_t run_start_ns_ = 0;
	uint64_t iteration_start_ns_ = 0;
	uint64_t run_end_ns_ = 0;
	bool running_ = false;
	std::vector<uint64_t> iteration_ns_;
	uint64_t retrans_seen_ = 0;		  // sockets_retrans() at the last iteration's end
	std::vector<uint32_t> iteration_retrans_; // with shape_.trace: one per completed iteration
	uint64_t bytes_sent_ = 0, bytes_received_ = 0, bytes_cross_sent_ = 0, bytes_cross_received_ = 0;
	bool attached_ = false;
	bool failed_ = false;
	UniqueFd think_timer_; // a timerfd, with shape_.think_ns only
	EventLoop::Id think_id_ = 0;
	bool thinking_ = false;
};

} // namespace gp::alltoall
