#include "member.hpp"

#include <sys/epoll.h>

#include <cerrno>

namespace gp::alltoall {

Expected<std::unique_ptr<Member>> Member::connect(EventLoop &loop, const Options &options, const Deadline &deadline)
{
	auto fd = connect_with_retry(options.rendezvous, options.bind, deadline);
	if (!fd)
		return make_error(fd.error().err, "rendezvous with rank 0: " + fd.error().message);
	std::unique_ptr<Member> member(new Member(loop, std::move(*fd)));
	Member *raw = member.get();
	auto id = loop.add(raw->channel_.fd(), EPOLLIN | EPOLLOUT | EPOLLRDHUP,
			   [raw](uint32_t events) { return raw->on_event(events); });
	if (!id)
		return id.error();
	member->id_ = *id;
	return member;
}

Member::~Member() { loop_.remove(id_); }

void Member::abort(const std::string &reason)
{
	if (channel_.closed())
		return;
	(void)channel_.send(encode_abort(reason));
	channel_.drain(Deadline::after(0.2));
}

Expected<void> Member::on_event(uint32_t events)
{
	// Read before writing: when rank 0 aborts and exits, its ABORT is in our receive queue and
	// a write would only report the reset that followed it.
	std::vector<Frame> frames;
	auto received = channel_.receive(frames);
	for (const Frame &frame : frames)
		if (auto ok = on_frame(frame); !ok)
			return ok;
	if (!received)
		return make_error(received.error().err, "rendezvous with rank 0: " + received.error().message);
	if (channel_.closed()) {
		loop_.remove(id_);
		if (!done_)
			return make_error(ECONNRESET, "rank 0 closed the rendezvous connection (it failed or was killed)");
		return {};
	}
	if (events & EPOLLOUT)
		if (auto ok = channel_.flush(); !ok)
			return make_error(ok.error().err, "rendezvous with rank 0: " + ok.error().message);
	return {};
}

Expected<void> Member::on_frame(const Frame &frame)
{
	switch (frame.type) {
	case MessageType::Table: {
		if (table_)
			return make_error(EPROTO, "rendezvous protocol: a second TABLE");
		auto table = decode_table(frame);
		if (!table)
			return table.error();
		table_ = std::move(*table);
		return {};
	}
	case MessageType::Start:
		if (!table_)
			return make_error(EPROTO, "rendezvous protocol: START before TABLE");
		started_ = true;
		return {};
	case MessageType::Stop:
		stop_requested_ = true;
		return {};
	case MessageType::Done:
		done_ = true;
		return {};
	case MessageType::Abort: {
		auto reason = decode_abort(frame);
		return make_error(ECONNABORTED, "run aborted: " + (reason ? *reason : std::string("(no reason)")));
	}
	default:
		return make_error(EPROTO, "rendezvous protocol: unexpected message type " +
						  std::to_string(static_cast<int>(frame.type)) + " from rank 0");
	}
}

} // namespace gp::alltoall
