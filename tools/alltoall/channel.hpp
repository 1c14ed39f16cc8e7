// A rendezvous connection: non-blocking TCP carrying frames (wire.hpp) both ways. Output is
// queued and written as the socket takes it, so a large RESULT never blocks the loop.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "event_loop.hpp"
#include "expected.hpp"
#include "net.hpp"
#include "unique_fd.hpp"
#include "wire.hpp"

namespace gp::alltoall {

class Channel {
public:
	explicit Channel(UniqueFd fd);

	int fd() const { return fd_.get(); }
	bool closed() const { return closed_; } // the peer closed its end (EOF seen)

	// Reads what the socket has and appends the complete frames to `frames`. EOF sets closed();
	// errors are returned (a reset connection is an error).
	Expected<void> receive(std::vector<Frame> &frames);
	// Queues the frame and writes what the socket takes now; the rest goes out in flush().
	Expected<void> send(const Frame &frame);
	// Writes queued output (call on EPOLLOUT).
	Expected<void> flush();
	bool idle() const { return output_.size() == output_sent_; }
	// Last words before exit: waits (bounded) until the queue is written and acknowledged.
	void drain(const Deadline &deadline);

private:
	UniqueFd fd_;
	FrameParser parser_;
	std::vector<uint8_t> output_;
	size_t output_sent_ = 0;
	bool closed_ = false;
};

} // namespace gp::alltoall
