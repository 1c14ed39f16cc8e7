// Socket scan and rank matching for the PMPI shim; see peer_exchange.hpp.
#include "peer_exchange.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
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

// A connection seen from either end: the two (address, port) ends in a canonical order.
using ConnKey = std::array<uint8_t, 36>;

ConnKey connection_key(const WireEndpoint &ep)
{
	std::array<uint8_t, 18> a{}, b{};
	std::memcpy(a.data(), ep.local_addr, 16);
	a[16] = ep.local_port >> 8;
	a[17] = ep.local_port & 0xff;
	std::memcpy(b.data(), ep.remote_addr, 16);
	b[16] = ep.remote_port >> 8;
	b[17] = ep.remote_port & 0xff;
	if (b < a)
		std::swap(a, b);
	ConnKey key;
	std::memcpy(key.data(), a.data(), 18);
	std::memcpy(key.data() + 18, b.data(), 18);
	return key;
}

struct ConnKeyHash {
	size_t operator()(const ConnKey &k) const noexcept
	{
		return fnv1a(0xcbf29ce484222325ULL, k.data(), k.size());
	}
};

// The ranks that published a connection: both ends when it is matched.
struct ConnEnds {
	int first = -1;
	int second = -1;
};

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

std::vector<LocalSocket> scan_tcp_sockets(size_t max_sockets)
{
	std::vector<LocalSocket> sockets;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return sockets;
	const int dir_fd = dirfd(dir);
	while (const dirent *entry = readdir(dir)) {
		if (sockets.size() >= max_sockets)
			break;
		char *end = nullptr;
		const long fd = std::strtol(entry->d_name, &end, 10);
		if (end == entry->d_name || *end != '\0' || fd == dir_fd)
			continue;
		sockaddr_storage local{}, remote{};
		socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
		// Most fds are not sockets; getsockname answers ENOTSOCK for them in one syscall.
		if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&local),
				&local_len) != 0)
			continue;
		if (local.ss_family != AF_INET && local.ss_family != AF_INET6)
			continue;
		int protocol = 0;
		socklen_t protocol_len = sizeof(protocol);
		if (getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_PROTOCOL, &protocol,
			       &protocol_len) != 0 || protocol != IPPROTO_TCP)
			continue;
		// Listening and unconnected sockets have no peer (ENOTCONN).
		if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr *>(&remote),
				&remote_len) != 0 || remote.ss_family != local.ss_family)
			continue;
		if (local.ss_family == AF_INET) {
			const auto &l = reinterpret_cast<const sockaddr_in &>(local);
			const auto &r = reinterpret_cast<const sockaddr_in &>(remote);
			sockets.push_back(make_local_socket(AF_INET, &l.sin_addr, ntohs(l.sin_port),
							    &r.sin_addr, ntohs(r.sin_port)));
		} else {
			const auto &l = reinterpret_cast<const sockaddr_in6 &>(local);
			const auto &r = reinterpret_cast<const sockaddr_in6 &>(remote);
			sockets.push_back(make_local_socket(AF_INET6, &l.sin6_addr, ntohs(l.sin6_port),
							    &r.sin6_addr, ntohs(r.sin6_port)));
		}
	}
	closedir(dir);
	return sockets;
}

uint64_t compute_host_key()
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
	utsname uts{};
	if (uname(&uts) == 0)
		hash = fnv1a(hash, uts.nodename, std::strlen(uts.nodename));
	return hash;
}

RankRecord make_rank_record(uint64_t host_key, uint32_t n_endpoints)
{
	RankRecord record{};
	record.host_key = host_key;
	record.n_endpoints = n_endpoints;
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

bool match_peers(int my_rank, std::span<const LocalSocket> mine,
		 std::span<const RankRecord> records, std::span<const WireEndpoint> endpoints,
		 PeerTable &table)
{
	table = PeerTable{};
	const size_t n_ranks = records.size();
	if (my_rank < 0 || static_cast<size_t>(my_rank) >= n_ranks)
		return false;
	std::vector<size_t> offset(n_ranks + 1, 0);
	for (size_t r = 0; r < n_ranks; r++)
		offset[r + 1] = offset[r] + records[r].n_endpoints;
	if (offset[n_ranks] != endpoints.size() || records[my_rank].n_endpoints != mine.size())
		return false;

	// Every published connection, with the ranks at its two ends.
	std::unordered_map<ConnKey, ConnEnds, ConnKeyHash> connections;
	connections.reserve(endpoints.size());
	for (size_t r = 0; r < n_ranks; r++) {
		for (size_t i = offset[r]; i < offset[r + 1]; i++) {
			ConnEnds &ends = connections[connection_key(endpoints[i])];
			if (ends.first < 0)
				ends.first = static_cast<int>(r);
			else if (ends.first != static_cast<int>(r) && ends.second < 0)
				ends.second = static_cast<int>(r);
		}
	}

	// Which rank pairs are joined, and whether any of them share a host.
	std::unordered_set<uint64_t> matched;
	bool local_pair_uses_tcp = false;
	for (const auto &[key, ends] : connections) {
		if (ends.second < 0)
			continue;
		const auto lo = static_cast<uint64_t>(std::min(ends.first, ends.second));
		const auto hi = static_cast<uint64_t>(std::max(ends.first, ends.second));
		if (matched.insert(lo * n_ranks + hi).second &&
		    records[lo].host_key == records[hi].host_key)
			local_pair_uses_tcp = true;
	}
	table.matched_pairs = matched.size();

	// Pairs that should be joined: all of them when local traffic uses TCP, else only
	// pairs across hosts. Counting per host keeps this O(ranks) rather than O(ranks^2).
	std::unordered_map<uint64_t, uint64_t> ranks_per_host;
	for (const RankRecord &rec : records)
		ranks_per_host[rec.host_key]++;
	const uint64_t all_pairs = static_cast<uint64_t>(n_ranks) * (n_ranks - 1) / 2;
	uint64_t same_host_pairs = 0;
	for (const auto &[host, count] : ranks_per_host)
		same_host_pairs += count * (count - 1) / 2;
	uint64_t wanted = all_pairs, wanted_matched = table.matched_pairs;
	if (!local_pair_uses_tcp)
		wanted -= same_host_pairs;	// and no matched pair is local
	table.any_unmapped = wanted_matched < wanted;

	// This rank's own peers.
	std::vector<bool> mapped(n_ranks, false);
	for (const LocalSocket &sock : mine) {
		const auto it = connections.find(connection_key(sock.wire));
		if (it == connections.end() || it->second.second < 0)
			continue;
		const int other = it->second.first == my_rank ? it->second.second : it->second.first;
		if (other == my_rank)
			continue;
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

	const uint64_t my_host = records[my_rank].host_key;
	for (size_t q = 0; q < n_ranks; q++) {
		if (static_cast<int>(q) == my_rank || mapped[q] || records[q].host_key == my_host)
			continue;
		const uint32_t n_addrs = std::min<uint32_t>(records[q].n_addrs, kMaxPublishedAddrs);
		for (uint32_t i = 0; i < n_addrs; i++) {
			gapctl_peer peer{};
			peer.fd = -1;
			if (records[q].addr_family[i] == 4)
				peer.family = AF_INET;
			else if (records[q].addr_family[i] == 6)
				peer.family = AF_INET6;
			else
				continue;
			std::memcpy(peer.addr, records[q].addrs[i], peer.family == AF_INET ? 4 : 16);
			peer.rank = static_cast<int32_t>(q);
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
