// The socket table: established TCP sockets from sock_diag, and which of them a process holds.
#include <dirent.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "internal.hpp"
#include "netlink.hpp"

namespace gp::stock {
namespace {

using detail::system_error;

bool matches(const TcpSocket &socket, const SocketFilter &filter)
{
	if (filter.uid && socket.uid != *filter.uid)
		return false;
	if (filter.remote) {
		const Endpoint wanted = unmapped(*filter.remote);
		if (socket.remote.family != wanted.family ||
		    std::memcmp(socket.remote.address.data(), wanted.address.data(), wanted.address_size()) != 0)
			return false;
		if (wanted.port != 0 && socket.remote.port != wanted.port)
			return false;
	}
	return true;
}

void encode_established_dump(RequestBuffer &request, uint8_t family, uint8_t extensions = 0)
{
	nlmsghdr *nlh = request.nlh();
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	auto *req = static_cast<inet_diag_req_v2 *>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req_v2)));
	req->sdiag_family = family;
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = 1U << TCP_ESTABLISHED;
	req->idiag_ext = extensions;
}

Expected<const inet_diag_msg *> diag_message(const nlmsghdr *nlh)
{
	if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY || mnl_nlmsg_get_payload_len(nlh) < sizeof(inet_diag_msg))
		return make_error(EBADMSG, "malformed sock_diag message in kernel reply");
	return static_cast<const inet_diag_msg *>(mnl_nlmsg_get_payload(nlh));
}

Expected<NetlinkSocket> open_sock_diag()
{
	auto netlink = NetlinkSocket::open(NETLINK_SOCK_DIAG);
	if (!netlink)
		return detail::with_context(netlink.error(), "cannot open a sock_diag socket");
	return netlink;
}

// Every established TCP socket of this netns, IPv4 then IPv6, with the `extensions`
// (1 << (INET_DIAG_* - 1)) asked for. A state filter is a request, not a promise: the handler
// sees only messages whose state is checked.
Expected<void> dump_established(uint8_t extensions,
				const std::function<Expected<void>(const nlmsghdr *, const inet_diag_msg &)> &handler)
{
	auto netlink = open_sock_diag();
	if (!netlink)
		return netlink.error();
	for (const uint8_t family : {AF_INET, AF_INET6}) {
		RequestBuffer request;
		encode_established_dump(request, family, extensions);
		auto done = netlink->transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
			auto msg = diag_message(nlh);
			if (!msg)
				return msg.error();
			return (*msg)->idiag_state == TCP_ESTABLISHED ? handler(nlh, **msg) : Expected<void>{};
		});
		if (!done)
			return detail::with_context(done.error(), family == AF_INET ? "sock_diag dump of IPv4 TCP sockets"
										 : "sock_diag dump of IPv6 TCP sockets");
	}
	return {};
}

// One socket by its 4-tuple: sock_diag's exact lookup (no NLM_F_DUMP), a lookup in the
// kernel's established hash. A dump walks every bucket of that hash, which all network
// namespaces share: 262144 buckets (the size the kernel chose for 24 GiB) took about 4 ms of CPU
// per family whether the namespace had 16 sockets or none, and the daemons of the 16-host
// benchmark cluster, reading the table each tick, spent 40 % of its 2 CPUs on it
// (Documentation/performance/socket-lookup-session30). An IPv4 tuple also finds a dual-stack
// socket's IPv4 connection: it is hashed by its IPv4 addresses. The kernel does not look at the
// states asked for (it answers with the socket in whatever state it is): the caller checks.
void encode_exact_lookup(nlmsghdr *nlh, const Endpoint &local, const Endpoint &remote, uint8_t extensions)
{
	nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	auto *req = static_cast<inet_diag_req_v2 *>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req_v2)));
	req->sdiag_family = static_cast<uint8_t>(local.family);
	req->sdiag_protocol = IPPROTO_TCP;
	req->idiag_states = 1U << TCP_ESTABLISHED;
	req->idiag_ext = extensions;
	req->id.idiag_sport = htons(local.port);
	req->id.idiag_dport = htons(remote.port);
	std::memcpy(req->id.idiag_src, local.address.data(), local.address_size());
	std::memcpy(req->id.idiag_dst, remote.address.data(), remote.address_size());
	req->id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

// Every request of a batch has this size: a header and the fixed inet_diag_req_v2.
constexpr size_t kLookupRequestSize = MNL_ALIGN(sizeof(nlmsghdr)) + MNL_ALIGN(sizeof(inet_diag_req_v2));
// An exact lookup's reply is one message of about 1 KB with tcp_info; 8 KB leaves room for
// what later kernels add (a truncated one is an error, not a misread). Replies and ACKs: two
// datagrams per request.
constexpr size_t kReplySlotSize = 8192;
constexpr size_t kReplySlots = 2 * SocketTable::kLookupBatch;

struct BatchDeleter {
	void operator()(mnl_nlmsg_batch *batch) const noexcept { mnl_nlmsg_batch_stop(batch); }
};

Error lookup_failure(const Error &error, const TcpSocket &tuple)
{
	return detail::with_context(error, "sock_diag lookup of " + format_endpoint(tuple.local) + " -> " +
						   format_endpoint(tuple.remote));
}

Expected<TcpSocket> decode_socket(const nlmsghdr *nlh)
{
	auto message = diag_message(nlh);
	if (!message)
		return message.error();
	const inet_diag_msg *msg = *message;
	if (msg->idiag_family != AF_INET && msg->idiag_family != AF_INET6)
		return make_error(EBADMSG, "sock_diag reply of unknown family " + std::to_string(msg->idiag_family));
	TcpSocket socket;
	socket.socket_family = msg->idiag_family;
	socket.local = unmapped(make_endpoint(msg->idiag_family, msg->id.idiag_src, ntohs(msg->id.idiag_sport)));
	socket.remote = unmapped(make_endpoint(msg->idiag_family, msg->id.idiag_dst, ntohs(msg->id.idiag_dport)));
	socket.uid = msg->idiag_uid;
	socket.inode = msg->idiag_inode;
	return socket;
}

// "socket:[12345]" -> 12345
std::optional<uint64_t> socket_inode_of_link(std::string_view link)
{
	constexpr std::string_view prefix = "socket:[";
	if (link.size() <= prefix.size() + 1 || link.substr(0, prefix.size()) != prefix || link.back() != ']')
		return std::nullopt;
	const std::string_view digits = link.substr(prefix.size(), link.size() - prefix.size() - 1);
	uint64_t inode = 0;
	auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), inode);
	if (ec != std::errc() || end != digits.data() + digits.size())
		return std::nullopt;
	return inode;
}

Error no_such_process(pid_t pid)
{
	return make_error(ESRCH, "process " + std::to_string(pid) + " does not exist");
}

} // namespace

Expected<std::vector<TcpSocket>> list_established_tcp(const SocketFilter &filter)
{
	if (filter.remote && filter.remote->family != AF_INET && filter.remote->family != AF_INET6)
		return make_error(EINVAL, "socket filter: the remote address must be IPv4 or IPv6");
	std::vector<TcpSocket> sockets;
	auto done = dump_established(0, [&](const nlmsghdr *nlh, const inet_diag_msg &) -> Expected<void> {
		auto socket = decode_socket(nlh);
		if (!socket)
			return socket.error();
		if (socket->inode != 0 && matches(*socket, filter))
			sockets.push_back(*socket);
		return {};
	});
	if (!done)
		return done.error();
	return sockets;
}

Expected<SocketTable> SocketTable::open()
{
	auto netlink = open_sock_diag();
	if (!netlink)
		return netlink.error();
	// The kernel answers a batch before its sendmsg returns, and acknowledges every request
	// (or reports ENOBUFS where it could not queue an answer): a wait this long means a bug,
	// and the daemon's loop must not hang on it.
	const timeval timeout{.tv_sec = 1, .tv_usec = 0};
	if (::setsockopt(netlink->fd(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0)
		return system_error(errno, "sock_diag socket: cannot set a receive timeout");
	return SocketTable(std::move(*netlink));
}

Expected<void> SocketTable::lookup(std::span<const TcpSocket> tuples, uint8_t extensions,
				   const std::function<Expected<void>(size_t, const nlmsghdr *)> &on_reply)
{
	// All tuples are checked before the first is asked for.
	for (const TcpSocket &tuple : tuples)
		if ((tuple.local.family != AF_INET && tuple.local.family != AF_INET6) ||
		    tuple.remote.family != tuple.local.family)
			return make_error(EINVAL, "socket lookup: " + format_endpoint(tuple.local) + " -> " +
							  format_endpoint(tuple.remote) + " is not an IPv4 or IPv6 tuple");
	for (size_t first = 0; first < tuples.size(); first += kLookupBatch) {
		const auto batch = tuples.subspan(first, std::min(kLookupBatch, tuples.size() - first));
		if (auto done = lookup_batch(batch, first, extensions, on_reply); !done)
			return done.error();
	}
	return {};
}

Expected<void> SocketTable::lookup_batch(std::span<const TcpSocket> tuples, size_t first_index, uint8_t extensions,
					 const std::function<Expected<void>(size_t, const nlmsghdr *)> &on_reply)
{
	// libmnl's batch wants room for one message past its limit.
	alignas(nlmsghdr) char requests[2 * kLookupBatch * kLookupRequestSize];
	const std::unique_ptr<mnl_nlmsg_batch, BatchDeleter> batch(
		mnl_nlmsg_batch_start(requests, kLookupBatch * kLookupRequestSize));
	if (!batch)
		return make_error(ENOMEM, "sock_diag lookup: no memory for a batch");
	const uint32_t first_seq = next_seq_;
	for (const TcpSocket &tuple : tuples) {
		nlmsghdr *nlh = mnl_nlmsg_put_header(mnl_nlmsg_batch_current(batch.get()));
		encode_exact_lookup(nlh, tuple.local, tuple.remote, extensions);
		nlh->nlmsg_seq = next_seq_++;
		mnl_nlmsg_batch_next(batch.get());
	}
	if (mnl_socket_sendto(netlink_.raw(), mnl_nlmsg_batch_head(batch.get()), mnl_nlmsg_batch_size(batch.get())) < 0)
		return system_error(errno, "sock_diag lookup: cannot send");
	lookups_sent_ += tuples.size();
	++batches_sent_;

	if (!reply_slots_)
		reply_slots_.reset(new char[kReplySlots * kReplySlotSize]); // uninitialised on purpose
	std::array<iovec, kReplySlots> iov{};
	std::array<mmsghdr, kReplySlots> datagrams{};
	std::array<bool, kLookupBatch> answered{};
	size_t pending = tuples.size();
	std::optional<Error> failure; // the first; the batch is still read to its end
	while (pending > 0) {
		for (size_t i = 0; i < kReplySlots; ++i) {
			iov[i] = {reply_slots_.get() + i * kReplySlotSize, kReplySlotSize};
			datagrams[i].msg_hdr = {};
			datagrams[i].msg_hdr.msg_iov = &iov[i];
			datagrams[i].msg_hdr.msg_iovlen = 1;
		}
		// The kernel answered every request before sendmsg returned: this wait is for none.
		const int received = ::recvmmsg(netlink_.fd(), datagrams.data(), kReplySlots, MSG_WAITFORONE, nullptr);
		if (received < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return make_error(ETIMEDOUT, "sock_diag lookup: " + std::to_string(pending) +
								     " requests unanswered after 1 s");
			return system_error(errno, "sock_diag lookup: cannot receive");
		}
		for (int d = 0; d < received; ++d) {
			if (datagrams[d].msg_hdr.msg_flags & MSG_TRUNC)
				return make_error(EMSGSIZE, "sock_diag lookup: a reply larger than " +
								    std::to_string(kReplySlotSize) + " bytes");
			int left = static_cast<int>(datagrams[d].msg_len);
			for (auto *nlh = reinterpret_cast<const nlmsghdr *>(iov[d].iov_base); mnl_nlmsg_ok(nlh, left);
			     nlh = mnl_nlmsg_next(nlh, &left)) {
				const uint32_t offset = nlh->nlmsg_seq - first_seq;
				if (offset >= tuples.size() || answered[offset])
					continue; // of an earlier batch that failed
				const TcpSocket &tuple = tuples[offset];
				if (nlh->nlmsg_type == NLMSG_ERROR) {
					// The ACK, or the error in its place; ENOENT: nobody's tuple.
					const std::span<const char> request(requests + offset * kLookupRequestSize,
									    kLookupRequestSize);
					if (auto error = decode_ack(nlh, request); error && error->err != ENOENT && !failure)
						failure = lookup_failure(*error, tuple);
					answered[offset] = true;
					--pending;
				} else if (nlh->nlmsg_type < NLMSG_MIN_TYPE) {
					continue; // NLMSG_NOOP
				} else if (!failure) {
					auto msg = diag_message(nlh);
					if (!msg)
						failure = lookup_failure(msg.error(), tuple);
					else if ((*msg)->idiag_state != TCP_ESTABLISHED)
						continue;
					else if (auto handled = on_reply(first_index + offset, nlh); !handled)
						failure = lookup_failure(handled.error(), tuple);
				}
			}
		}
	}
	if (failure)
		return std::move(*failure);
	return {};
}

Expected<std::vector<TcpSocket>> SocketTable::find_established(std::span<const TcpSocket> tuples)
{
	// In the order of the tuples; one socket per tuple at most.
	std::vector<std::optional<TcpSocket>> by_tuple(tuples.size());
	auto done = lookup(tuples, 0, [&](size_t index, const nlmsghdr *nlh) -> Expected<void> {
		auto socket = decode_socket(nlh);
		if (!socket)
			return socket.error();
		if (socket->inode != 0)
			by_tuple[index] = *socket;
		return {};
	});
	if (!done)
		return done.error();
	std::vector<TcpSocket> sockets;
	for (auto &socket : by_tuple)
		if (socket)
			sockets.push_back(*socket);
	return sockets;
}

Expected<std::map<uint64_t, uint64_t>> SocketTable::written_bytes(std::span<const TcpSocket> sockets)
{
	std::map<uint64_t, uint64_t> written;
	auto done = lookup(sockets, 1U << (INET_DIAG_INFO - 1), [&](size_t index, const nlmsghdr *nlh) -> Expected<void> {
		auto message = diag_message(nlh);
		if (!message)
			return message.error();
		const inet_diag_msg &msg = **message;
		if (msg.idiag_inode != sockets[index].inode) // the tuple is another socket's now
			return {};
		const AttrIndex attrs = AttrIndex::of_message(nlh, sizeof(inet_diag_msg), INET_DIAG_MAX);
		const nlattr *info = attrs[INET_DIAG_INFO];
		if (!info)
			return make_error(EPROTO, "sock_diag sent no tcp_info for socket " + std::to_string(msg.idiag_inode));
		const auto acked =
			detail::tcp_info_bytes_acked(mnl_attr_get_payload(info), mnl_attr_get_payload_len(info));
		if (!acked)
			return make_error(EPROTO, "this kernel's tcp_info has no tcpi_bytes_acked (Linux 4.1+)");
		// idiag_wqueue: write_seq - snd_una, the bytes written and not yet acknowledged.
		written[msg.idiag_inode] = *acked + msg.idiag_wqueue;
		return {};
	});
	if (!done)
		return done.error();
	return written;
}

Expected<std::vector<TcpSocket>> find_established_tcp(std::span<const TcpSocket> tuples)
{
	if (tuples.empty())
		return std::vector<TcpSocket>{};
	auto table = SocketTable::open();
	if (!table)
		return table.error();
	return table->find_established(tuples);
}

Expected<std::map<uint64_t, uint64_t>> written_bytes(std::span<const TcpSocket> sockets)
{
	if (sockets.empty())
		return std::map<uint64_t, uint64_t>{};
	auto table = SocketTable::open();
	if (!table)
		return table.error();
	return table->written_bytes(sockets);
}

Expected<std::vector<ProcessSocket>> process_sockets(pid_t pid, std::span<const uint64_t> inodes)
{
	if (pid <= 0)
		return make_error(EINVAL, "invalid pid " + std::to_string(pid));
	const std::string directory = "/proc/" + std::to_string(pid) + "/fd";
	DIR *dir = opendir(directory.c_str());
	if (!dir) {
		const int err = errno;
		if (err == ENOENT)
			return no_such_process(pid);
		return system_error(err, "cannot list " + directory);
	}
	std::vector<ProcessSocket> found;
	const int dir_fd = dirfd(dir);
	while (const dirent *entry = readdir(dir)) {
		int fd = -1;
		const std::string_view name = entry->d_name;
		auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), fd);
		if (ec != std::errc() || end != name.data() + name.size())
			continue; // "." and ".."
		char link[64];
		const ssize_t len = readlinkat(dir_fd, entry->d_name, link, sizeof(link));
		if (len <= 0 || static_cast<size_t>(len) >= sizeof(link))
			continue; // closed meanwhile, or not a socket (sockets' links are short)
		auto inode = socket_inode_of_link(std::string_view(link, static_cast<size_t>(len)));
		if (!inode)
			continue;
		if (inodes.empty() || std::find(inodes.begin(), inodes.end(), *inode) != inodes.end())
			found.push_back({*inode, fd});
	}
	closedir(dir);
	std::sort(found.begin(), found.end(), [](const ProcessSocket &a, const ProcessSocket &b) { return a.fd < b.fd; });
	return found;
}

Expected<uint64_t> process_start_time(pid_t pid)
{
	if (pid <= 0)
		return make_error(EINVAL, "invalid pid " + std::to_string(pid));
	const std::string path = "/proc/" + std::to_string(pid) + "/stat";
	std::ifstream file(path);
	if (!file)
		return no_such_process(pid);
	std::string line;
	std::getline(file, line);
	// The command name (field 2) is in parentheses and may itself contain ") ": the fields
	// we want start after the last ')'.
	const size_t comm_end = line.rfind(')');
	if (comm_end == std::string::npos)
		return make_error(EBADMSG, "unexpected format of " + path);
	std::istringstream fields(line.substr(comm_end + 1));
	std::string field;
	for (int index = 3; index <= 22; ++index) { // field 3 is the state, 22 the start time
		if (!(fields >> field))
			return make_error(EBADMSG, "unexpected format of " + path);
	}
	uint64_t start_time = 0;
	auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), start_time);
	if (ec != std::errc() || end != field.data() + field.size())
		return make_error(EBADMSG, "unexpected start time in " + path);
	return start_time;
}

} // namespace gp::stock
