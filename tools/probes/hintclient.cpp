// gp-hintclient: a stand-in MPI rank for control-plane tests (host and guest). It holds TCP
// connections and sends hints through libgapctl's C ABI, driven line by line on stdin:
//
//   connect HOST PORT          open a TCP connection (kept); "connected LOCAL REMOTE"
//   begin KIND SIZE PEERS...   phase_begin; PEERS are addresses, or "fd" for every held
//                              connection as a tuple; "phase ID". The algorithm is pairwise
//                              (one peer at a time), or linear (all at once) if the first
//                              word after SIZE is "linear"
//   end ID                     phase_end; "ended ID"
//   pacing                     SO_MAX_PACING_RATE of every held connection; "pacing R..."
//   priority                   SO_PRIORITY of every held connection; "priority P..." (hex)
//   rto_min                    TCP_RTO_MIN_US of every held connection (Linux 6.15+);
//                              "rto_min US...", "-" where the kernel has no such option
//   send BYTES                 write BYTES (at most 1 MiB) on every held connection, as
//                              traffic outside any phase; "sent N" (bytes in all)
//   stats                      the library's counters as JSON
//   quit
// Every reply is one flushed line; errors print "error ..." and the client carries on.
// Environment: GAPCTL_NO_KERNEL=1 uses the daemon's socket even with the module loaded;
// GP_AS_UID=N drops to uid/gid N first (the guest's busybox has no setpriv).
#include <arpa/inet.h>
#include <netdb.h>
#include <grp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "endpoint.hpp"
#include "gapctl.h"

namespace {

// "10.0.0.1:5001", "[fd00::1]:5001", as ss prints it.
std::string endpoint_of(const sockaddr_storage &ss)
{
	if (ss.ss_family == AF_INET) {
		auto *a = reinterpret_cast<const sockaddr_in *>(&ss);
		return gp::format_endpoint(gp::make_endpoint(AF_INET, &a->sin_addr, ntohs(a->sin_port)));
	}
	auto *a = reinterpret_cast<const sockaddr_in6 *>(&ss);
	return gp::format_endpoint(gp::make_endpoint(AF_INET6, &a->sin6_addr, ntohs(a->sin6_port)));
}

int connect_to(const std::string &host, const std::string &port, std::string &error)
{
	addrinfo hints{}, *res = nullptr;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc) {
		error = gai_strerror(rc);
		return -1;
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	timeval limit{5, 0};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0) {
		error = std::strerror(errno);
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

} // namespace

int main()
{
	if (const char *uid = std::getenv("GP_AS_UID"); uid && *uid) {
		const auto id = static_cast<uid_t>(std::strtoul(uid, nullptr, 10));
		if (setgroups(0, nullptr) < 0 || setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0) {
			std::printf("error cannot become uid %u: %s\n", id, std::strerror(errno));
			return 1;
		}
	}
	gapctl_t *handle = nullptr;
	const char *no_kernel = std::getenv("GAPCTL_NO_KERNEL");
	if (int rc = gapctl_open(&handle, no_kernel && *no_kernel == '1' ? GAPCTL_OPEN_NO_KERNEL : 0); rc) {
		std::printf("error open %s\n", gapctl_strerror(rc));
		return 1;
	}
	std::vector<int> conns;
	std::string line;
	while (std::getline(std::cin, line)) {
		std::istringstream in(line);
		std::string cmd;
		if (!(in >> cmd))
			continue;
		if (cmd == "connect") {
			std::string host, port, error;
			in >> host >> port;
			int fd = connect_to(host, port, error);
			if (fd < 0) {
				std::printf("error connect %s\n", error.c_str());
			} else {
				conns.push_back(fd);
				sockaddr_storage l{}, r{};
				socklen_t ll = sizeof(l), rl = sizeof(r);
				getsockname(fd, reinterpret_cast<sockaddr *>(&l), &ll);
				getpeername(fd, reinterpret_cast<sockaddr *>(&r), &rl);
				std::printf("connected %s %s\n", endpoint_of(l).c_str(), endpoint_of(r).c_str());
			}
		} else if (cmd == "begin") {
			std::string kind_name, peer;
			uint64_t size = 0;
			in >> kind_name >> size;
			std::vector<gapctl_peer> peers;
			bool bad = false, linear = false;
			while (in >> peer) {
				if (peer == "linear" && peers.empty()) {
					linear = true;
					continue;
				}
				if (peer == "fd") {
					for (int fd : conns) {
						gapctl_peer p{};
						p.fd = fd;
						p.rank = static_cast<int32_t>(peers.size() + 1);
						peers.push_back(p);
					}
					continue;
				}
				gapctl_peer p{};
				p.fd = -1;
				p.rank = static_cast<int32_t>(peers.size() + 1);
				p.family = peer.find(':') != std::string::npos ? AF_INET6 : AF_INET;
				if (inet_pton(p.family, peer.c_str(), p.addr) != 1)
					bad = true;
				peers.push_back(p);
			}
			if (bad) {
				std::printf("error bad peer address\n");
			} else {
				gapctl_phase phase{};
				phase.struct_size = sizeof(phase);
				phase.kind = gapctl_kind_from_name(kind_name.c_str());
				phase.algorithm = linear ? GAPCTL_ALGORITHM_LINEAR : GAPCTL_ALGORITHM_PAIRWISE;
				phase.bytes_per_peer = size;
				phase.comm_size = static_cast<uint32_t>(peers.size() + 1);
				phase.rank = 0;
				phase.n_peers = static_cast<uint32_t>(peers.size());
				phase.peers = peers.data();
				uint64_t id = 0;
				int rc = gapctl_phase_begin(handle, &phase, &id);
				gapctl_flush(handle, 1000);
				if (rc)
					std::printf("error begin %s\n", gapctl_strerror(rc));
				else
					std::printf("phase %llu\n", static_cast<unsigned long long>(id));
			}
		} else if (cmd == "end") {
			unsigned long long id = 0;
			in >> id;
			int rc = gapctl_phase_end(handle, id, 1000);
			gapctl_flush(handle, 1000);
			if (rc)
				std::printf("error end %s\n", gapctl_strerror(rc));
			else
				std::printf("ended %llu\n", id);
		} else if (cmd == "pacing") {
			std::string out = "pacing";
			for (int fd : conns) {
				uint64_t rate = 0;
				socklen_t len = sizeof(rate);
				getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &len);
				out += " " + std::to_string(rate);
			}
			std::printf("%s\n", out.c_str());
		} else if (cmd == "rto_min") {
			std::string out = "rto_min";
			for (int fd : conns) {
				int microseconds = 0;
				socklen_t len = sizeof(microseconds);
				constexpr int kTcpRtoMinUs = 45; // Linux 6.15's uapi, newer than Debian 12's headers
				const bool known = getsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &microseconds, &len) == 0;
				out += known ? " " + std::to_string(microseconds) : std::string(" -");
			}
			std::printf("%s\n", out.c_str());
		} else if (cmd == "priority") {
			std::string out = "priority";
			for (int fd : conns) {
				int priority = 0;
				socklen_t len = sizeof(priority);
				getsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, &len);
				char hex[16];
				std::snprintf(hex, sizeof(hex), " %x", static_cast<unsigned>(priority));
				out += hex;
			}
			std::printf("%s\n", out.c_str());
		} else if (cmd == "send") {
			uint64_t bytes = 0;
			if (!(in >> bytes) || bytes == 0 || bytes > (1u << 20)) {
				std::printf("error send wants 1..1048576 bytes\n");
			} else {
				const std::vector<char> data(bytes, 's');
				uint64_t sent = 0;
				for (int fd : conns) {
					const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
					if (n > 0)
						sent += static_cast<uint64_t>(n);
				}
				std::printf("sent %llu\n", static_cast<unsigned long long>(sent));
			}
		} else if (cmd == "stats") {
			gapctl_stats s{};
			s.struct_size = sizeof(s);
			gapctl_get_stats(handle, &s);
			std::printf("{\"carrier\":%u,\"hints_queued\":%llu,\"hints_sent\":%llu,\"hints_dropped\":%llu,"
				    "\"hints_rejected\":%llu,\"carrier_errors\":%llu,\"hints_quiet\":%llu,\"hints_direct\":%llu,"
				    "\"doorbells\":%llu,\"timed_looks\":%llu}\n",
				    s.carrier, static_cast<unsigned long long>(s.hints_queued),
				    static_cast<unsigned long long>(s.hints_sent),
				    static_cast<unsigned long long>(s.hints_dropped),
				    static_cast<unsigned long long>(s.hints_rejected),
				    static_cast<unsigned long long>(s.carrier_errors),
				    static_cast<unsigned long long>(s.hints_quiet),
				    static_cast<unsigned long long>(s.hints_direct),
				    static_cast<unsigned long long>(s.doorbells),
				    static_cast<unsigned long long>(s.timed_looks));
		} else if (cmd == "quit") {
			break;
		} else {
			std::printf("error unknown command %s\n", cmd.c_str());
		}
		std::fflush(stdout);
	}
	for (int fd : conns)
		close(fd);
	gapctl_close(handle);
	return 0;
}
