#include "event_loop.hpp"

#include <sys/epoll.h>

#include <cerrno>

namespace gp::alltoall {

Expected<EventLoop> EventLoop::create()
{
	EventLoop loop;
	loop.epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
	if (!loop.epoll_)
		return system_error("epoll_create1");
	return loop;
}

Expected<EventLoop::Id> EventLoop::add(int fd, uint32_t events, Handler handler)
{
	const Id id = slots_.size();
	epoll_event ev{};
	ev.events = events | EPOLLET;
	ev.data.u64 = id;
	if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0)
		return system_error("epoll_ctl add");
	slots_.push_back(Slot{fd, true, std::move(handler)});
	return id;
}

void EventLoop::remove(Id id)
{
	if (id >= slots_.size() || !slots_[id].active)
		return;
	::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, slots_[id].fd, nullptr);
	slots_[id].active = false;
	// Keep the std::function alive: remove() may be called by the handler itself.
}

Expected<bool> EventLoop::run(const std::function<Expected<Step>()> &step, const Deadline &deadline)
{
	constexpr int kBatch = 64;
	epoll_event events[kBatch];
	for (;;) {
		auto next = step();
		if (!next)
			return next.error();
		if (*next == Step::Finished)
			return true;
		if (deadline.expired())
			return false;
		if (pending_.empty()) {
			const int timeout = *next == Step::Busy ? 0 : deadline.remaining_ms();
			const int n = ::epoll_wait(epoll_.get(), events, kBatch, timeout);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return system_error("epoll_wait");
			}
			pending_.insert(pending_.end(), events, events + n);
		}
		while (!pending_.empty()) {
			const epoll_event event = pending_.front();
			pending_.pop_front();
			const Id id = event.data.u64;
			if (id >= slots_.size() || !slots_[id].active)
				continue; // removed since the event was fetched
			if (auto ok = slots_[id].handler(event.events); !ok)
				return ok.error();
		}
	}
}

} // namespace gp::alltoall
