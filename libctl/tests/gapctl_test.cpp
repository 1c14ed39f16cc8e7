// libgapctl through its C ABI, with the socket carrier: a real Unix seqpacket listener stands
// in for gappaced. (The kernel carrier is covered by the guest tests.)
#include "gapctl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hint_codec.hpp"
#include "unique_fd.hpp"

namespace {

using gp::UniqueFd;

class FakeDaemon {
public:
	FakeDaemon()
	{
		char dir[] = "/tmp/gapctl-test-XXXXXX";
		dir_ = mkdtemp(dir);
		path_ = dir_ + "/hints.sock";
		listener_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
		EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
		EXPECT_EQ(::listen(listener_.get(), 8), 0);
		setenv("GAPPACE_HINTS_SOCK", path_.c_str(), 1);
	}
	~FakeDaemon()
	{
		unsetenv("GAPPACE_HINTS_SOCK");
		::unlink(path_.c_str());
		::rmdir(dir_.c_str());
	}
	// Accepts the library's connection (waits at most 2 s).
	bool accept_client()
	{
		pollfd p{listener_.get(), POLLIN, 0};
		if (::poll(&p, 1, 2000) != 1)
			return false;
		client_.reset(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
		return bool(client_);
	}
	// The next hint, decoded as the daemon decodes it; waits at most 2 s.
	gp::Expected<gp::hint::Hint> next()
	{
		pollfd p{client_.get(), POLLIN, 0};
		if (::poll(&p, 1, 2000) != 1)
			return gp::make_error(ETIMEDOUT, "no hint within 2 s");
		std::vector<uint8_t> buf(1 << 16);
		ssize_t n = ::recv(client_.get(), buf.data(), buf.size(), 0);
		if (n <= 0)
			return gp::make_error(EPIPE, "connection closed");
		auto *nlh = reinterpret_cast<const nlmsghdr *>(buf.data());
		if (static_cast<size_t>(n) != nlh->nlmsg_len)
			return gp::make_error(EBADMSG, "one message per datagram");
		return gp::hint::decode(nlh, gp::hint::SenderStamp::Forbidden);
	}
	void close_listener() { listener_.reset(); }
	// What gappaced answers to an inert phase (GAPPACE_CMD_HINT_ADVICE).
	bool advise(uint64_t signature, uint32_t quiet_ms, bool quiet_summary = false)
	{
		std::vector<uint8_t> buf(gp::hint::kAdviceMaxSize);
		const size_t len = gp::hint::encode_advice(buf, 0, gp::hint::Advice{signature, quiet_ms, quiet_summary});
		return ::send(client_.get(), buf.data(), len, MSG_NOSIGNAL) == static_cast<ssize_t>(len);
	}
	// True if a hint is waiting to be read right now.
	bool ready_now()
	{
		pollfd p{client_.get(), POLLIN, 0};
		return ::poll(&p, 1, 0) == 1;
	}
	// True if no hint arrives within `ms`.
	bool silent_for(int ms)
	{
		pollfd p{client_.get(), POLLIN, 0};
		return ::poll(&p, 1, ms) == 0;
	}

private:
	std::string dir_, path_;
	UniqueFd listener_, client_;
};

gapctl_phase alltoall(const std::vector<gapctl_peer> &peers, uint64_t bytes)
{
	gapctl_phase phase{};
	phase.struct_size = sizeof(phase);
	phase.kind = GAPCTL_KIND_ALLTOALL;
	phase.algorithm = GAPCTL_ALGORITHM_PAIRWISE;
	phase.bytes_per_peer = bytes;
	phase.comm_size = static_cast<uint32_t>(peers.size() + 1);
	phase.rank = 0;
	phase.n_peers = static_cast<uint32_t>(peers.size());
	phase.peers = peers.data();
	return phase;
}

gapctl_peer v4_peer(const char *address, int32_t rank)
{
	gapctl_peer peer{};
	peer.fd = -1;
	peer.family = AF_INET;
	inet_pton(AF_INET, address, peer.addr);
	peer.rank = rank;
	return peer;
}

gapctl_stats stats_of(gapctl_t *handle)
{
	gapctl_stats stats{};
	stats.struct_size = sizeof(stats);
	EXPECT_EQ(gapctl_get_stats(handle, &stats), 0);
	return stats;
}

// A handle on the daemon's socket (never the kernel), once the library holds the connection
// the fake daemon accepted: advice can only reach a connected sender.
void open_on_socket(FakeDaemon &daemon, uint32_t flags, gapctl_t **handle)
{
	ASSERT_EQ(gapctl_open(handle, GAPCTL_OPEN_NO_KERNEL | flags), 0);
	ASSERT_TRUE(daemon.accept_client());
	for (int i = 0; i < 200 && stats_of(*handle).carrier != GAPCTL_CARRIER_SOCKET; ++i)
		usleep(5000);
	ASSERT_EQ(stats_of(*handle).carrier, static_cast<uint32_t>(GAPCTL_CARRIER_SOCKET));
}

class Library : public ::testing::TestWithParam<uint32_t> {};

TEST_P(Library, DeliversBeginAndEndToTheDaemonSocket)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL | GetParam()), 0);
	ASSERT_TRUE(daemon.accept_client());
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1), v4_peer("10.0.0.3", 2)};
	auto phase = alltoall(peers, 16384);
	uint64_t id = 0;
	ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	EXPECT_NE(id, 0u);
	ASSERT_EQ(gapctl_phase_end(handle, id, 5000), 0);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);

	auto begin = daemon.next();
	ASSERT_TRUE(begin) << begin.error().message;
	EXPECT_EQ(begin->header.event, gp::hint::Event::Begin);
	EXPECT_EQ(begin->header.phase_id, id);
	EXPECT_EQ(begin->header.kind, static_cast<uint32_t>(GAPPACE_HINT_KIND_ALLTOALL));
	EXPECT_EQ(begin->header.algorithm, static_cast<uint32_t>(GAPPACE_HINT_ALGORITHM_PAIRWISE));
	EXPECT_EQ(begin->header.bytes_per_peer, 16384u);
	EXPECT_EQ(begin->header.comm_size, 3u);
	ASSERT_EQ(begin->peers.size(), 2u);
	EXPECT_EQ(gp::format_endpoint(begin->peers[1].remote), "10.0.0.3");
	EXPECT_EQ(begin->peers[1].rank, 2);
	EXPECT_FALSE(begin->peers[0].is_tuple());
	auto end = daemon.next();
	ASSERT_TRUE(end) << end.error().message;
	EXPECT_EQ(end->header.event, gp::hint::Event::End);
	EXPECT_EQ(end->header.phase_id, id);
	EXPECT_EQ(end->header.duration_ns, 5000u);

	auto stats = stats_of(handle);
	EXPECT_EQ(stats.carrier, static_cast<uint32_t>(GAPCTL_CARRIER_SOCKET));
	EXPECT_EQ(stats.hints_queued, 2u);
	EXPECT_EQ(stats.hints_sent, 2u);
	EXPECT_EQ(stats.hints_dropped, 0u);
	gapctl_close(handle);
}

INSTANTIATE_TEST_SUITE_P(Modes, Library, ::testing::Values(0u, uint32_t{GAPCTL_OPEN_NO_THREAD}),
			 [](const auto &info) { return info.param ? "Inline" : "Threaded"; });

TEST(Library, FdPeersBecomeTuples)
{
	FakeDaemon daemon;
	// A real TCP connection on loopback: the library resolves the fd to its 4-tuple.
	UniqueFd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(::bind(server.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
	ASSERT_EQ(::listen(server.get(), 1), 0);
	socklen_t len = sizeof(addr);
	::getsockname(server.get(), reinterpret_cast<sockaddr *>(&addr), &len);
	UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
	sockaddr_in local{};
	len = sizeof(local);
	::getsockname(client.get(), reinterpret_cast<sockaddr *>(&local), &len);

	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	gapctl_peer peer{};
	peer.fd = client.get();
	peer.rank = 5;
	std::vector<gapctl_peer> peers = {peer};
	auto phase = alltoall(peers, 1);
	uint64_t id;
	ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	auto hint = daemon.next();
	ASSERT_TRUE(hint) << hint.error().message;
	ASSERT_EQ(hint->peers.size(), 1u);
	ASSERT_TRUE(hint->peers[0].is_tuple());
	EXPECT_EQ(hint->peers[0].local.port, ntohs(local.sin_port));
	EXPECT_EQ(hint->peers[0].remote.port, ntohs(addr.sin_port));
	EXPECT_EQ(gp::format_endpoint(hint->peers[0].remote).rfind("127.0.0.1:", 0), 0u);
	EXPECT_EQ(hint->peers[0].rank, 5);

	// An IPv6 socket's IPv4 connection (dual-stack, ::ffff:127.0.0.1) is named as the IPv4
	// connection the kernel files it under, which the daemon's socket lookups report.
	UniqueFd dual(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
	ASSERT_TRUE(dual);
	const int v6only = 0;
	ASSERT_EQ(::setsockopt(dual.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)), 0);
	sockaddr_in6 mapped{};
	mapped.sin6_family = AF_INET6;
	mapped.sin6_port = addr.sin_port;
	ASSERT_EQ(::inet_pton(AF_INET6, "::ffff:127.0.0.1", &mapped.sin6_addr), 1);
	ASSERT_EQ(::connect(dual.get(), reinterpret_cast<sockaddr *>(&mapped), sizeof(mapped)), 0);
	peers[0].fd = dual.get();
	phase = alltoall(peers, 1);
	ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	hint = daemon.next();
	ASSERT_TRUE(hint) << hint.error().message;
	ASSERT_EQ(hint->peers.size(), 1u);
	EXPECT_EQ(hint->peers[0].local.family, AF_INET);
	EXPECT_EQ(hint->peers[0].remote.family, AF_INET);
	EXPECT_EQ(gp::format_endpoint(hint->peers[0].remote), "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)));

	// The same connection named by value, with the addresses getsockname gives an IPv6 socket.
	gapctl_peer by_value{};
	by_value.fd = -1;
	by_value.family = AF_INET6;
	ASSERT_EQ(::inet_pton(AF_INET6, "::ffff:127.0.0.1", by_value.addr), 1);
	ASSERT_EQ(::inet_pton(AF_INET6, "::ffff:127.0.0.1", by_value.local_addr), 1);
	by_value.port = ntohs(addr.sin_port);
	by_value.local_port = 40000;
	by_value.rank = 5;
	std::vector<gapctl_peer> values = {by_value};
	phase = alltoall(values, 1);
	ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	hint = daemon.next();
	ASSERT_TRUE(hint) << hint.error().message;
	ASSERT_EQ(hint->peers.size(), 1u);
	EXPECT_EQ(gp::format_endpoint(hint->peers[0].local), "127.0.0.1:40000");
	EXPECT_EQ(hint->peers[0].remote.family, AF_INET);
	const uint64_t rejected_before = stats_of(handle).hints_rejected;
	ASSERT_EQ(::inet_pton(AF_INET6, "fd00::1", values[0].local_addr), 1); // one mapped, one not
	phase = alltoall(values, 1);
	EXPECT_EQ(gapctl_phase_begin(handle, &phase, &id), -EINVAL);
	EXPECT_EQ(stats_of(handle).hints_rejected, rejected_before + 1);

	// A descriptor that is not a connected socket is the caller's error, counted, not sent.
	peers[0].fd = server.get();
	phase = alltoall(peers, 1);
	EXPECT_EQ(gapctl_phase_begin(handle, &phase, &id), -EBADF);
	EXPECT_EQ(stats_of(handle).hints_rejected, rejected_before + 2);
	gapctl_close(handle);
}

// The ring is lock-free for many producers: threads that hint at once lose nothing, send
// nothing twice, and each thread's BEGIN reaches the daemon before its END.
TEST(Library, ConcurrentCallersLoseAndDuplicateNothing)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	constexpr int kThreads = 4, kPhasesEach = 30; // 240 hints: fewer than the ring's slots
	std::vector<std::thread> callers;
	for (int t = 0; t < kThreads; ++t) {
		callers.emplace_back([handle, t] {
			std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1)};
			auto phase = alltoall(peers, 1000 + t);
			for (int i = 0; i < kPhasesEach; ++i) {
				uint64_t id = 0;
				EXPECT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
				EXPECT_EQ(gapctl_phase_end(handle, id, 1), 0);
			}
		});
	}
	std::set<std::pair<uint64_t, int>> seen; // (phase id, event)
	std::map<uint64_t, uint64_t> begin_size;  // phase id -> bytes_per_peer of its BEGIN
	for (int i = 0; i < 2 * kThreads * kPhasesEach; ++i) {
		auto hint = daemon.next();
		ASSERT_TRUE(hint) << "hint " << i << ": " << hint.error().message;
		const auto event = static_cast<int>(hint->header.event);
		EXPECT_TRUE(seen.emplace(hint->header.phase_id, event).second) << "sent twice";
		if (hint->header.event == gp::hint::Event::Begin)
			begin_size[hint->header.phase_id] = hint->header.bytes_per_peer;
		else
			EXPECT_TRUE(begin_size.count(hint->header.phase_id)) << "END before its BEGIN";
	}
	for (auto &caller : callers)
		caller.join();
	std::map<uint64_t, int> phases_per_size;
	for (const auto &[id, size] : begin_size)
		++phases_per_size[size];
	EXPECT_EQ(phases_per_size.size(), static_cast<size_t>(kThreads));
	for (const auto &[size, phases] : phases_per_size)
		EXPECT_EQ(phases, kPhasesEach) << "thread with size " << size;
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	auto stats = stats_of(handle);
	EXPECT_EQ(stats.hints_queued, 240u);
	EXPECT_EQ(stats.hints_sent, 240u);
	EXPECT_EQ(stats.hints_dropped, 0u);
	gapctl_close(handle);
}

// A rank alternates between several phases the daemon calls inert (an all-to-all, the barrier
// and reductions around it): advice for each must hold while the others' comes and goes. With
// one table slot per signature, two of them could evict each other for ever.
TEST_P(Library, QuietAdviceIsKeptForManyPhasesAtOnce)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_NO_FATAL_FAILURE(open_on_socket(daemon, GetParam(), &handle));
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1), v4_peer("10.0.0.3", 2)};
	constexpr int kPhases = 16;
	for (int i = 0; i < kPhases; ++i) {
		auto phase = alltoall(peers, 1000 + i);
		uint64_t id = 0;
		ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
		ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
		auto begin = daemon.next();
		ASSERT_TRUE(begin) << begin.error().message;
		ASSERT_TRUE(daemon.next()); // its END
		ASSERT_TRUE(daemon.advise(begin->header.signature, 10000));
	}
	// Without a thread the advice is read after a send; with one, as it arrives.
	int quiet = 0;
	for (int round = 0; round < 50 && quiet < kPhases; ++round) {
		quiet = 0;
		for (int i = 0; i < kPhases; ++i) {
			auto phase = alltoall(peers, 1000 + i);
			uint64_t id = 0;
			ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
			ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
			if (id & GAPCTL_PHASE_QUIET) {
				++quiet;
			} else {
				ASSERT_TRUE(daemon.next()) << "phase " << i << " was not quiet, so it is sent";
				ASSERT_TRUE(daemon.next());
			}
		}
		usleep(2000);
	}
	EXPECT_EQ(quiet, kPhases) << "advice for some phases was lost to others'";
	gapctl_close(handle);
}

// With quiet_summary in the advice, the phases skipped under it are counted with the durations
// their ENDs name (unmeasured ones, 0, are not), and the next BEGIN of the signature carries
// the count and the sum; the one after it, with nothing skipped between, carries none.
TEST_P(Library, QuietSummaryComesWithTheNextBegin)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_NO_FATAL_FAILURE(open_on_socket(daemon, GetParam(), &handle));
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1), v4_peer("10.0.0.3", 2)};
	auto small = alltoall(peers, 1024);
	uint64_t id = 0;
	ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
	ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
	auto begin = daemon.next();
	ASSERT_TRUE(begin) << begin.error().message;
	ASSERT_TRUE(daemon.next());
	constexpr uint32_t kQuietMs = 300;
	ASSERT_TRUE(daemon.advise(begin->header.signature, kQuietMs, true));
	const auto advised = std::chrono::steady_clock::now();

	for (int i = 0; i < 50; ++i) {
		ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
		if (id & GAPCTL_PHASE_QUIET)
			break;
		ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
		ASSERT_TRUE(daemon.next());
		ASSERT_TRUE(daemon.next());
		usleep(2000);
	}
	ASSERT_TRUE(id & GAPCTL_PHASE_QUIET) << "the advice never took effect";
	// The first quiet phase, then 9 more: 10 measured (1000 + 2000 + ... ns), 2 not measured.
	uint64_t expected_ns = 0;
	for (int i = 1; i <= 12; ++i) {
		if (i > 1) {
			ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
		}
		ASSERT_TRUE(id & GAPCTL_PHASE_QUIET);
		const uint64_t duration = i <= 10 ? uint64_t(i) * 1000 : 0;
		expected_ns += duration;
		ASSERT_EQ(gapctl_phase_end(handle, id, duration), 0);
	}
	const auto left = std::chrono::milliseconds(kQuietMs + 50) - (std::chrono::steady_clock::now() - advised);
	if (left.count() > 0)
		std::this_thread::sleep_for(left);
	ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
	ASSERT_FALSE(id & GAPCTL_PHASE_QUIET);
	ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
	auto summed = daemon.next();
	ASSERT_TRUE(summed) << summed.error().message;
	EXPECT_EQ(summed->header.quiet_phases, 10u);
	EXPECT_EQ(summed->header.quiet_ns, expected_ns);
	ASSERT_TRUE(daemon.next()); // its END
	ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
	auto after = daemon.next();
	ASSERT_TRUE(after) << after.error().message;
	EXPECT_EQ(after->header.quiet_phases, 0u) << "a summary is sent once";
	EXPECT_EQ(after->header.quiet_ns, 0u);
	gapctl_close(handle);
}

// The daemon's advice that a phase changes nothing silences alike phases (and only those)
// for the time it names; then they are sent again, so the daemon still sees one per period.
TEST_P(Library, QuietAdviceSkipsAlikePhasesForItsTime)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_NO_FATAL_FAILURE(open_on_socket(daemon, GetParam(), &handle));
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1), v4_peer("10.0.0.3", 2)};
	auto small = alltoall(peers, 1024);
	uint64_t id = 0;
	ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
	ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
	auto begin = daemon.next();
	ASSERT_TRUE(begin) << begin.error().message;
	ASSERT_NE(begin->header.signature, 0u) << "a BEGIN on the socket carries its signature";
	ASSERT_TRUE(daemon.next()); // its END
	constexpr uint32_t kQuietMs = 300;
	ASSERT_TRUE(daemon.advise(begin->header.signature, kQuietMs));
	const auto advised = std::chrono::steady_clock::now();

	// Without a thread the advice is read after the next send; with one, as it arrives.
	int sent_before_quiet = 0;
	for (; sent_before_quiet < 50; ++sent_before_quiet) {
		ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
		ASSERT_EQ(gapctl_phase_end(handle, id, 100), 0);
		if (id & GAPCTL_PHASE_QUIET)
			break;
		ASSERT_TRUE(daemon.next()) << "a phase that was not quiet is sent";
		ASSERT_TRUE(daemon.next());
		usleep(2000);
	}
	ASSERT_TRUE(id & GAPCTL_PHASE_QUIET) << "the advice never took effect";
	for (int i = 0; i < 10; ++i) {
		ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
		EXPECT_TRUE(id & GAPCTL_PHASE_QUIET);
		EXPECT_EQ(gapctl_phase_end(handle, id, 100), 0);
	}
	auto other = alltoall(peers, 4096); // another size: another signature, still sent
	uint64_t other_id = 0;
	ASSERT_EQ(gapctl_phase_begin(handle, &other, &other_id), 0);
	EXPECT_FALSE(other_id & GAPCTL_PHASE_QUIET);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	auto next = daemon.next();
	ASSERT_TRUE(next) << next.error().message;
	EXPECT_EQ(next->header.bytes_per_peer, 4096u) << "nothing of the quiet phases reached the daemon";
	EXPECT_TRUE(daemon.silent_for(50));
	EXPECT_EQ(stats_of(handle).hints_quiet, 11u);

	// The advice ends: the phase is sent again.
	const auto elapsed = std::chrono::steady_clock::now() - advised;
	const auto left = std::chrono::milliseconds(kQuietMs + 50) - elapsed;
	if (left.count() > 0)
		std::this_thread::sleep_for(left);
	ASSERT_EQ(gapctl_phase_begin(handle, &small, &id), 0);
	EXPECT_FALSE(id & GAPCTL_PHASE_QUIET);
	auto again = daemon.next();
	ASSERT_TRUE(again) << again.error().message;
	EXPECT_EQ(again->header.bytes_per_peer, 1024u);
	EXPECT_EQ(again->header.quiet_phases, 0u) << "advice without quiet_summary asks for none";

	// Older callers' smaller stats struct still works, without the appended field.
	gapctl_stats old{};
	old.struct_size = offsetof(gapctl_stats, hints_quiet);
	old.hints_quiet = 12345;
	EXPECT_EQ(gapctl_get_stats(handle, &old), 0);
	EXPECT_EQ(old.hints_quiet, 12345u);
	old.struct_size = offsetof(gapctl_stats, hints_quiet) - 1;
	EXPECT_EQ(gapctl_get_stats(handle, &old), -EINVAL);
	(void)sent_before_quiet;
	gapctl_close(handle);
}

// The sender thread asleep, a caller sends its hint itself: it is on the daemon's socket when
// the call returns, no wake-up involved. Back-to-back hints go through the ring, and a
// caller's hints arrive in its order whichever way each went.
TEST(Library, AnIsolatedHintIsSentByTheCallerAndOrderHolds)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1)};
	auto phase = alltoall(peers, 4096);

	// The thread falls asleep once it has nothing to do; give it time (bounded tries).
	bool on_socket_at_return = false;
	int isolated = 0;
	for (int attempt = 0; attempt < 20 && !on_socket_at_return; ++attempt) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
		uint64_t id = 0;
		ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
		++isolated;
		on_socket_at_return = daemon.ready_now();
		ASSERT_EQ(gapctl_flush(handle, 1000), 0);
		for (int i = 0; i < isolated; ++i)
			ASSERT_TRUE(daemon.next());
		isolated = 0;
	}
	EXPECT_TRUE(on_socket_at_return);
	const auto after_isolated = stats_of(handle);
	EXPECT_GE(after_isolated.hints_direct, 1u);
	EXPECT_EQ(after_isolated.hints_sent, after_isolated.hints_queued);

	// A burst: BEGIN and END pairs back to back, read as they come (as gappaced does), then
	// the order they came in.
	constexpr int kPhases = 100; // 200 hints: within the ring, which drops what exceeds it
	std::vector<gp::hint::Header> received;
	std::thread reader([&] {
		while (received.size() < 2 * kPhases) {
			auto hint = daemon.next();
			if (!hint)
				return; // nothing for 2 s: the comparison below reports what is missing
			received.push_back(hint->header);
		}
	});
	std::vector<uint64_t> expected;
	for (int i = 0; i < kPhases; ++i) {
		uint64_t id = 0;
		EXPECT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
		EXPECT_EQ(gapctl_phase_end(handle, id, 1000 + i), 0);
		expected.push_back(id);
		expected.push_back(id);
	}
	EXPECT_EQ(gapctl_flush(handle, 2000), 0);
	reader.join();
	ASSERT_EQ(received.size(), expected.size());
	for (size_t i = 0; i < expected.size(); ++i) {
		EXPECT_EQ(received[i].phase_id, expected[i]) << "hint " << i;
		EXPECT_EQ(received[i].event, i % 2 ? gp::hint::Event::End : gp::hint::Event::Begin) << "hint " << i;
	}
	const auto after_burst = stats_of(handle);
	EXPECT_EQ(after_burst.hints_sent - after_isolated.hints_sent, expected.size());
	EXPECT_EQ(after_burst.hints_dropped, 0u);
	EXPECT_LT(after_burst.hints_direct - after_isolated.hints_direct, expected.size()) << "the burst never used the ring";
	gapctl_close(handle);
}

// A burst that finds the thread asleep: its first hint goes directly, the rest through the
// ring; the thread is fetched by a timer armed by the burst's first queued hint, not by the
// doorbell (a cross-CPU wake-up paid by the caller). Nothing is flushed here: the timer alone
// must bring every hint to the daemon, in order.
TEST(Library, ABurstIsFetchedByATimerNotTheDoorbell)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1)};
	auto phase = alltoall(peers, 4096);
	constexpr int kBurst = 32;
	uint64_t timed = 0;
	// Bounded rounds: a round whose calls were all preempted apart is no burst.
	for (int round = 0; round < 5 && timed == 0; ++round) {
		std::this_thread::sleep_for(std::chrono::milliseconds(20)); // the thread falls asleep
		const auto before = stats_of(handle);
		std::vector<uint64_t> expected;
		for (int i = 0; i < kBurst; ++i) {
			uint64_t id = 0;
			ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
			expected.push_back(id);
		}
		for (size_t i = 0; i < expected.size(); ++i) {
			auto hint = daemon.next();
			ASSERT_TRUE(hint) << "hint " << i << " of the burst never arrived";
			EXPECT_EQ(hint->header.phase_id, expected[i]) << "hint " << i;
		}
		const auto after = stats_of(handle);
		EXPECT_EQ(after.hints_sent - before.hints_sent, uint64_t{kBurst});
		EXPECT_EQ(after.hints_dropped, 0u);
		EXPECT_EQ(after.doorbells - before.doorbells, 0u) << "a burst rang the doorbell";
		timed += after.timed_looks - before.timed_looks;
	}
	EXPECT_GE(timed, 1u) << "no burst's hint was left to the timer";
	gapctl_close(handle);
}

TEST(Library, WithoutADaemonHintsAreDroppedAndCounted)
{
	setenv("GAPPACE_HINTS_SOCK", "/tmp/gapctl-test-nonexistent/hints.sock", 1);
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	auto phase = alltoall({}, 1);
	for (int i = 0; i < 10; ++i) {
		uint64_t id;
		ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
		ASSERT_EQ(gapctl_phase_end(handle, id, 0), 0);
	}
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	auto stats = stats_of(handle);
	EXPECT_EQ(stats.carrier, static_cast<uint32_t>(GAPCTL_CARRIER_NONE));
	EXPECT_EQ(stats.hints_queued, 20u);
	EXPECT_EQ(stats.hints_sent, 0u);
	EXPECT_EQ(stats.hints_dropped, 20u);
	gapctl_close(handle);
	unsetenv("GAPPACE_HINTS_SOCK");
}

TEST(Library, ASlowDaemonCostsDropsNotStalls)
{
	FakeDaemon daemon; // accepts but never reads: its receive queue fills up
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	std::vector<gapctl_peer> peers(64, v4_peer("10.0.0.9", 1));
	auto phase = alltoall(peers, 1);
	const int calls = 20000;
	for (int i = 0; i < calls; ++i) {
		uint64_t id;
		ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	}
	(void)gapctl_flush(handle, 2000);
	auto stats = stats_of(handle);
	EXPECT_EQ(stats.hints_sent + stats.hints_dropped, static_cast<uint64_t>(calls));
	EXPECT_GT(stats.hints_dropped, 0u);
	EXPECT_GT(stats.hints_sent, 0u);
	gapctl_close(handle);
}

TEST(Library, RejectsBadArguments)
{
	gapctl_t *handle = nullptr;
	EXPECT_EQ(gapctl_open(nullptr, 0), -EINVAL);
	EXPECT_EQ(gapctl_open(&handle, 1U << 20), -EINVAL);
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL | GAPCTL_OPEN_NO_THREAD), 0);
	uint64_t id;
	auto phase = alltoall({}, 1);
	EXPECT_EQ(gapctl_phase_begin(nullptr, &phase, &id), -EINVAL);
	EXPECT_EQ(gapctl_phase_begin(handle, nullptr, &id), -EINVAL);
	EXPECT_EQ(gapctl_phase_begin(handle, &phase, nullptr), -EINVAL);
	auto bad = phase;
	bad.struct_size = 8;
	EXPECT_EQ(gapctl_phase_begin(handle, &bad, &id), -EINVAL);
	bad = phase;
	bad.kind = 0;
	EXPECT_EQ(gapctl_phase_begin(handle, &bad, &id), -EINVAL);
	bad.kind = 99;
	EXPECT_EQ(gapctl_phase_begin(handle, &bad, &id), -EINVAL);
	bad = phase;
	bad.flags = 1U << 30;
	EXPECT_EQ(gapctl_phase_begin(handle, &bad, &id), -EINVAL);
	bad = phase;
	bad.n_peers = 3; // peers == nullptr
	EXPECT_EQ(gapctl_phase_begin(handle, &bad, &id), -EINVAL);
	gapctl_peer v7{};
	v7.fd = -1;
	v7.family = 7;
	std::vector<gapctl_peer> odd = {v7};
	bad = alltoall(odd, 1);
	EXPECT_EQ(gapctl_phase_begin(handle, &bad, &id), -EINVAL);
	EXPECT_EQ(gapctl_phase_end(handle, 0, 0), -EINVAL);
	EXPECT_EQ(stats_of(handle).hints_rejected, 9u); // every call above but the NULL handle
	EXPECT_EQ(stats_of(handle).hints_queued, 0u);
	gapctl_stats small{};
	small.struct_size = 4;
	EXPECT_EQ(gapctl_get_stats(handle, &small), -EINVAL);
	EXPECT_STREQ(gapctl_kind_name(GAPCTL_KIND_BCAST), "bcast");
	EXPECT_EQ(gapctl_kind_from_name("scatter"), static_cast<uint32_t>(GAPCTL_KIND_SCATTER));
	EXPECT_EQ(gapctl_kind_from_name(nullptr), 0u);
	gapctl_close(handle);
	gapctl_close(nullptr);
}

TEST(Library, TooManyPeersAreCutAndFlagged)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	std::vector<gapctl_peer> peers(GAPCTL_MAX_PEERS + 5, v4_peer("10.0.0.4", 3));
	auto phase = alltoall(peers, 8);
	phase.flags = GAPCTL_F_RENDEZVOUS; // the caller's flags travel with the library's
	uint64_t id = 0;
	EXPECT_EQ(gapctl_phase_begin(handle, &phase, &id), -E2BIG);
	EXPECT_NE(id, 0u);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	auto hint = daemon.next();
	ASSERT_TRUE(hint) << hint.error().message;
	EXPECT_EQ(hint->peers.size(), static_cast<size_t>(GAPCTL_MAX_PEERS));
	EXPECT_TRUE(hint->header.flags & GAPPACE_HINT_F_PEERS_TRUNCATED);
	EXPECT_TRUE(hint->header.flags & GAPPACE_HINT_F_RENDEZVOUS);
	gapctl_close(handle);
}

TEST(Library, ChildAfterForkGetsECHILD)
{
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	pid_t pid = fork();
	if (pid == 0) {
		auto phase = alltoall({}, 1);
		uint64_t id;
		int rc = gapctl_phase_begin(handle, &phase, &id);
		gapctl_close(handle);
		_exit(rc == -ECHILD ? 0 : 1);
	}
	int status = 0;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gapctl_close(handle);
}

} // namespace

namespace {

// "@name" in GAPPACE_HINTS_SOCK is an abstract socket: one per network namespace.
TEST(Library, AbstractSocketCarrier)
{
	const std::string name = "@gapctl-test-" + std::to_string(getpid());
	UniqueFd listener(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::memcpy(addr.sun_path + 1, name.data() + 1, name.size() - 1);
	const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
	ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr *>(&addr), len), 0);
	ASSERT_EQ(::listen(listener.get(), 1), 0);
	setenv("GAPPACE_HINTS_SOCK", name.c_str(), 1);
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL | GAPCTL_OPEN_NO_THREAD), 0);
	unsetenv("GAPPACE_HINTS_SOCK");
	UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
	ASSERT_TRUE(client);
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1)};
	auto phase = alltoall(peers, 64);
	uint64_t id;
	ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	std::vector<uint8_t> buf(4096);
	ssize_t n = ::recv(client.get(), buf.data(), buf.size(), 0);
	ASSERT_GT(n, 0);
	auto hint = gp::hint::decode(reinterpret_cast<const nlmsghdr *>(buf.data()), gp::hint::SenderStamp::Forbidden);
	ASSERT_TRUE(hint) << hint.error().message;
	EXPECT_EQ(hint->header.phase_id, id);
	gapctl_close(handle);
}

} // namespace

namespace {

// A daemon that goes away (restart) must not make the sender thread spin on POLLHUP.
TEST(Library, DaemonGoneCostsNoCpu)
{
	auto daemon = std::make_unique<FakeDaemon>();
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon->accept_client());
	std::vector<gapctl_peer> peers = {v4_peer("10.0.0.2", 1)};
	auto phase = alltoall(peers, 64);
	uint64_t id;
	ASSERT_EQ(gapctl_phase_begin(handle, &phase, &id), 0);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	daemon.reset(); // closes the connection and the listener
	timespec cpu0{}, cpu1{};
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
	usleep(500000);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
	const double used = (cpu1.tv_sec - cpu0.tv_sec) + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e9;
	EXPECT_LT(used, 0.1) << "the sender thread spun for " << used << " s of CPU in 0.5 s";
	gapctl_close(handle);
}

} // namespace

namespace {

TEST(Library, IPv6TuplesAreCutToWhatANestHolds)
{
	FakeDaemon daemon;
	gapctl_t *handle = nullptr;
	ASSERT_EQ(gapctl_open(&handle, GAPCTL_OPEN_NO_KERNEL), 0);
	ASSERT_TRUE(daemon.accept_client());
	gapctl_peer peer{};
	peer.fd = -1;
	peer.family = AF_INET6;
	inet_pton(AF_INET6, "fd00::2", peer.addr);
	inet_pton(AF_INET6, "fd00::1", peer.local_addr);
	peer.port = 5001;
	peer.local_port = 40000;
	peer.rank = 1;
	std::vector<gapctl_peer> peers(GAPCTL_MAX_PEERS, peer);
	auto phase = alltoall(peers, 8);
	uint64_t id = 0;
	EXPECT_EQ(gapctl_phase_begin(handle, &phase, &id), -E2BIG);
	ASSERT_EQ(gapctl_flush(handle, 1000), 0);
	auto hint = daemon.next();
	ASSERT_TRUE(hint) << hint.error().message;
	EXPECT_LT(hint->peers.size(), static_cast<size_t>(GAPCTL_MAX_PEERS));
	EXPECT_GT(hint->peers.size(), 900u);
	EXPECT_TRUE(hint->header.flags & GAPPACE_HINT_F_PEERS_TRUNCATED);
	gapctl_close(handle);
}

} // namespace
