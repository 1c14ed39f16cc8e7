// Socket scan and rank matching for the PMPI shim; see peer_exchange.hpp.
#include "peer_exchange.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "unique_fd.hpp"

namespace gp::mpishim {
namespace {

void to_mapped(int family, const void *addr, uint8_t out[16])
{
	if (family == AF_INET) {
		std::memset(out, 0, 10);
		out[10] = 0xff;
		out[11] = 0xff;
		std::memcpy(out + 12, addr, 4);
	} else {
		std::memcpy(out, addr, 16);
	}
}

uint64_t fnv1a(uint64_t hash, const void *data, size_t len)
{
	const auto *p = static_cast<const uint8_t *>(data);
	for (size_t i = 0; i < len; i++) {
		hash ^= p[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

bool is_loopback(const uint8_t addr[16])
{
	static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static constexpr uint8_t kIpv6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0,
						      0, 0, 0, 0, 0, 0, 0, 1};
	if (std::memcmp(addr, kMappedPrefix, 12) == 0)
		return addr[12] == 127;
	return std::memcmp(addr, kIpv6Loopback, 16) == 0;
}

// An address with a port, the key of a listening end.
using AddrPort = std::array<uint8_t, 18>;
// A connection as one end sees it: its local end, then its remote end.
using DirectedConn = std::array<uint8_t, 36>;

AddrPort addr_port(const uint8_t addr[16], uint16_t port)
{
	AddrPort key;
	std::memcpy(key.data(), addr, 16);
	key[16] = static_cast<uint8_t>(port >> 8);
	key[17] = static_cast<uint8_t>(port & 0xff);
	return key;
}

DirectedConn directed(const uint8_t local[16], uint16_t local_port, const uint8_t remote[16],
		      uint16_t remote_port)
{
	const AddrPort l = addr_port(local, local_port), r = addr_port(remote, remote_port);
	DirectedConn key;
	std::memcpy(key.data(), l.data(), 18);
	std::memcpy(key.data() + 18, r.data(), 18);
	return key;
}

struct BytesHash {
	template <size_t N>
	size_t operator()(const std::array<uint8_t, N> &k) const noexcept
	{
		return fnv1a(0xcbf29ce484222325ULL, k.data(), k.size());
	}
};

// A record's i-th address, IPv4-mapped; false for an unused or unknown entry.
bool record_addr(const RankRecord &rec, uint32_t i, uint8_t out[16])
{
	if (rec.addr_family[i] == 4)
		to_mapped(AF_INET, rec.addrs[i], out);
	else if (rec.addr_family[i] == 6)
		to_mapped(AF_INET6, rec.addrs[i], out);
	else
		return false;
	return true;
}

using Addr = std::array<uint8_t, 16>;

// The addresses a rank is reached at, for routing: its interface addresses and its sockets'
// local addresses, IPv4-mapped (with repeats; callers do not mind).
template <class F> void for_each_route_addr(const RankRecord &rec, F &&f)
{
	Addr addr;
	const uint32_t n_addrs = std::min<uint32_t>(rec.n_addrs, kMaxPublishedAddrs);
	for (uint32_t i = 0; i < n_addrs; i++)
		if (record_addr(rec, i, addr.data()))
			f(addr);
	const uint32_t n_socket = std::min<uint32_t>(rec.n_socket_addrs, kMaxSocketAddrs);
	for (uint32_t i = 0; i < n_socket; i++) {
		std::memcpy(addr.data(), rec.socket_addrs[i], 16);
		f(addr);
	}
}

} // namespace

LocalSocket make_local_socket(int family, const void *local_addr, uint16_t local_port,
			      const void *remote_addr, uint16_t remote_port)
{
	LocalSocket s{};
	s.family = family;
	const size_t len = family == AF_INET ? 4 : 16;
	std::memcpy(s.local_addr, local_addr, len);
	std::memcpy(s.remote_addr, remote_addr, len);
	s.local_port = local_port;
	s.remote_port = remote_port;
	to_mapped(family, local_addr, s.wire.local_addr);
	to_mapped(family, remote_addr, s.wire.remote_addr);
	s.wire.local_port = local_port;
	s.wire.remote_port = remote_port;
	return s;
}

ListenEndpoint make_listen_endpoint(int family, const void *addr, uint16_t port)
{
	static constexpr uint8_t kZero[16] = {};
	ListenEndpoint l{};
	l.port = port;
	if (std::memcmp(addr, kZero, family == AF_INET ? 4 : 16) == 0)
		l.wildcard = 1;
	else
		to_mapped(family, addr, l.addr);
	return l;
}

SocketScan scan_tcp_sockets(size_t max_sockets)
{
	SocketScan scan;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return scan;
	const int dir_fd = dirfd(dir);
	while (const dirent *entry = readdir(dir)) {
		if (scan.connected.size() >= max_sockets &&
		    scan.listeners.size() >= static_cast<size_t>(kMaxPublishedListeners))
			break;
		char *end = nullptr;
		const long fd_long = std::strtol(entry->d_name, &end, 10);
		if (end == entry->d_name || *end != '\0' || fd_long == dir_fd)
			continue;
		const int fd = static_cast<int>(fd_long);
		sockaddr_storage local{}, remote{};
		socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
		// Most fds are not sockets; getsockname answers ENOTSOCK for them in one syscall.
		if (getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_len) != 0)
			continue;
		if (local.ss_family != AF_INET && local.ss_family != AF_INET6)
			continue;
		int protocol = 0;
		socklen_t protocol_len = sizeof(protocol);
		if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &protocol_len) != 0 ||
		    protocol != IPPROTO_TCP)
			continue;
		const auto &l4 = reinterpret_cast<const sockaddr_in &>(local);
		const auto &l6 = reinterpret_cast<const sockaddr_in6 &>(local);
		const bool v4 = local.ss_family == AF_INET;
		const void *local_addr = v4 ? static_cast<const void *>(&l4.sin_addr) : &l6.sin6_addr;
		const uint16_t local_port = ntohs(v4 ? l4.sin_port : l6.sin6_port);
		// Listening and unconnected sockets have no peer (ENOTCONN).
		if (getpeername(fd, reinterpret_cast<sockaddr *>(&remote), &remote_len) != 0) {
			int listening = 0;
			socklen_t listening_len = sizeof(listening);
			if (scan.listeners.size() < static_cast<size_t>(kMaxPublishedListeners) &&
			    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &listening_len) == 0 &&
			    listening)
				scan.listeners.push_back(make_listen_endpoint(local.ss_family, local_addr,
									      local_port));
			continue;
		}
		if (remote.ss_family != local.ss_family || scan.connected.size() >= max_sockets)
			continue;
		const auto &r4 = reinterpret_cast<const sockaddr_in &>(remote);
		const auto &r6 = reinterpret_cast<const sockaddr_in6 &>(remote);
		scan.connected.push_back(make_local_socket(
			local.ss_family, local_addr, local_port,
			v4 ? static_cast<const void *>(&r4.sin_addr) : &r6.sin6_addr,
			ntohs(v4 ? r4.sin_port : r6.sin6_port)));
	}
	closedir(dir);
	return scan;
}

uint64_t compute_netns_key()
{
	uint64_t hash = 0xcbf29ce484222325ULL;
	char boot_id[64] = {};
	UniqueFd fd(open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC));
	if (fd) {
		const ssize_t n = read(fd.get(), boot_id, sizeof(boot_id) - 1);
		if (n > 0)
			hash = fnv1a(hash, boot_id, static_cast<size_t>(n));
	}
	struct stat netns{};
	if (stat("/proc/self/ns/net", &netns) == 0) {
		hash = fnv1a(hash, &netns.st_dev, sizeof(netns.st_dev));
		hash = fnv1a(hash, &netns.st_ino, sizeof(netns.st_ino));
	}
	return hash;
}

uint64_t compute_host_key()
{
	uint64_t hash = compute_netns_key();
	utsname uts{};
	if (uname(&uts) == 0)
		hash = fnv1a(hash, uts.nodename, std::strlen(uts.nodename));
	return hash;
}

RankRecord make_rank_record(uint64_t host_key, uint64_t netns_key,
			    std::span<const ListenEndpoint> listeners,
			    std::span<const LocalSocket> connected)
{
	RankRecord record{};
	record.host_key = host_key;
	record.netns_key = netns_key;
	for (const ListenEndpoint &l : listeners) {
		if (record.n_listeners >= static_cast<uint32_t>(kMaxPublishedListeners))
			break;
		record.listeners[record.n_listeners++] = l;
	}
	for (const LocalSocket &sock : connected) {
		if (record.n_socket_addrs >= static_cast<uint32_t>(kMaxSocketAddrs))
			break;
		if (is_loopback(sock.wire.local_addr))
			continue;
		bool known = false;
		for (uint32_t i = 0; i < record.n_socket_addrs && !known; i++)
			known = std::memcmp(record.socket_addrs[i], sock.wire.local_addr, 16) == 0;
		if (!known)
			std::memcpy(record.socket_addrs[record.n_socket_addrs++], sock.wire.local_addr, 16);
	}
	ifaddrs *list = nullptr;
	if (getifaddrs(&list) != 0)
		return record;
	// Two passes: IPv4 first, since MPI's TCP transports prefer it.
	for (const int family : {AF_INET, AF_INET6}) {
		for (const ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
			if (record.n_addrs >= kMaxPublishedAddrs)
				break;
			if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family)
				continue;
			if (!(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK))
				continue;
			const uint32_t i = record.n_addrs;
			if (family == AF_INET) {
				const auto *sin = reinterpret_cast<const sockaddr_in *>(ifa->ifa_addr);
				std::memcpy(record.addrs[i], &sin->sin_addr, 4);
				record.addr_family[i] = 4;
			} else {
				const auto *sin6 = reinterpret_cast<const sockaddr_in6 *>(ifa->ifa_addr);
				if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr))
					continue;
				std::memcpy(record.addrs[i], &sin6->sin6_addr, 16);
				record.addr_family[i] = 6;
			}
			record.n_addrs++;
		}
	}
	freeifaddrs(list);
	return record;
}

EndpointExchange::EndpointExchange(int my_rank, int n_ranks, std::vector<LocalSocket> mine)
	: my_rank_(my_rank), n_ranks_(std::max(n_ranks, 0)), mine_(std::move(mine)),
	  peer_of_(mine_.size(), -1), send_counts_(n_ranks_, 0), send_displs_(n_ranks_, 0),
	  recv_counts_(n_ranks_, 0), recv_displs_(n_ranks_, 0)
{
	if (my_rank_ < 0 || my_rank_ >= n_ranks_)
		failed_ = true;
}

void EndpointExchange::abandon() noexcept
{
	failed_ = true;
	std::fill(send_counts_.begin(), send_counts_.end(), 0);
	std::fill(send_displs_.begin(), send_displs_.end(), 0);
	sent_.clear();
	sent_socket_.clear();
	std::fill(peer_of_.begin(), peer_of_.end(), -1);
}

void EndpointExchange::route(std::span<const RankRecord> records)
{
	records_ = records;
	if (failed_ || records.size() != static_cast<size_t>(n_ranks_)) {
		abandon();
		return;
	}
	try {
		const RankRecord &me = records[my_rank_];
		// An address several hosts claim (a container bridge's default, say) names no one
		// host: it routes nothing.
		std::unordered_map<Addr, uint64_t, BytesHash> addr_host;
		std::unordered_set<Addr, BytesHash> ambiguous;
		std::unordered_map<uint64_t, uint64_t> ranks_per_host;
		for (const RankRecord &rec : records) {
			ranks_per_host[rec.host_key]++;
			for_each_route_addr(rec, [&](const Addr &addr) {
				const auto [it, fresh] = addr_host.emplace(addr, rec.host_key);
				if (!fresh && it->second != rec.host_key)
					ambiguous.insert(addr);
			});
		}
		const auto n = static_cast<uint64_t>(n_ranks_);
		all_pairs_ = n * (n - 1) / 2;
		same_host_pairs_ = 0;
		for (const auto &[host, count] : ranks_per_host)
			same_host_pairs_ += count * (count - 1) / 2;

		// Who listens where: (address, port) for every published listener (a wildcard
		// one under each address its rank is reached at), and by port alone for the
		// wildcard listeners of this network namespace, which loopback reaches.
		std::unordered_map<AddrPort, std::vector<int>, BytesHash> listener_owners;
		std::unordered_map<uint16_t, std::vector<int>> local_wildcard_owners;
		std::unordered_map<Addr, std::vector<int>, BytesHash> addr_owners;
		std::vector<int> my_netns_ranks;
		for (int q = 0; q < n_ranks_; q++) {
			const RankRecord &rec = records[q];
			const bool my_netns = rec.netns_key == me.netns_key;
			if (my_netns && q != my_rank_)
				my_netns_ranks.push_back(q);
			for_each_route_addr(rec, [&](const Addr &addr) {
				if (ambiguous.count(addr))
					return;
				std::vector<int> &owners = addr_owners[addr];
				if (owners.empty() || owners.back() != q)	// an address listed twice
					owners.push_back(q);
			});
			const uint32_t n_listeners =
				std::min<uint32_t>(rec.n_listeners, kMaxPublishedListeners);
			for (uint32_t j = 0; j < n_listeners; j++) {
				const ListenEndpoint &l = rec.listeners[j];
				if (!l.wildcard) {
					listener_owners[addr_port(l.addr, l.port)].push_back(q);
					continue;
				}
				if (my_netns)
					local_wildcard_owners[l.port].push_back(q);
				for_each_route_addr(rec, [&](const Addr &addr) {
					if (ambiguous.count(addr))
						return;
					std::vector<int> &owners = listener_owners[addr_port(addr.data(), l.port)];
					if (owners.empty() || owners.back() != q)
						owners.push_back(q);
				});
			}
		}
		const auto reaches_me = [&](const ListenEndpoint &l, const WireEndpoint &w) {
			if (l.port != w.local_port)
				return false;
			if (!l.wildcard)
				return std::memcmp(l.addr, w.local_addr, 16) == 0;
			if (is_loopback(w.local_addr))
				return true;
			Addr local;
			std::memcpy(local.data(), w.local_addr, 16);
			bool reached = false;
			if (!ambiguous.count(local))
				for_each_route_addr(me, [&](const Addr &addr) { reached = reached || addr == local; });
			return reached;
		};

		std::vector<std::pair<int, uint32_t>> sends;	// (destination, socket)
		std::vector<int> candidates;
		for (uint32_t s = 0; s < mine_.size(); s++) {
			const WireEndpoint &w = mine_[s].wire;
			// Rule 1: accepted by one of this rank's published listeners.
			bool accepted = false;
			for (uint32_t j = 0; j < std::min<uint32_t>(me.n_listeners,
								    kMaxPublishedListeners); j++)
				accepted = accepted || reaches_me(me.listeners[j], w);
			if (accepted)
				continue;
			// Rule 2: connected to a published listener.
			candidates.clear();
			const bool loopback = is_loopback(w.remote_addr);
			if (const auto it = listener_owners.find(addr_port(w.remote_addr, w.remote_port));
			    it != listener_owners.end())
				for (const int q : it->second)
					if (!loopback || records[q].netns_key == me.netns_key)
						candidates.push_back(q);
			if (loopback)
				if (const auto it = local_wildcard_owners.find(w.remote_port);
				    it != local_wildcard_owners.end())
					candidates.insert(candidates.end(), it->second.begin(),
							  it->second.end());
			// Rule 3: every rank of the host with the remote address.
			if (candidates.empty()) {
				if (loopback) {
					candidates = my_netns_ranks;
				} else {
					Addr addr;
					std::memcpy(addr.data(), w.remote_addr, 16);
					if (const auto it = addr_owners.find(addr); it != addr_owners.end())
						candidates = it->second;
				}
			}
			std::sort(candidates.begin(), candidates.end());
			candidates.erase(std::unique(candidates.begin(), candidates.end()),
					 candidates.end());
			for (const int q : candidates)
				if (q != my_rank_)
					sends.emplace_back(q, s);
		}
		std::stable_sort(sends.begin(), sends.end(),
				 [](const auto &a, const auto &b) { return a.first < b.first; });
		if (sends.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
			abandon();
			return;
		}
		sent_.resize(sends.size());
		sent_socket_.resize(sends.size());
		for (size_t i = 0; i < sends.size(); i++) {
			sent_[i] = mine_[sends[i].second].wire;
			sent_socket_[i] = sends[i].second;
			send_counts_[sends[i].first]++;
		}
		int displ = 0;
		for (int q = 0; q < n_ranks_; q++) {
			send_displs_[q] = displ;
			displ += send_counts_[q];
		}
	} catch (const std::bad_alloc &) {
		abandon();
	}
}

bool EndpointExchange::expect(std::span<const int> recv_counts) noexcept
{
	// The counts come from the other ranks' routes; this rank must receive exactly them,
	// so a failure here cannot be turned into zero counts.
	if (recv_counts.size() != static_cast<size_t>(n_ranks_)) {
		failed_ = true;
		return false;
	}
	int64_t total = 0;
	for (int q = 0; q < n_ranks_; q++) {
		total += recv_counts[q];
		if (recv_counts[q] < 0 || (q == my_rank_ && recv_counts[q] != 0) ||
		    total > std::numeric_limits<int>::max()) {
			failed_ = true;
			return false;
		}
		recv_counts_[q] = recv_counts[q];
		recv_displs_[q] = static_cast<int>(total - recv_counts[q]);
	}
	try {
		received_.assign(static_cast<size_t>(total), WireEndpoint{});
		answers_out_.assign(static_cast<size_t>(total), 0);
		answers_in_.assign(sent_.size(), 0);
	} catch (const std::bad_alloc &) {
		failed_ = true;
		return false;
	}
	return true;
}

void EndpointExchange::answer()
{
	if (failed_)
		return;	// answers stay 0: nothing here is mapped
	try {
		std::unordered_map<DirectedConn, uint32_t, BytesHash> by_tuple;
		by_tuple.reserve(mine_.size());
		for (uint32_t s = 0; s < mine_.size(); s++) {
			const WireEndpoint &w = mine_[s].wire;
			by_tuple.emplace(directed(w.local_addr, w.local_port, w.remote_addr,
						  w.remote_port), s);
		}
		for (int q = 0; q < n_ranks_; q++) {
			for (int i = recv_displs_[q]; i < recv_displs_[q] + recv_counts_[q]; i++) {
				const WireEndpoint &e = received_[i];
				// Rank q's (L, R) is this rank's (R, L).
				const auto it = by_tuple.find(directed(e.remote_addr, e.remote_port,
								       e.local_addr, e.local_port));
				if (it == by_tuple.end())
					continue;
				int &peer = peer_of_[it->second];
				if (peer < 0)
					peer = q;
				// A socket two ranks claim (shared by fork) stays with the first.
				answers_out_[i] = peer == q ? 1 : 0;
			}
		}
	} catch (const std::bad_alloc &) {
		failed_ = true;
		std::fill(answers_out_.begin(), answers_out_.end(), 0);
		std::fill(peer_of_.begin(), peer_of_.end(), -1);
	}
}

ExchangeSums EndpointExchange::confirm()
{
	ExchangeSums sums;
	if (failed_) {
		sums.failed = 1;
		return sums;
	}
	for (int q = 0; q < n_ranks_; q++) {
		for (int i = send_displs_[q]; i < send_displs_[q] + send_counts_[q]; i++) {
			int &peer = peer_of_[sent_socket_[i]];
			if (answers_in_[i] && peer < 0)
				peer = q;
		}
	}
	try {
		std::vector<bool> counted(n_ranks_, false);
		for (const int peer : peer_of_) {
			if (peer < 0 || counted[peer])
				continue;
			counted[peer] = true;
			sums.mapped_ranks++;
			if (records_[peer].host_key == records_[my_rank_].host_key)
				sums.local_mapped++;
		}
	} catch (const std::bad_alloc &) {
		abandon();
		return ExchangeSums{0, 0, 1};
	}
	return sums;
}

bool EndpointExchange::any_unmapped(const ExchangeSums &sums) const noexcept
{
	// Pairs that should be joined: all of them when local traffic uses TCP, else only
	// pairs across hosts (route() counted both, per host: O(ranks), not O(ranks^2)).
	const uint64_t wanted = sums.local_mapped > 0 ? all_pairs_ : all_pairs_ - same_host_pairs_;
	return matched_pairs(sums) < wanted;
}

bool EndpointExchange::table(const ExchangeSums &sums, PeerTable &table) const
{
	table = PeerTable{};
	if (sums.failed > 0 || failed_)
		return false;
	table.matched_pairs = matched_pairs(sums);
	table.any_unmapped = any_unmapped(sums);

	// This rank's own peers: its mapped sockets, in rank order.
	std::vector<bool> mapped(n_ranks_, false);
	for (size_t s = 0; s < mine_.size(); s++) {
		const int other = peer_of_[s];
		if (other < 0)
			continue;
		const LocalSocket &sock = mine_[s];
		gapctl_peer peer{};
		peer.fd = -1;
		peer.family = sock.family;
		std::memcpy(peer.addr, sock.remote_addr, 16);
		std::memcpy(peer.local_addr, sock.local_addr, 16);
		peer.port = sock.remote_port;
		peer.local_port = sock.local_port;
		peer.rank = other;
		table.peers.push_back(peer);
		if (!mapped[other]) {
			mapped[other] = true;
			table.mapped_ranks++;
		}
	}
	std::stable_sort(table.peers.begin(), table.peers.end(),
			 [](const gapctl_peer &a, const gapctl_peer &b) { return a.rank < b.rank; });
	table.tuple_peers = static_cast<uint32_t>(table.peers.size());

	// Then the address form for ranks on other hosts that no socket reaches yet.
	const uint64_t my_host = records_[my_rank_].host_key;
	for (int q = 0; q < n_ranks_; q++) {
		if (q == my_rank_ || mapped[q] || records_[q].host_key == my_host)
			continue;
		const RankRecord &rec = records_[q];
		const uint32_t n_addrs = std::min<uint32_t>(rec.n_addrs, kMaxPublishedAddrs);
		for (uint32_t i = 0; i < n_addrs; i++) {
			gapctl_peer peer{};
			peer.fd = -1;
			if (rec.addr_family[i] == 4)
				peer.family = AF_INET;
			else if (rec.addr_family[i] == 6)
				peer.family = AF_INET6;
			else
				continue;
			std::memcpy(peer.addr, rec.addrs[i], peer.family == AF_INET ? 4 : 16);
			peer.rank = q;
			table.peers.push_back(peer);
			table.address_peers++;
		}
	}
	return true;
}

std::string format_tuple(const gapctl_peer &peer)
{
	char local[INET6_ADDRSTRLEN] = "?", remote[INET6_ADDRSTRLEN] = "?";
	inet_ntop(peer.family, peer.local_addr, local, sizeof(local));
	inet_ntop(peer.family, peer.addr, remote, sizeof(remote));
	char out[2 * INET6_ADDRSTRLEN + 32];
	if (peer.family == AF_INET6)
		snprintf(out, sizeof(out), "[%s]:%u>[%s]:%u", local, peer.local_port, remote,
			 peer.port);
	else
		snprintf(out, sizeof(out), "%s:%u>%s:%u", local, peer.local_port, remote, peer.port);
	return out;
}

} // namespace gp::mpishim
