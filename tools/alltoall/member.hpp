// The rendezvous client every rank runs, rank 0 included: rank 0 reaches its own coordinator
// over TCP like everyone else, so that one code path (and one event loop) serves all ranks.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "args.hpp"
#include "channel.hpp"
#include "event_loop.hpp"
#include "wire.hpp"

namespace gp::alltoall {

class Member {
public:
	// Connects to --rendezvous (retrying while rank 0 is not up yet, until the deadline) and
	// registers with the loop.
	static Expected<std::unique_ptr<Member>> connect(EventLoop &loop, const Options &options,
							 const Deadline &deadline);
	Member(const Member &) = delete;
	Member &operator=(const Member &) = delete;
	~Member();

	Expected<void> send(const Frame &frame) { return channel_.send(frame); }
	// Tells rank 0 why this rank gives up, waiting at most a moment for the bytes to leave.
	void abort(const std::string &reason);
	// Waits (bounded) until queued output, e.g. a large RESULT, is written.
	void drain(const Deadline &deadline) { channel_.drain(deadline); }

	const std::optional<Table> &table() const { return table_; }
	bool started() const { return started_; }
	bool stop_requested() const { return stop_requested_; }
	bool done() const { return done_; }

private:
	Member(EventLoop &loop, UniqueFd fd) : loop_(loop), channel_(std::move(fd)) {}
	Expected<void> on_event(uint32_t events);
	Expected<void> on_frame(const Frame &frame);

	EventLoop &loop_;
	Channel channel_;
	EventLoop::Id id_ = 0;
	std::optional<Table> table_;
	bool started_ = false;
	bool stop_requested_ = false;
	bool done_ = false;
};

} // namespace gp::alltoall
