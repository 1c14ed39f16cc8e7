#include "channel.hpp"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <thread>

#include <cerrno>

namespace gp::alltoall {

Expected<void> Channel::receive(std::vector<Frame> &frames)
{
	uint8_t buffer[16384];
	std::optional<Error> failure;
	while (!closed_) {
		const ssize_t n = ::recv(fd_.get(), buffer, sizeof(buffer), 0);
		if (n > 0) {
			parser_.feed(std::span<const uint8_t>(buffer, static_cast<size_t>(n)));
			continue;
		}
		if (n == 0) {
			closed_ = true;
			break;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		if (errno == EINTR)
			continue;
		// A reset after the last words: what arrived before it (an ABORT and its reason) is
		// still handed out below, the error after it.
		failure = system_error("rendezvous connection");
		break;
	}
	for (;;) {
		auto frame = parser_.next();
		if (!frame)
			return frame.error();
		if (!*frame)
			break;
		frames.push_back(std::move(**frame));
	}
	if (failure)
		return *failure;
	return {};
}

Expected<void> Channel::send(const Frame &frame)
{
	const auto bytes = encode_frame(frame);
	if (idle()) {
		output_.clear();
		output_sent_ = 0;
	}
	output_.insert(output_.end(), bytes.begin(), bytes.end());
	return flush();
}

Expected<void> Channel::flush()
{
	while (!idle()) {
		const ssize_t n = ::send(fd_.get(), output_.data() + output_sent_, output_.size() - output_sent_,
					 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			output_sent_ += static_cast<size_t>(n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return {};
		if (n < 0 && errno == EINTR)
			continue;
		return system_error("rendezvous connection");
	}
	output_.clear();
	output_sent_ = 0;
	return {};
}

Channel::Channel(UniqueFd fd) : fd_(std::move(fd))
{
	// Control messages are small and latency matters (START, STOP, ABORT): no Nagle delay.
	(void)set_int_option(fd_.get(), IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
}

void Channel::drain(const Deadline &deadline)
{
	while (!idle() && !deadline.expired()) {
		if (!flush())
			return;
		if (idle())
			break;
		pollfd p{fd_.get(), POLLOUT, 0};
		if (::poll(&p, 1, deadline.remaining_ms()) <= 0)
			return;
	}
	// Written is not yet delivered: a process that exits with unread input resets its
	// connections, and the reset discards what was not acknowledged yet (an ABORT, its reason).
	int unacknowledged = 0;
	while (!deadline.expired() && ::ioctl(fd_.get(), SIOCOUTQ, &unacknowledged) == 0 && unacknowledged > 0)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
} // namespace gp::alltoall
