// socket_table_bench: what reading the socket table costs the daemon (Google Benchmark).
//
// gappaced reads the established TCP sockets to find a phase's connections (resolution) and,
// while settings linger idle, what the application has written on them (every 100 ms tick).
// A sock_diag dump walks every bucket of the kernel's established hash, which all network
// namespaces share and whose size follows the host's memory, not its sockets; the exact
// lookup by 4-tuple is a hash lookup per socket.
//
//   BM_DumpEstablished      list_established_tcp(): the dump (IPv4 and IPv6)
//   BM_FindByTuple/N        find_established_tcp() for N connections
//   BM_WrittenBytes/N       written_bytes() for N connections (with tcp_info)
//   BM_WrittenBytesOpenTable/N  the same on a SocketTable kept open: a gappaced tick
//   BM_ProcessTuples/N      process_tcp_tuples() of this process, which holds both ends of N
//                           connections, and find_established_tcp() of them: what a phase
//                           whose peers are named by address alone costs
//
// The connections are N loopback pairs of this process, in its own network namespace.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "stock.hpp"

namespace {

using namespace gp;

// N established loopback connections (both ends held) and their client ends as the daemon
// would watch them.
class LoopbackConnections {
public:
	explicit LoopbackConnections(int count)
	{
		listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in address{};
		address.sin_family = AF_INET;
		address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof(address);
		if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr *>(&address), len) != 0 ||
		    ::listen(listener_, count) != 0 || ::getsockname(listener_, reinterpret_cast<sockaddr *>(&address), &len) != 0)
			return;
		for (int i = 0; i < count; ++i) {
			const int client = ::socket(AF_INET, SOCK_STREAM, 0);
			if (client < 0 || ::connect(client, reinterpret_cast<sockaddr *>(&address), sizeof(address)) != 0)
				return;
			fds_.push_back(client);
			const int server = ::accept(listener_, nullptr, nullptr);
			if (server < 0)
				return;
			fds_.push_back(server);
			sockaddr_in local{};
			socklen_t local_len = sizeof(local);
			::getsockname(client, reinterpret_cast<sockaddr *>(&local), &local_len);
			struct stat st {};
			::fstat(client, &st);
			stock::TcpSocket watched;
			watched.local = make_endpoint(AF_INET, &local.sin_addr, ntohs(local.sin_port));
			watched.remote = make_endpoint(AF_INET, &address.sin_addr, ntohs(address.sin_port));
			watched.inode = st.st_ino;
			sockets_.push_back(watched);
		}
		ok_ = true;
	}
	~LoopbackConnections()
	{
		for (int fd : fds_)
			::close(fd);
		if (listener_ >= 0)
			::close(listener_);
	}
	LoopbackConnections(const LoopbackConnections &) = delete;
	LoopbackConnections &operator=(const LoopbackConnections &) = delete;

	bool ok() const { return ok_; }
	const std::vector<stock::TcpSocket> &sockets() const { return sockets_; }

private:
	int listener_ = -1;
	std::vector<int> fds_;
	std::vector<stock::TcpSocket> sockets_;
	bool ok_ = false;
};

void BM_DumpEstablished(benchmark::State &state)
{
	LoopbackConnections connections(16);
	if (!connections.ok()) {
		state.SkipWithError("cannot set up loopback connections");
		return;
	}
	for (auto _ : state) {
		auto sockets = stock::list_established_tcp();
		if (!sockets) {
			state.SkipWithError(sockets.error().message.c_str());
			return;
		}
		benchmark::DoNotOptimize(sockets->size());
	}
}
BENCHMARK(BM_DumpEstablished)->Unit(benchmark::kMicrosecond);

void BM_FindByTuple(benchmark::State &state)
{
	LoopbackConnections connections(static_cast<int>(state.range(0)));
	if (!connections.ok()) {
		state.SkipWithError("cannot set up loopback connections");
		return;
	}
	for (auto _ : state) {
		auto found = stock::find_established_tcp(connections.sockets());
		if (!found || found->size() != connections.sockets().size()) {
			state.SkipWithError(found ? "a connection was not found" : found.error().message.c_str());
			return;
		}
		benchmark::DoNotOptimize(found->size());
	}
}
BENCHMARK(BM_FindByTuple)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_WrittenBytes(benchmark::State &state)
{
	LoopbackConnections connections(static_cast<int>(state.range(0)));
	if (!connections.ok()) {
		state.SkipWithError("cannot set up loopback connections");
		return;
	}
	for (auto _ : state) {
		auto written = stock::written_bytes(connections.sockets());
		if (!written || written->size() != connections.sockets().size()) {
			state.SkipWithError(written ? "a connection was not found" : written.error().message.c_str());
			return;
		}
		benchmark::DoNotOptimize(written->size());
	}
}
BENCHMARK(BM_WrittenBytes)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// What the daemon's tick costs: the same on a SocketTable it keeps open.
void BM_WrittenBytesOpenTable(benchmark::State &state)
{
	LoopbackConnections connections(static_cast<int>(state.range(0)));
	auto table = stock::SocketTable::open();
	if (!connections.ok() || !table) {
		state.SkipWithError(table ? "cannot set up loopback connections" : table.error().message.c_str());
		return;
	}
	for (auto _ : state) {
		auto written = table->written_bytes(connections.sockets());
		if (!written || written->size() != connections.sockets().size()) {
			state.SkipWithError(written ? "a connection was not found" : written.error().message.c_str());
			return;
		}
		benchmark::DoNotOptimize(written->size());
	}
}
BENCHMARK(BM_WrittenBytesOpenTable)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

void BM_ProcessTuples(benchmark::State &state)
{
	LoopbackConnections connections(static_cast<int>(state.range(0)));
	if (!connections.ok()) {
		state.SkipWithError("cannot set up loopback connections");
		return;
	}
	const size_t ends = 2 * connections.sockets().size();
	for (auto _ : state) {
		auto tuples = stock::process_tcp_tuples(getpid());
		auto found = tuples ? stock::find_established_tcp(*tuples) : tuples;
		if (!found || found->size() != ends) {
			state.SkipWithError(found ? "a connection was not found" : found.error().message.c_str());
			return;
		}
		benchmark::DoNotOptimize(found->size());
	}
}
BENCHMARK(BM_ProcessTuples)->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
