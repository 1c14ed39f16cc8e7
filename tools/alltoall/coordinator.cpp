#include "coordinator.hpp"

#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cerrno>

#include "schedule.hpp"

namespace gp::alltoall {

Expected<std::unique_ptr<Coordinator>> Coordinator::listen(EventLoop &loop, const Options &options)
{
	// SO_REUSEADDR: back-to-back runs reuse the port while the last one's connections linger.
	auto listener = listen_on(options.rendezvous, options.ranks, true, nullptr);
	if (!listener)
		return make_error(listener.error().err, "rendezvous listener: " + listener.error().message);
	std::unique_ptr<Coordinator> coordinator(new Coordinator(loop, options, std::move(*listener)));
	Coordinator *raw = coordinator.get();
	auto id = loop.add(raw->listener_.get(), EPOLLIN, [raw](uint32_t) { return raw->accept_all(); });
	if (!id)
		return id.error();
	coordinator->listener_id_ = *id;
	return coordinator;
}

Coordinator::Coordinator(EventLoop &loop, const Options &options, UniqueFd listener)
	: loop_(loop), options_(options), listener_(std::move(listener)),
	  announces_(static_cast<size_t>(options.ranks)), results_(static_cast<size_t>(options.ranks))
{
}

Coordinator::~Coordinator()
{
	// Rank 0 is about to exit: its last words (DONE, STOP) must arrive before the reset that
	// closing a connection with unread input causes. Bounded, usually immediate.
	const auto deadline = Deadline::after(0.3);
	for (auto &peer : peers_)
		if (!peer->channel->closed())
			peer->channel->drain(deadline);
	loop_.remove(listener_id_);
	for (auto &peer : peers_)
		loop_.remove(peer->id);
}

Expected<void> Coordinator::accept_all()
{
	for (;;) {
		UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
		if (!fd) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return {};
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return fail(system_error("accept on the rendezvous listener").message);
		}
		auto peer = std::make_unique<Peer>();
		peer->channel = std::make_unique<Channel>(std::move(fd));
		Peer *raw = peer.get();
		auto id = loop_.add(raw->channel->fd(), EPOLLIN | EPOLLOUT | EPOLLRDHUP,
				    [this, raw](uint32_t events) { return on_peer(*raw, events); });
		if (!id)
			return id.error();
		raw->id = *id;
		peers_.push_back(std::move(peer));
	}
}

Expected<void> Coordinator::on_peer(Peer &peer, uint32_t events)
{
	const std::string who = peer.rank >= 0 ? "rank " + std::to_string(peer.rank) : "an unannounced rank";
	// Read before writing: a failing rank's ABORT (its reason) comes before its reset.
	std::vector<Frame> frames;
	auto received = peer.channel->receive(frames);
	for (const Frame &frame : frames)
		if (auto ok = on_frame(peer, frame); !ok)
			return ok;
	if (received && !peer.channel->closed()) {
		if (events & EPOLLOUT)
			if (auto ok = peer.channel->flush(); !ok && !done_sent_ && !aborted_)
				return fail(who + ": " + ok.error().message);
		return {};
	}
	loop_.remove(peer.id);
	// After DONE ranks leave; before it, a rank that goes away takes the run with it. A
	// connection that never announced is not a rank (yet): forget it.
	if (done_sent_ || aborted_ || peer.rank < 0)
		return {};
	if (!received)
		return fail(who + ": " + received.error().message);
	return fail(who + " closed its rendezvous connection (it failed or was killed)");
}

Expected<void> Coordinator::on_frame(Peer &peer, const Frame &frame)
{
	const std::string who = peer.rank >= 0 ? "rank " + std::to_string(peer.rank) : "an unannounced rank";
	switch (frame.type) {
	case MessageType::Announce: {
		if (peer.rank >= 0)
			return fail(who + " announced itself twice");
		auto announce = decode_announce(frame);
		if (!announce)
			return fail(announce.error().message);
		return on_announce(peer, *announce);
	}
	case MessageType::Ready:
		if (peer.rank < 0 || !table_ || peer.ready)
			return fail(who + ": READY out of order");
		peer.ready = true;
		if (++ready_ == static_cast<size_t>(options_.ranks) && !start_sent_ && !stop_sent_) {
			broadcast(empty_frame(MessageType::Start));
			start_sent_ = true;
		}
		return {};
	case MessageType::Result: {
		auto result = decode_result(frame);
		if (!result)
			return fail(who + ": " + result.error().message);
		if (peer.rank < 0 || !start_sent_ || result->rank != static_cast<uint32_t>(peer.rank) ||
		    results_[peer.rank])
			return fail(who + ": RESULT out of order");
		results_[peer.rank] = std::move(*result);
		finish_if_complete();
		return {};
	}
	case MessageType::Abort: {
		auto reason = decode_abort(frame);
		return fail(who + ": " + (reason ? *reason : std::string("(no reason)")));
	}
	default:
		return fail(who + ": unexpected message type " + std::to_string(static_cast<int>(frame.type)));
	}
}

Expected<void> Coordinator::on_announce(Peer &peer, const Announce &a)
{
	const std::string who = "rank " + std::to_string(a.rank);
	if (a.ranks != static_cast<uint32_t>(options_.ranks))
		return fail(who + " was started with --ranks " + std::to_string(a.ranks) + ", rank 0 with " +
			    std::to_string(options_.ranks));
	if (a.rank >= static_cast<uint32_t>(options_.ranks))
		return fail("a rank announced itself as " + std::to_string(a.rank) + " of " + std::to_string(options_.ranks));
	if (announces_[a.rank])
		return fail("two processes announced themselves as " + who);
	// Every rank must run the same shape, or the iteration counts would not match up and the
	// run would hang until the timeout instead of failing here.
	if (a.msg != options_.msg)
		return fail(who + " has --msg " + std::to_string(a.msg) + ", rank 0 " + std::to_string(options_.msg));
	if (a.volume != options_.volume.value_or(0) || a.iterations != options_.iterations.value_or(0))
		return fail(who + " has a different --volume/--iterations than rank 0");
	if (a.pattern != options_.pattern)
		return fail(who + " has --pattern " + std::string(pattern_name(a.pattern)) + ", rank 0 " +
			    std::string(pattern_name(options_.pattern)));
	if (a.data.family != options_.bind.family)
		return fail(who + " listens on " + format_endpoint(a.data) + ", another address family than rank 0");
	peer.rank = static_cast<int>(a.rank);
	announces_[a.rank] = a;
	if (++announced_ == static_cast<size_t>(options_.ranks))
		return send_table();
	return {};
}

Expected<void> Coordinator::send_table()
{
	Table table;
	std::vector<Side> sides;
	for (const auto &a : announces_) {
		table.ranks.push_back(RankInfo{a->data, a->side, a->netns_inode});
		sides.push_back(a->side);
	}
	if (options_.pattern == Pattern::Half) {
		// Only rank 0 checks: everyone gets one clear message rather than P schedule errors.
		auto schedule = make_schedule(Pattern::Half, 0, sides);
		if (!schedule)
			return fail(schedule.error().message);
	}
	if (options_.iterations) {
		table.iterations = *options_.iterations;
	} else {
		const auto plan = plan_iterations(*options_.volume, options_.msg, data_pairs(options_.pattern, sides));
		table.iterations = plan.iterations;
		table.iterations_capped = plan.capped;
	}
	// Tags this run's data connections (the hello), so that a stray one is refused.
	if (::getrandom(&table.session, sizeof(table.session), 0) != sizeof(table.session))
		table.session = monotonic_ns();
	table.session |= 1;
	broadcast(encode_table(table));
	table_ = std::move(table);
	// No more ranks can come: later connection attempts are refused by the kernel.
	loop_.remove(listener_id_);
	listener_.reset();
	return {};
}

void Coordinator::broadcast(const Frame &frame)
{
	// ABORT and STOP reach connections that have not announced themselves (yet), too: they
	// are ranks in setup, e.g. the very rank whose ANNOUNCE was just refused.
	const bool everyone = frame.type == MessageType::Abort || frame.type == MessageType::Stop;
	// A rank whose connection fails here is noticed by its handler (EOF/error) right after.
	for (auto &peer : peers_)
		if ((everyone || peer->rank >= 0) && !peer->channel->closed())
			(void)peer->channel->send(frame);
}

void Coordinator::finish_if_complete()
{
	if (done_sent_ || !start_sent_)
		return;
	for (const auto &result : results_)
		if (!result)
			return;
	broadcast(empty_frame(MessageType::Done));
	done_sent_ = true;
}

void Coordinator::stop_all()
{
	if (stop_sent_ || done_sent_ || aborted_)
		return;
	broadcast(empty_frame(MessageType::Stop));
	stop_sent_ = true;
	if (!start_sent_)
		done_sent_ = true; // nothing was measured: nothing to wait for
}

void Coordinator::release_all()
{
	if (done_sent_ || aborted_)
		return;
	broadcast(empty_frame(MessageType::Done));
	done_sent_ = true;
}

void Coordinator::abort_all(const std::string &reason)
{
	if (aborted_)
		return;
	aborted_ = true;
	broadcast(encode_abort(reason));
	const auto deadline = Deadline::after(0.3);
	for (auto &peer : peers_)
		peer->channel->drain(deadline);
}

Error Coordinator::fail(const std::string &reason)
{
	abort_all(reason);
	return make_error(ECONNABORTED, reason);
}

std::vector<int> Coordinator::missing_ranks() const
{
	std::vector<int> missing;
	for (int rank = 0; rank < options_.ranks; ++rank)
		if (start_sent_ ? !results_[rank] : !announces_[rank])
			missing.push_back(rank);
	return missing;
}

} // namespace gp::alltoall
