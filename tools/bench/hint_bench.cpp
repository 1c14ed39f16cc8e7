// Cost of libgapctl on the caller's thread (goal: <= 1 us per call): gapctl_phase_begin with
// 1, 8 and 64 peers in address, tuple and fd form, and gapctl_phase_end, in the default
// threaded mode and with GAPCTL_OPEN_NO_THREAD; plus encoding and decoding one hint.
//
// The hints really go somewhere: a fake daemon (a Unix seqpacket listener on a thread that
// accepts and drains) listens at GAPPACE_HINTS_SOCK, and every benchmark reports how many of
// its hints were sent, dropped and received. A run whose hints never left the process fails
// with an error instead of reporting the (cheaper) cost of dropping.
//
// Read the CPU column of the back-to-back benchmarks: it is the calling thread's CPU time per
// call, which is what a call costs the MPI rank; their Time column (wall clock) also holds
// preemption by the sender thread and the fake daemon, which share the machine's cores. The
// threaded-idle ones time each call alone (manual time, wall clock) with the sender thread
// asleep, the common case in an application: their Time column is the one to read.
#include "gapctl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "hint_codec.hpp"
#include "unique_fd.hpp"

namespace {

using gp::UniqueFd;
using Clock = std::chrono::steady_clock;

std::string errno_text(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

// Stands in for gappaced's hints socket: accepts every client and reads every datagram.
class FakeDaemon {
public:
	// Empty string on success, else what failed.
	std::string start(const std::string &path)
	{
		path_ = path;
		listener_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
		if (!listener_)
			return errno_text("socket(AF_UNIX, SOCK_SEQPACKET)");
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		if (path.size() >= sizeof(addr.sun_path))
			return path + ": too long for a Unix socket";
		std::strcpy(addr.sun_path, path.c_str());
		if (::bind(listener_.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) < 0)
			return errno_text(("bind " + path).c_str());
		if (::listen(listener_.get(), 64) < 0)
			return errno_text("listen");
		stop_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		if (!stop_)
			return errno_text("eventfd");
		thread_ = std::thread([this] { serve(); });
		return {};
	}

	~FakeDaemon()
	{
		if (thread_.joinable()) {
			uint64_t one = 1;
			ssize_t ignored = ::write(stop_.get(), &one, sizeof(one));
			(void)ignored;
			thread_.join();
		}
		if (!path_.empty())
			::unlink(path_.c_str());
	}

	uint64_t received() const { return received_.load(std::memory_order_relaxed); }

private:
	void serve()
	{
		std::vector<char> buffer(256 * 1024); // any hint fits (1024 tuple peers ~ 60 KiB)
		std::vector<UniqueFd> clients;
		std::vector<pollfd> fds;
		for (;;) {
			fds.assign({{stop_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}});
			for (const UniqueFd &c : clients)
				fds.push_back({c.get(), POLLIN, 0});
			if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
				return;
			if (fds[0].revents)
				return;
			if (fds[1].revents) {
				for (;;) {
					UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
					if (!client)
						break;
					clients.push_back(std::move(client));
				}
			}
			// Clients accepted just now have no entry in fds yet: they are read next round.
			std::vector<size_t> closed;
			for (size_t i = 2; i < fds.size(); ++i) {
				if (!fds[i].revents)
					continue;
				for (;;) {
					ssize_t n = ::recv(fds[i].fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
					if (n > 0) {
						received_.fetch_add(1, std::memory_order_relaxed);
						continue;
					}
					if (n == 0 || (errno != EAGAIN && errno != EINTR))
						closed.push_back(i - 2);
					break;
				}
			}
			for (auto it = closed.rbegin(); it != closed.rend(); ++it)
				clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(*it));
		}
	}

	std::string path_;
	UniqueFd listener_;
	UniqueFd stop_;
	std::thread thread_;
	std::atomic<uint64_t> received_{0};
};

FakeDaemon *g_daemon = nullptr;

// Loopback TCP connections for the fd form of a peer: the library resolves each fd with
// getsockname + getpeername on every call.
class LoopbackConnections {
public:
	std::string open(size_t count)
	{
		UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
		sockaddr_in addr{};
		addr.sin_family = AF_INET;
		addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof(addr);
		if (!listener || ::bind(listener.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) < 0 ||
		    ::listen(listener.get(), static_cast<int>(count)) < 0 ||
		    ::getsockname(listener.get(), reinterpret_cast<sockaddr *>(&addr), &len) < 0)
			return errno_text("loopback listener");
		for (size_t i = 0; i < count; ++i) {
			UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
			if (!client || ::connect(client.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) < 0)
				return errno_text("loopback connect");
			UniqueFd server(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
			if (!server)
				return errno_text("loopback accept");
			clients_.push_back(std::move(client));
			servers_.push_back(std::move(server));
		}
		return {};
	}
	int fd(size_t i) const { return clients_.at(i).get(); }

private:
	std::vector<UniqueFd> clients_, servers_;
};

LoopbackConnections *g_loopback = nullptr;

enum class Form { Address, Tuple, Fd };

const char *form_name(Form form)
{
	switch (form) {
	case Form::Address: return "address";
	case Form::Tuple: return "tuple";
	default: return "fd";
	}
}

// Peers on 10.1.x.y, ranks 1..n: what an MPI runtime passes for one rank's communicator.
std::vector<gapctl_peer> make_peers(size_t n, Form form)
{
	std::vector<gapctl_peer> peers(n);
	for (size_t i = 0; i < n; ++i) {
		gapctl_peer &p = peers[i];
		p.rank = static_cast<int32_t>(i + 1);
		if (form == Form::Fd) {
			p.fd = g_loopback->fd(i);
			continue;
		}
		p.fd = -1;
		p.family = AF_INET;
		const uint32_t remote = htonl(0x0a010000u + static_cast<uint32_t>(i + 2));
		std::memcpy(p.addr, &remote, 4);
		if (form == Form::Tuple) {
			const uint32_t local = htonl(0x0a010001u);
			std::memcpy(p.local_addr, &local, 4);
			p.local_port = static_cast<uint16_t>(40000 + i);
			p.port = 5001;
		}
	}
	return peers;
}

struct HandleStats {
	uint64_t queued = 0, sent = 0, dropped = 0, rejected = 0;
	uint32_t carrier = GAPCTL_CARRIER_NONE;
	uint64_t direct = 0, doorbells = 0, timed_looks = 0;
};

HandleStats stats_of(gapctl_t *h)
{
	gapctl_stats s{};
	s.struct_size = sizeof(s);
	gapctl_get_stats(h, &s);
	return HandleStats{s.hints_queued, s.hints_sent, s.hints_dropped, s.hints_rejected,
			   s.carrier,	   s.hints_direct, s.doorbells,	   s.timed_looks};
}

// One handle per benchmark run, connected to the fake daemon before timing starts.
class Session {
public:
	Session(benchmark::State &state, bool threaded) : state_(state), threaded_(threaded)
	{
		const uint32_t flags = GAPCTL_OPEN_NO_KERNEL | (threaded ? 0 : GAPCTL_OPEN_NO_THREAD);
		if (int err = gapctl_open(&handle_, flags); err < 0) {
			state.SkipWithError((std::string("gapctl_open: ") + gapctl_strerror(err)).c_str());
			return;
		}
		// The sender thread connects as soon as it starts; give it a moment.
		const auto deadline = Clock::now() + std::chrono::seconds(1);
		while (stats_of(handle_).carrier != GAPCTL_CARRIER_SOCKET && Clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		if (stats_of(handle_).carrier != GAPCTL_CARRIER_SOCKET) {
			state.SkipWithError("libgapctl did not connect to the fake daemon (GAPPACE_HINTS_SOCK)");
			return;
		}
		received_before_ = g_daemon->received();
	}

	~Session()
	{
		if (!handle_)
			return;
		if (threaded_)
			gapctl_flush(handle_, 2000);
		const HandleStats s = stats_of(handle_);
		gapctl_close(handle_);
		if (state_.error_occurred())
			return;
		// Whatever the socket accepted reaches the daemon thread; give it time to read.
		const auto deadline = Clock::now() + std::chrono::seconds(1);
		while (g_daemon->received() - received_before_ < s.sent && Clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::microseconds(200));
		const uint64_t received = g_daemon->received() - received_before_;
		state_.counters["sent"] = benchmark::Counter(static_cast<double>(s.sent));
		state_.counters["dropped"] = benchmark::Counter(static_cast<double>(s.dropped));
		state_.counters["received"] = benchmark::Counter(static_cast<double>(received));
		// How the sender thread was fetched, per hint: directly sent, doorbell (a wake-up
		// the caller pays), timer (armed by a burst's first queued hint).
		const double per_hint = s.queued ? 1.0 / static_cast<double>(s.queued) : 0.0;
		state_.counters["direct"] = benchmark::Counter(static_cast<double>(s.direct) * per_hint, benchmark::Counter::kAvgThreads);
		state_.counters["doorbell"] =
			benchmark::Counter(static_cast<double>(s.doorbells) * per_hint, benchmark::Counter::kAvgThreads);
		state_.counters["timed"] =
			benchmark::Counter(static_cast<double>(s.timed_looks) * per_hint, benchmark::Counter::kAvgThreads);
		state_.counters["sent_pct"] =
			benchmark::Counter(s.queued ? 100.0 * static_cast<double>(s.sent) / static_cast<double>(s.queued) : 0.0,
					   benchmark::Counter::kAvgThreads);
		if (s.rejected)
			state_.SkipWithError("libgapctl rejected hints: the benchmark passes invalid arguments");
		else if (state_.iterations() > 0 && s.sent == 0)
			state_.SkipWithError("every hint was dropped: the measured cost is that of dropping");
	}

	gapctl_t *handle() const { return handle_; }
	bool ok() const { return handle_ && !state_.error_occurred(); }

	// Keeps every hint deliverable: without this the loop (about a million hints a second)
	// would outrun the sender thread's ring (256 slots) or the socket's send buffer (what the
	// daemon has not read yet: ~100..270 hints), and time the cheaper drop path instead. Every
	// 32 calls, untimed, wait until the fake daemon has read all that was sent.
	void pace(uint64_t iteration)
	{
		if ((iteration & 31) != 31)
			return;
		state_.PauseTiming();
		drain();
		state_.ResumeTiming();
	}

	// For the one-call-at-a-time benchmarks (not timed by the framework): everything sent
	// and read, then a pause long enough for the sender thread to be asleep again.
	void settle()
	{
		drain();
		std::this_thread::sleep_for(std::chrono::microseconds(50));
	}

private:
	void drain()
	{
		if (threaded_)
			gapctl_flush(handle_, 1000);
		const uint64_t sent = stats_of(handle_).sent;
		const auto deadline = Clock::now() + std::chrono::seconds(1);
		while (g_daemon->received() - received_before_ < sent && Clock::now() < deadline)
			std::this_thread::yield();
	}

	benchmark::State &state_;
	bool threaded_;
	gapctl_t *handle_ = nullptr;
	uint64_t received_before_ = 0;
};

void BM_PhaseBegin(benchmark::State &state, bool threaded, Form form, size_t n_peers)
{
	Session session(state, threaded);
	if (!session.ok())
		return;
	const std::vector<gapctl_peer> peers = make_peers(n_peers, form);
	gapctl_phase phase{};
	phase.struct_size = sizeof(phase);
	phase.kind = GAPCTL_KIND_ALLTOALL;
	phase.algorithm = GAPCTL_ALGORITHM_PAIRWISE;
	phase.bytes_per_peer = 1 << 20;
	phase.comm_size = static_cast<uint32_t>(n_peers + 1);
	phase.rank = 0;
	phase.n_peers = static_cast<uint32_t>(n_peers);
	phase.peers = peers.data();
	uint64_t iteration = 0;
	for (auto _ : state) {
		uint64_t id = 0;
		int err = gapctl_phase_begin(session.handle(), &phase, &id);
		if (err < 0) {
			state.SkipWithError((std::string("gapctl_phase_begin: ") + gapctl_strerror(err)).c_str());
			break;
		}
		benchmark::DoNotOptimize(id);
		session.pace(iteration++);
	}
}

void BM_PhaseEnd(benchmark::State &state, bool threaded)
{
	Session session(state, threaded);
	if (!session.ok())
		return;
	uint64_t iteration = 0;
	for (auto _ : state) {
		int err = gapctl_phase_end(session.handle(), iteration + 1, 12345);
		if (err < 0) {
			state.SkipWithError((std::string("gapctl_phase_end: ") + gapctl_strerror(err)).c_str());
			break;
		}
		session.pace(iteration++);
	}
}

// The calling thread's cost when the sender thread sleeps at every call, as it does when an
// MPI rank's collectives are more than a few microseconds apart: the call also rings the
// eventfd doorbell (one write syscall, and the wakeup of the sender thread). Each call is timed
// alone: wall clock as the benchmark's time, and the thread's CPU time as the counter
// cpu_ns (less the cost of reading that clock). Between calls, untimed, the hint is delivered
// and read by the fake daemon, and the sender thread is given time to go back to sleep.
class CallTimer {
public:
	CallTimer()
	{
		// Reading CLOCK_THREAD_CPUTIME_ID is a system call: measure what a pair of reads costs.
		std::vector<int64_t> samples;
		for (int i = 0; i < 101; ++i) {
			const int64_t a = thread_cpu_ns();
			samples.push_back(thread_cpu_ns() - a);
		}
		std::nth_element(samples.begin(), samples.begin() + 50, samples.end());
		overhead_ns_ = samples[50];
	}
	template <class Call> int time(benchmark::State &state, Call &&call)
	{
		const int64_t cpu_start = thread_cpu_ns();
		const auto start = Clock::now();
		const int err = call();
		const auto stop = Clock::now();
		cpu_ns_ += thread_cpu_ns() - cpu_start - overhead_ns_;
		++calls_;
		state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
		return err;
	}
	void report(benchmark::State &state) const
	{
		if (calls_)
			state.counters["cpu_ns"] = benchmark::Counter(static_cast<double>(cpu_ns_) / static_cast<double>(calls_),
								      benchmark::Counter::kAvgThreads);
	}

private:
	static int64_t thread_cpu_ns()
	{
		timespec ts{};
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
	}
	int64_t overhead_ns_ = 0;
	int64_t cpu_ns_ = 0;
	uint64_t calls_ = 0;
};

void BM_PhaseBeginIdle(benchmark::State &state, Form form, size_t n_peers)
{
	Session session(state, true);
	if (!session.ok())
		return;
	const std::vector<gapctl_peer> peers = make_peers(n_peers, form);
	gapctl_phase phase{};
	phase.struct_size = sizeof(phase);
	phase.kind = GAPCTL_KIND_ALLTOALL;
	phase.algorithm = GAPCTL_ALGORITHM_PAIRWISE;
	phase.bytes_per_peer = 1 << 20;
	phase.comm_size = static_cast<uint32_t>(n_peers + 1);
	phase.rank = 0;
	phase.n_peers = static_cast<uint32_t>(n_peers);
	phase.peers = peers.data();
	CallTimer timer;
	for (auto _ : state) {
		uint64_t id = 0;
		const int err = timer.time(state, [&] { return gapctl_phase_begin(session.handle(), &phase, &id); });
		if (err < 0) {
			state.SkipWithError((std::string("gapctl_phase_begin: ") + gapctl_strerror(err)).c_str());
			break;
		}
		session.settle();
	}
	timer.report(state);
}

void BM_PhaseEndIdle(benchmark::State &state)
{
	Session session(state, true);
	if (!session.ok())
		return;
	CallTimer timer;
	uint64_t id = 1;
	for (auto _ : state) {
		const int err = timer.time(state, [&] { return gapctl_phase_end(session.handle(), id++, 12345); });
		if (err < 0) {
			state.SkipWithError((std::string("gapctl_phase_end: ") + gapctl_strerror(err)).c_str());
			break;
		}
		session.settle();
	}
	timer.report(state);
}

// Tuple peers: the largest encoding per peer.
std::vector<gp::hint::Peer> codec_peers(size_t n)
{
	std::vector<gp::hint::Peer> peers(n);
	for (size_t i = 0; i < n; ++i) {
		const uint32_t remote = htonl(0x0a010000u + static_cast<uint32_t>(i + 2));
		const uint32_t local = htonl(0x0a010001u);
		peers[i].remote = gp::make_endpoint(AF_INET, &remote, 5001);
		peers[i].local = gp::make_endpoint(AF_INET, &local, static_cast<uint16_t>(40000 + i));
		peers[i].rank = static_cast<int32_t>(i + 1);
	}
	return peers;
}

gp::hint::Header codec_header(size_t n)
{
	gp::hint::Header h;
	h.event = gp::hint::Event::Begin;
	h.phase_id = 42;
	h.kind = GAPPACE_HINT_KIND_ALLTOALL;
	h.algorithm = GAPPACE_HINT_ALGORITHM_PAIRWISE;
	h.bytes_per_peer = 1 << 20;
	h.comm_size = static_cast<uint32_t>(n + 1);
	h.rank = 0;
	return h;
}

void BM_Encode(benchmark::State &state)
{
	const size_t n = static_cast<size_t>(state.range(0));
	const auto peers = codec_peers(n);
	const auto header = codec_header(n);
	std::vector<uint8_t> buffer(gp::hint::max_encoded_size(n));
	size_t len = 0;
	uint32_t seq = 0;
	for (auto _ : state) {
		len = gp::hint::encode(buffer, 0, seq++, header, peers);
		benchmark::DoNotOptimize(buffer.data());
		benchmark::ClobberMemory();
	}
	state.counters["msg_bytes"] = benchmark::Counter(static_cast<double>(len), benchmark::Counter::kAvgThreads);
	state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}

void BM_Decode(benchmark::State &state)
{
	const size_t n = static_cast<size_t>(state.range(0));
	const auto peers = codec_peers(n);
	const auto header = codec_header(n);
	std::vector<uint8_t> buffer(gp::hint::max_encoded_size(n));
	const size_t len = gp::hint::encode(buffer, 0, 1, header, peers);
	const auto *nlh = reinterpret_cast<const nlmsghdr *>(buffer.data());
	// Decoding what was encoded must give it back, or this measures an early error exit.
	auto check = gp::hint::decode(nlh, gp::hint::SenderStamp::Forbidden);
	if (!check || check->header != header || check->peers != peers) {
		state.SkipWithError(check ? "decode(encode(x)) != x" : check.error().message.c_str());
		return;
	}
	for (auto _ : state) {
		auto hint = gp::hint::decode(nlh, gp::hint::SenderStamp::Forbidden);
		benchmark::DoNotOptimize(hint);
	}
	state.counters["msg_bytes"] = benchmark::Counter(static_cast<double>(len), benchmark::Counter::kAvgThreads);
	state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}
BENCHMARK(BM_Encode)->ArgName("peers")->Arg(8)->Arg(1024);
BENCHMARK(BM_Decode)->ArgName("peers")->Arg(8)->Arg(1024);

void register_library_benchmarks()
{
	for (bool threaded : {true, false}) {
		const std::string mode = threaded ? "threaded" : "nothread";
		for (Form form : {Form::Address, Form::Tuple, Form::Fd}) {
			for (size_t n : {1, 8, 64}) {
				const std::string name = "BM_PhaseBegin/" + mode + "/" + form_name(form) + "/peers:" + std::to_string(n);
				benchmark::RegisterBenchmark(name.c_str(), BM_PhaseBegin, threaded, form, n);
			}
		}
		benchmark::RegisterBenchmark(("BM_PhaseEnd/" + mode).c_str(), BM_PhaseEnd, threaded);
	}
	for (Form form : {Form::Address, Form::Tuple}) {
		for (size_t n : {1, 8, 64}) {
			const std::string name = std::string("BM_PhaseBegin/threaded-idle/") + form_name(form) + "/peers:" + std::to_string(n);
			benchmark::RegisterBenchmark(name.c_str(), BM_PhaseBeginIdle, form, n)->UseManualTime();
		}
	}
	benchmark::RegisterBenchmark("BM_PhaseEnd/threaded-idle", BM_PhaseEndIdle)->UseManualTime();
}

} // namespace

int main(int argc, char **argv)
{
	char dir_template[] = "/tmp/hint-bench-XXXXXX";
	const char *dir = ::mkdtemp(dir_template);
	if (!dir) {
		std::fprintf(stderr, "hint_bench: %s\n", errno_text("mkdtemp").c_str());
		return 1;
	}
	const std::string socket_path = std::string(dir) + "/hints.sock";
	int status = 0;
	{
		FakeDaemon daemon;
		LoopbackConnections loopback;
		std::string error = daemon.start(socket_path);
		if (error.empty())
			error = loopback.open(64);
		if (!error.empty()) {
			std::fprintf(stderr, "hint_bench: %s\n", error.c_str());
			status = 1;
		} else {
			g_daemon = &daemon;
			g_loopback = &loopback;
			::setenv("GAPPACE_HINTS_SOCK", socket_path.c_str(), 1);
			register_library_benchmarks();
			benchmark::Initialize(&argc, argv);
			if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
				status = 2;
			} else {
				benchmark::RunSpecifiedBenchmarks();
				benchmark::Shutdown();
			}
			g_daemon = nullptr;
			g_loopback = nullptr;
		}
	}
	std::error_code ignored;
	std::filesystem::remove_all(dir, ignored);
	return status;
}
