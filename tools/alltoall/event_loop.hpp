// One epoll set for everything a rank waits on (rendezvous connections, data sockets, listeners):
// the tool is single-threaded, so rank 0's coordinator, its own rendezvous client and its data
// exchange all progress in this one loop.
#pragma once
#include <sys/epoll.h>

#include <cstdint>
#include <deque>
#include <functional>

#include "expected.hpp"
#include "net.hpp"
#include "unique_fd.hpp"

namespace gp::alltoall {

// What the per-wakeup step asks the loop to do next.
enum class Step {
	Wait,	  // nothing to do until an event
	Busy,	  // more work pending: look for events without sleeping, then call again
	Finished, // the goal of this run() is reached
};

class EventLoop {
public:
	using Handler = std::function<Expected<void>(uint32_t events)>;
	using Id = uint64_t;

	static Expected<EventLoop> create();

	// Registers fd for `events` (EPOLLET is added: handlers drain until EAGAIN).
	Expected<Id> add(int fd, uint32_t events, Handler handler);
	// Safe from inside a handler; the fd stays open (its owner closes it).
	void remove(Id id);

	// Calls step(), waits for events (not past the deadline), dispatches them, and again, until
	// step() says Finished (true) or the deadline passed (false). A handler's or step's error
	// ends the run with that error.
	Expected<bool> run(const std::function<Expected<Step>()> &step, const Deadline &deadline);

private:
	struct Slot {
		int fd = -1;
		bool active = false;
		Handler handler;
	};
	UniqueFd epoll_;
	std::deque<Slot> slots_; // a deque: handlers may add slots while one of them runs
	// Events fetched but not dispatched yet. Edge-triggered events are reported once: when a
	// handler's error ends run() mid-batch, the rest of the batch waits here for the next run()
	// (e.g. the ABORT that explains why a data connection just broke).
	std::deque<epoll_event> pending_;
};

} // namespace gp::alltoall
