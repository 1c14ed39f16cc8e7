// The PMPI shim's endpoint exchange, one rank's share of it (libctl/mpi/peer_exchange.hpp):
// routing its sockets, matching what it received, confirming, building its peer table, for a
// communicator of N ranks, 16 per host, every pair across hosts connected over TCP (the
// lower rank connects to the higher one's listener, as after an all-to-all). The collectives
// are not run: the rank gets, in memory, exactly what they would deliver to it.
//
// Counters per rank: bytes_moved, what the collectives carry to and from it (the records of
// the Allgather, its endpoints and answers); gathered_before, what the full gather of
// session 36 received instead (every rank's endpoints).
#include <arpa/inet.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "peer_exchange.hpp"

namespace {

using gp::mpishim::EndpointExchange;
using gp::mpishim::ExchangeSums;
using gp::mpishim::ListenEndpoint;
using gp::mpishim::LocalSocket;
using gp::mpishim::PeerTable;
using gp::mpishim::RankRecord;

constexpr int kPerHost = 16;

in_addr host_addr(int rank)
{
	const int host = rank / kPerHost;
	in_addr a{};
	a.s_addr = htonl((10u << 24) | (static_cast<uint32_t>(host >> 8) << 16) |
			 (static_cast<uint32_t>(host & 0xff) << 8) | 1u);
	return a;
}

uint16_t listen_port(int rank) { return static_cast<uint16_t>(1024 + rank % kPerHost); }

// The ephemeral port rank `from` uses towards rank `to` (unique per host pair and rank).
uint16_t ephemeral_port(int from, int to)
{
	return static_cast<uint16_t>(20000 + (from % kPerHost) * 2048 + to % 2048);
}

struct RankView {
	std::vector<RankRecord> records;
	std::vector<LocalSocket> mine;
	std::vector<int> recv_counts;			// what the Alltoall of counts gives it
	std::vector<gp::mpishim::WireEndpoint> received;	// what the endpoint Alltoallv gives it
};

RankView make_view(int n, int me)
{
	RankView v;
	for (int q = 0; q < n; q++) {
		const in_addr a = host_addr(q), wildcard{};
		const ListenEndpoint any = gp::mpishim::make_listen_endpoint(AF_INET, &wildcard, listen_port(q));
		RankRecord rec = gp::mpishim::make_rank_record(100 + q / kPerHost, 100 + q / kPerHost,
							       std::span<const ListenEndpoint>(&any, 1), {});
		rec.n_addrs = 1;
		rec.addr_family[0] = 4;
		std::memcpy(rec.addrs[0], &a, 4);
		v.records.push_back(rec);
	}
	v.recv_counts.assign(n, 0);
	const in_addr mine = host_addr(me);
	for (int q = 0; q < n; q++) {
		if (q / kPerHost == me / kPerHost)
			continue;	// shared memory
		const in_addr other = host_addr(q);
		if (me < q) {	// this rank connected
			v.mine.push_back(gp::mpishim::make_local_socket(AF_INET, &mine, ephemeral_port(me, q), &other,
									 listen_port(q)));
		} else {	// q connected: this rank accepted, and receives q's end
			v.mine.push_back(gp::mpishim::make_local_socket(AF_INET, &mine, listen_port(me), &other,
									 ephemeral_port(q, me)));
			v.received.push_back(gp::mpishim::make_local_socket(AF_INET, &other, ephemeral_port(q, me),
									    &mine, listen_port(me))
						     .wire);
			v.recv_counts[q] = 1;
		}
	}
	// The records carry the sockets' local addresses as make_rank_record would.
	for (int q = 0; q < n; q++) {
		RankRecord &rec = v.records[q];
		const in_addr a = host_addr(q);
		const LocalSocket one = gp::mpishim::make_local_socket(AF_INET, &a, 1, &a, 2);
		std::memcpy(rec.socket_addrs[0], one.wire.local_addr, 16);
		rec.n_socket_addrs = 1;
	}
	return v;
}

// A rank in the middle of the communicator: it connects to half its peers and accepts the rest.
void BM_ExchangeOneRank(benchmark::State &state)
{
	const int n = static_cast<int>(state.range(0));
	const int me = n / 2;
	const RankView view = make_view(n, me);
	uint64_t moved = 0;
	for (auto _ : state) {
		EndpointExchange ex(me, n, view.mine);
		ex.route(view.records);
		if (!ex.expect(view.recv_counts)) {
			state.SkipWithError("expect failed");
			return;
		}
		std::copy(view.received.begin(), view.received.end(), ex.received().begin());
		ex.answer();
		// Every endpoint it sent is confirmed (its peers hold the reverse sockets).
		std::fill(ex.answers_in().begin(), ex.answers_in().end(), 1);
		const ExchangeSums sums = ex.confirm();
		PeerTable table;
		if (!ex.table(sums, table) || table.mapped_ranks != static_cast<uint32_t>(n - kPerHost)) {
			state.SkipWithError("the rank did not map every peer across hosts");
			return;
		}
		benchmark::DoNotOptimize(table.peers.data());
		// The records it receives, the counts both ways, its endpoints and answers both ways.
		moved = static_cast<uint64_t>(n) * sizeof(RankRecord) + 2 * static_cast<uint64_t>(n) * sizeof(int) +
			(ex.sent_count() + ex.received_count()) * (sizeof(gp::mpishim::WireEndpoint) + 1);
	}
	const auto sockets_per_rank = static_cast<double>(n - kPerHost);
	state.counters["bytes_moved"] = static_cast<double>(moved);
	state.counters["gathered_before"] =
		static_cast<double>(n) * sockets_per_rank * sizeof(gp::mpishim::WireEndpoint) +
		static_cast<double>(n) * 88.0;	// all endpoints, and session 36's 88-byte records
	state.counters["sockets"] = sockets_per_rank;
}
BENCHMARK(BM_ExchangeOneRank)->Arg(64)->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
