#include "mesh.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

namespace gp::alltoall {
namespace {

struct PendingConnection {
	UniqueFd fd;
	int rank = -1; // known for outgoing connections; for incoming once the hello is read
	std::array<uint8_t, kHelloSize> hello{};
	size_t hello_bytes = 0;
	EventLoop::Id id = 0;
};

class MeshBuilder {
public:
	MeshBuilder(EventLoop &loop, int listener, const MeshSetup &setup)
		: loop_(loop), listener_(listener), setup_(setup), ranks_(static_cast<int>(setup.table->ranks.size())),
		  links_(static_cast<size_t>(ranks_))
	{
		missing_ = ranks_ - 1;
	}

	Expected<std::vector<PeerLink>> build(const Deadline &deadline)
	{
		auto listener_id = loop_.add(listener_, EPOLLIN, [this](uint32_t) { return accept_all(); });
		if (!listener_id)
			return listener_id.error();
		for (int peer = setup_.rank + 1; peer < ranks_; ++peer)
			if (auto ok = connect_to(peer); !ok)
				return cleanup(*listener_id, ok.error());
		auto done = loop_.run(
			[this]() -> Expected<Step> {
				if (auto stop = setup_.interrupted ? setup_.interrupted() : std::nullopt)
					return *stop;
				return missing_ == 0 ? Step::Finished : Step::Wait;
			},
			deadline);
		if (!done)
			return cleanup(*listener_id, done.error());
		if (!*done)
			return cleanup(*listener_id, make_error(ETIMEDOUT, "data connections: " + missing_text()));
		// Every handler goes with the builder: none may outlive it in the loop.
		cleanup(*listener_id, {});
		if (auto ok = finish_links(); !ok)
			return ok.error();
		return std::move(links_);
	}

private:
	Error cleanup(EventLoop::Id listener_id, Error error)
	{
		loop_.remove(listener_id);
		for (auto &pending : pending_)
			loop_.remove(pending->id);
		return error;
	}

	std::string missing_text() const
	{
		std::string text = std::to_string(missing_) + " of " + std::to_string(ranks_ - 1) + " missing (ranks";
		for (int peer = 0; peer < ranks_; ++peer)
			if (peer != setup_.rank && !links_[peer].fd)
				text += " " + std::to_string(peer);
		return text + ")";
	}

	Expected<void> connect_to(int peer)
	{
		const auto &to = setup_.table->ranks[peer].data;
		auto fd = start_connect(to, setup_.table->ranks[setup_.rank].data, &setup_.tuning);
		if (!fd)
			return make_error(fd.error().err, "data connection to rank " + std::to_string(peer) + ": " +
								  fd.error().message);
		auto pending = std::make_unique<PendingConnection>();
		pending->fd = std::move(*fd);
		pending->rank = peer;
		PendingConnection *raw = pending.get();
		auto id = loop_.add(raw->fd.get(), EPOLLOUT, [this, raw](uint32_t events) { return on_connected(*raw, events); });
		if (!id)
			return id.error();
		raw->id = *id;
		pending_.push_back(std::move(pending));
		return {};
	}

	Expected<void> on_connected(PendingConnection &c, uint32_t events)
	{
		if (!c.fd)
			return {};
		const int err = pending_socket_error(c.fd.get());
		if (err != 0)
			return make_error(err, "data connection to rank " + std::to_string(c.rank) + " at " +
						       format_endpoint(setup_.table->ranks[c.rank].data) + ": " +
						       std::strerror(err));
		if (!(events & EPOLLOUT))
			return {};
		const auto hello = encode_hello(setup_.session, static_cast<uint32_t>(setup_.rank));
		// A fresh connection's send buffer always takes 16 bytes.
		const ssize_t n = ::send(c.fd.get(), hello.data(), hello.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n != static_cast<ssize_t>(hello.size()))
			return n < 0 ? system_error("hello to rank " + std::to_string(c.rank))
				     : make_error(EIO, "hello to rank " + std::to_string(c.rank) + ": short write");
		return link(c);
	}

	Expected<void> accept_all()
	{
		for (;;) {
			UniqueFd fd(::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
			if (!fd) {
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					return {};
				if (errno == EINTR || errno == ECONNABORTED)
					continue;
				return system_error("accept on the data listener");
			}
			auto pending = std::make_unique<PendingConnection>();
			pending->fd = std::move(fd);
			PendingConnection *raw = pending.get();
			auto id = loop_.add(raw->fd.get(), EPOLLIN | EPOLLRDHUP, [this, raw](uint32_t) { return read_hello(*raw); });
			if (!id)
				return id.error();
			raw->id = *id;
			pending_.push_back(std::move(pending));
		}
	}

	Expected<void> read_hello(PendingConnection &c)
	{
		while (c.fd && c.hello_bytes < kHelloSize) {
			// Exactly the hello: payload never follows before the start barrier anyway.
			const ssize_t n = ::recv(c.fd.get(), c.hello.data() + c.hello_bytes, kHelloSize - c.hello_bytes, 0);
			if (n > 0) {
				c.hello_bytes += static_cast<size_t>(n);
				continue;
			}
			if (n == 0)
				return make_error(ECONNRESET, "a data connection closed before its hello");
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return {};
			if (errno == EINTR)
				continue;
			return system_error("reading a data connection's hello");
		}
		if (!c.fd)
			return {};
		auto hello = decode_hello(c.hello);
		if (!hello)
			return hello.error();
		if (hello->session != setup_.session)
			return make_error(EPROTO, "a data connection from another gp-alltoall run (session differs)");
		if (hello->rank >= static_cast<uint32_t>(setup_.rank) || links_[hello->rank].fd)
			return make_error(EPROTO, "unexpected data connection claiming rank " + std::to_string(hello->rank));
		c.rank = static_cast<int>(hello->rank);
		return link(c);
	}

	Expected<void> link(PendingConnection &c)
	{
		loop_.remove(c.id);
		PeerLink &l = links_[c.rank];
		l.rank = c.rank;
		l.fd = std::move(c.fd);
		--missing_;
		return {};
	}

	Expected<void> finish_links()
	{
		const auto &table = *setup_.table;
		const Side own_side = table.ranks[setup_.rank].side;
		for (int peer = 0; peer < ranks_; ++peer) {
			if (peer == setup_.rank)
				continue;
			PeerLink &l = links_[peer];
			const std::string who = "data connection to rank " + std::to_string(peer);
			if (auto ok = set_int_option(l.fd.get(), IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY"); !ok)
				return make_error(ok.error().err, who + ": " + ok.error().message);
			// Accepted sockets inherit the listener's CC; setting it again costs nothing and
			// does not depend on that inheritance.
			if (setup_.tuning.cc)
				if (auto ok = set_congestion_control(l.fd.get(), *setup_.tuning.cc); !ok)
					return make_error(ok.error().err, who + ": " + ok.error().message);
			auto local = local_endpoint(l.fd.get());
			auto remote = peer_endpoint(l.fd.get());
			if (!local || !remote)
				return make_error(EIO, who + ": " + (!local ? local.error() : remote.error()).message);
			l.local = *local;
			l.remote = *remote;
			const Side peer_side = table.ranks[peer].side;
			l.cross = own_side != Side::None && peer_side != Side::None && own_side != peer_side;
		}
		return {};
	}

	EventLoop &loop_;
	int listener_;
	const MeshSetup &setup_;
	int ranks_;
	int missing_ = 0;
	std::vector<PeerLink> links_;
	std::vector<std::unique_ptr<PendingConnection>> pending_;
};

} // namespace

Expected<std::vector<PeerLink>> build_mesh(EventLoop &loop, int listener, const MeshSetup &setup,
					   const Deadline &deadline)
{
	MeshBuilder builder(loop, listener, setup);
	return builder.build(deadline);
}

} // namespace gp::alltoall
