// The socket actuator: SO_MAX_PACING_RATE, SO_PRIORITY (steering into a host shaper) and
// TCP_RTO_MIN_US on the application's own socket.
//
// Since Linux 4.13 TCP paces by itself (an hrtimer per socket) as soon as
// SO_MAX_PACING_RATE is set, so no fq qdisc is needed. The kernel never turns that internal
// pacing off again: after a revert to the unlimited rate the socket still paces, at the rate
// TCP computes for itself (120..200 % of cwnd * mss / srtt), which does not limit a flow.
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>

#include "internal.hpp"

// glibc 2.36 has the numbers but no wrappers; older headers may lack even the numbers
// (they are the same on every architecture).
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
// Linux 6.15's uapi; Debian 12's headers predate it.
#ifndef TCP_RTO_MIN_US
#define TCP_RTO_MIN_US 45
#endif

namespace gp::stock {
namespace {

using detail::system_error;

std::string socket_name(pid_t pid, uint64_t inode)
{
	return "socket " + std::to_string(inode) + " of process " + std::to_string(pid);
}

// Is `fd` (ours) the socket `inode`?
bool is_socket_inode(int fd, uint64_t inode)
{
	struct stat st {};
	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == inode;
}

Expected<void> check_tcp(int fd, pid_t pid, uint64_t inode)
{
	int protocol = 0;
	socklen_t len = sizeof(protocol);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0)
		return system_error(errno, "getsockopt(SO_PROTOCOL) on " + socket_name(pid, inode));
	if (protocol != IPPROTO_TCP)
		return make_error(EPROTOTYPE, socket_name(pid, inode) + " is not a TCP socket");
	return {};
}

// Duplicates fd `fd` of the process behind `pidfd` if it still is the socket `inode`.
// nullopt if the fd is closed or now something else.
Expected<std::optional<UniqueFd>> try_fd(int pidfd, int fd, pid_t pid, uint64_t inode)
{
	UniqueFd duplicate(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0)));
	if (!duplicate) {
		const int err = errno;
		if (err == EBADF)
			return std::optional<UniqueFd>(); // closed since we looked
		if (err == ESRCH)
			return make_error(ESRCH, "process " + std::to_string(pid) + " exited");
		return system_error(err, "pidfd_getfd(" + std::to_string(fd) + ") of process " + std::to_string(pid));
	}
	if (!is_socket_inode(duplicate.get(), inode))
		return std::optional<UniqueFd>(); // the fd number was reused
	return std::optional<UniqueFd>(std::move(duplicate));
}

// Puts `original` back with `set` unless the socket's value (read with `get`) is no longer
// `ours`: then its process has set one of its own since, and that is its choice now (the last
// writer wins, as without us). With `ours` nullopt, whatever the socket has: a record read
// back after a crash may hold an older value than the last one we set (the file is rewritten
// lazily when only the cap or the floor changes: state.cpp, covers()).
template <typename Value, typename Get, typename Set>
Expected<void> put_back_unless_changed(int socket, Value original, std::optional<Value> ours, Get get, Set set)
{
	if (ours) {
		auto now = get(socket);
		if (!now)
			return now.error();
		if (*now != *ours)
			return {};
	}
	return set(socket, original);
}

// The priority the socket had before we steered it.
Expected<void> unsteer_socket(int socket, uint32_t original)
{
	return put_back_unless_changed<uint32_t>(socket, original, kShaperSteering, get_priority, set_priority);
}

// The rate the socket had before us.
Expected<void> uncap_socket(int socket, uint64_t original, std::optional<uint64_t> ours)
{
	return put_back_unless_changed(socket, original, ours, get_max_pacing_rate, set_max_pacing_rate);
}

// The RTO minimum the socket had before us (`ours` as it read back after our change).
Expected<void> unfloor_socket(int socket, uint32_t original, std::optional<uint32_t> ours)
{
	return put_back_unless_changed(socket, original, ours, get_rto_min_us, set_rto_min_us);
}

// The original settings of a record, put back on its socket.
Expected<detail::Undone> put_back(const PacingRecord &record)
{
	auto borrowed = duplicate_process_socket(record.pid, record.inode, record.start_time, record.fd);
	if (!borrowed) {
		if (borrowed.error().err == ESRCH || borrowed.error().err == ENOENT)
			return detail::Undone::gone;
		return borrowed.error();
	}
	const int socket = borrowed->socket.get();
	Expected<void> set;
	if (record.original_priority)
		set = unsteer_socket(socket, *record.original_priority);
	if (set && record.original_rto_min_us)
		set = unfloor_socket(socket, *record.original_rto_min_us, std::nullopt);
	if (set && (record.applied_bytes_per_second || (!record.original_priority && !record.original_rto_min_us)))
		set = uncap_socket(socket, record.original_bytes_per_second, std::nullopt);
	if (!set)
		return detail::with_context(set.error(), socket_name(record.pid, record.inode));
	return detail::Undone::reverted;
}


Expected<UniqueFd> open_pidfd(pid_t pid)
{
	UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
	if (!pidfd) {
		const int err = errno;
		if (err == ESRCH)
			return make_error(ESRCH, "process " + std::to_string(pid) + " does not exist");
		return system_error(err, "pidfd_open(" + std::to_string(pid) + ")");
	}
	return pidfd;
}

// Socket `inode` of the process behind `pidfd`: at fd `fd_hint` if it is still there (the
// inode came from sock_diag's TCP table or from our record of it, so an equal inode is that
// TCP socket), else found by scanning the process's fd table.
Expected<BorrowedSocket> borrow_socket(int pidfd, pid_t pid, uint64_t inode, int fd_hint)
{
	if (fd_hint >= 0) {
		auto hinted = try_fd(pidfd, fd_hint, pid, inode);
		if (!hinted)
			return hinted.error();
		if (*hinted)
			return BorrowedSocket{std::move(**hinted), fd_hint};
	}
	const uint64_t wanted[] = {inode};
	auto candidates = process_sockets(pid, wanted);
	if (!candidates)
		return candidates.error();
	for (const ProcessSocket &candidate : *candidates) {
		auto duplicate = try_fd(pidfd, candidate.fd, pid, inode);
		if (!duplicate)
			return duplicate.error();
		if (!*duplicate)
			continue;
		if (auto tcp = check_tcp((*duplicate)->get(), pid, inode); !tcp)
			return tcp.error();
		return BorrowedSocket{std::move(**duplicate), candidate.fd};
	}
	return make_error(ENOENT, "process " + std::to_string(pid) + " holds no socket " + std::to_string(inode));
}

} // namespace

Expected<BorrowedSocket> duplicate_process_socket(pid_t pid, uint64_t inode, std::optional<uint64_t> expected_start_time,
						  int fd_hint)
{
	if (pid <= 0)
		return make_error(EINVAL, "invalid pid " + std::to_string(pid));
	if (inode == 0)
		return make_error(EINVAL, "invalid socket inode 0");
	// The pidfd first: it keeps naming this process even if the pid is reused later, so one
	// start-time check after opening it is enough.
	auto pidfd = open_pidfd(pid);
	if (!pidfd)
		return pidfd.error();
	if (expected_start_time) {
		auto start_time = process_start_time(pid);
		if (!start_time)
			return start_time.error();
		if (*start_time != *expected_start_time)
			return make_error(ESRCH, "pid " + std::to_string(pid) + " now names another process");
	}
	return borrow_socket(pidfd->get(), pid, inode, fd_hint);
}

Expected<std::vector<TcpSocket>> process_tcp_tuples(pid_t pid)
{
	if (pid <= 0)
		return make_error(EINVAL, "invalid pid " + std::to_string(pid));
	auto pidfd = open_pidfd(pid);
	if (!pidfd)
		return pidfd.error();
	auto held = process_sockets(pid);
	if (!held)
		return held.error();
	std::vector<TcpSocket> out;
	std::set<uint64_t> seen; // a socket held under several fds is one connection
	for (const ProcessSocket &candidate : *held) {
		if (!seen.insert(candidate.inode).second)
			continue;
		auto duplicate = try_fd(pidfd->get(), candidate.fd, pid, candidate.inode);
		if (!duplicate)
			return duplicate.error();
		if (!*duplicate)
			continue; // closed since the scan
		const int socket = (*duplicate)->get();
		int domain = 0, protocol = 0;
		socklen_t len = sizeof(domain);
		if (getsockopt(socket, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || (domain != AF_INET && domain != AF_INET6))
			continue;
		len = sizeof(protocol);
		if (getsockopt(socket, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) < 0 || protocol != IPPROTO_TCP)
			continue;
		sockaddr_storage local{}, remote{};
		socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
		if (getsockname(socket, reinterpret_cast<sockaddr *>(&local), &local_len) < 0 ||
		    getpeername(socket, reinterpret_cast<sockaddr *>(&remote), &remote_len) < 0)
			continue; // a listener, or not connected (ENOTCONN)
		TcpSocket tuple;
		tuple.socket_family = domain;
		tuple.local = unmapped(from_socket_address(local));
		tuple.remote = unmapped(from_socket_address(remote));
		tuple.inode = candidate.inode;
		out.push_back(tuple);
	}
	return out;
}

Expected<uint64_t> get_max_pacing_rate(int socket_fd)
{
	uint64_t rate = 0;
	socklen_t len = sizeof(rate);
	if (getsockopt(socket_fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &len) < 0)
		return system_error(errno, "getsockopt(SO_MAX_PACING_RATE)");
	if (len == sizeof(uint32_t)) { // a 32-bit kernel: ~0U means unlimited too
		uint32_t narrow = 0;
		std::memcpy(&narrow, &rate, sizeof(narrow));
		return narrow == ~uint32_t{0} ? kUnlimitedPacingRate : narrow;
	}
	if (len != sizeof(rate))
		return make_error(EPROTO, "getsockopt(SO_MAX_PACING_RATE) returned " + std::to_string(len) + " bytes");
	return rate;
}

Expected<void> set_max_pacing_rate(int socket_fd, uint64_t bytes_per_second)
{
	// An 8-byte option value is taken as 64 bits (Linux 4.20+); a 4-byte one would cap
	// rates at 4 GB/s.
	if (setsockopt(socket_fd, SOL_SOCKET, SO_MAX_PACING_RATE, &bytes_per_second, sizeof(bytes_per_second)) < 0)
		return system_error(errno, "setsockopt(SO_MAX_PACING_RATE, " + std::to_string(bytes_per_second) + ")");
	return {};
}

Expected<uint32_t> get_rto_min_us(int socket_fd)
{
	int microseconds = 0;
	socklen_t len = sizeof(microseconds);
	if (getsockopt(socket_fd, IPPROTO_TCP, TCP_RTO_MIN_US, &microseconds, &len) < 0) {
		const int err = errno;
		if (err == ENOPROTOOPT)
			return make_error(err, "this kernel has no TCP_RTO_MIN_US (Linux 6.15+)");
		return system_error(err, "getsockopt(TCP_RTO_MIN_US)");
	}
	return static_cast<uint32_t>(microseconds);
}

Expected<void> set_rto_min_us(int socket_fd, uint32_t microseconds)
{
	const int value = static_cast<int>(std::min<uint32_t>(microseconds, INT32_MAX));
	if (setsockopt(socket_fd, IPPROTO_TCP, TCP_RTO_MIN_US, &value, sizeof(value)) < 0) {
		const int err = errno;
		if (err == ENOPROTOOPT)
			return make_error(err, "this kernel has no TCP_RTO_MIN_US (Linux 6.15+)");
		return system_error(err, "setsockopt(TCP_RTO_MIN_US, " + std::to_string(microseconds) + ")");
	}
	return {};
}

uint32_t SocketRtoMin::clamp(uint32_t microseconds) const
{
	return std::clamp(microseconds, smallest_us, kLargestUs);
}

const SocketRtoMin &socket_rto_min()
{
	static const SocketRtoMin probed = [] {
		SocketRtoMin out;
		UniqueFd probe(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
		if (!probe)
			probe.reset(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
		out.available = probe && get_rto_min_us(probe.get()).has_value();
		// The option refuses less than TCP_TIMEOUT_MIN, two jiffies; the coarse clocks tick
		// once a jiffy. 20 ms (HZ=100) if the clock will not say.
		timespec tick{};
		const uint64_t tick_ns = clock_getres(CLOCK_MONOTONIC_COARSE, &tick) == 0 && tick.tv_sec == 0 && tick.tv_nsec > 0
						 ? static_cast<uint64_t>(tick.tv_nsec)
						 : 10'000'000;
		out.smallest_us = static_cast<uint32_t>(std::min<uint64_t>((2 * tick_ns + 999) / 1000, SocketRtoMin::kLargestUs));
		return out;
	}();
	return probed;
}

Expected<uint64_t> pacing_bytes_per_second(uint64_t bits_per_second)
{
	if (bits_per_second < 8)
		return make_error(EINVAL, "pacing rate " + std::to_string(bits_per_second) +
						  " bit/s is below the smallest rate a socket takes (8 bit/s)");
	return bits_per_second / 8;
}

Expected<PacingActuator::ProcessHandle *> PacingActuator::process(pid_t pid)
{
	if (pid <= 0)
		return make_error(EINVAL, "invalid pid " + std::to_string(pid));
	if (auto it = processes_.find(pid); it != processes_.end())
		return &it->second;
	// Handles of processes that exited are dropped when a change finds them gone; this
	// bound only matters for a daemon serving very many short-lived senders.
	if (processes_.size() >= kMaxProcessHandles)
		processes_.clear();
	auto pidfd = open_pidfd(pid);
	if (!pidfd)
		return pidfd.error();
	// Read after the pidfd exists: if `pid` still has this start time now, the pidfd names
	// the process the caller meant, whatever happens to the number later.
	auto start_time = process_start_time(pid);
	if (!start_time)
		return start_time.error();
	auto [it, inserted] = processes_.emplace(pid, ProcessHandle{std::move(*pidfd), *start_time});
	return &it->second;
}

void PacingActuator::forget_if_exited(pid_t pid)
{
	auto it = processes_.find(pid);
	if (it == processes_.end())
		return;
	pollfd exited{it->second.pidfd.get(), POLLIN, 0};
	if (poll(&exited, 1, 0) != 0)
		processes_.erase(it);
}

Expected<void> PacingActuator::apply(pid_t pid, uint64_t inode, uint64_t bits_per_second, int fd_hint)
{
	auto bytes_per_second = pacing_bytes_per_second(bits_per_second);
	if (!bytes_per_second)
		return bytes_per_second.error();
	return change(pid, inode, fd_hint, kRate, *bytes_per_second);
}

Expected<void> PacingActuator::steer(pid_t pid, uint64_t inode, int fd_hint)
{
	return change(pid, inode, fd_hint, kPriority, 0);
}

Expected<void> PacingActuator::floor_rto(pid_t pid, uint64_t inode, uint32_t microseconds, int fd_hint)
{
	const SocketRtoMin &option = socket_rto_min();
	if (!option.available)
		return make_error(ENOPROTOOPT, "this kernel has no TCP_RTO_MIN_US (Linux 6.15+)");
	if (microseconds == 0)
		return make_error(EINVAL, "an RTO floor of 0 us");
	return change(pid, inode, fd_hint, kRtoMin, option.clamp(microseconds));
}

Expected<void> PacingActuator::change(pid_t pid, uint64_t inode, int fd_hint, Setting setting, uint64_t value)
{
	if (inode == 0)
		return make_error(EINVAL, "invalid socket inode 0");
	auto handle = process(pid);
	if (!handle)
		return handle.error();
	const uint64_t start_time = (*handle)->start_time;
	const PacingRecord *existing = store_.find_pacing(pid, start_time, inode);
	auto borrowed = borrow_socket((*handle)->pidfd.get(), pid, inode, existing ? existing->fd : fd_hint);
	if (!borrowed) {
		if (borrowed.error().err == ESRCH)
			processes_.erase(pid);
		return borrowed.error();
	}
	const int socket = borrowed->socket.get();

	PacingRecord record;
	std::optional<PacingRecord> previous;
	if (existing) {
		previous = *existing;
		record = *existing;
	} else {
		auto original = get_max_pacing_rate(socket);
		if (!original)
			return detail::with_context(original.error(), socket_name(pid, inode));
		record.pid = pid;
		record.start_time = start_time;
		record.inode = inode;
		record.original_bytes_per_second = *original;
	}
	if (setting == kPriority && !record.original_priority) {
		auto original = get_priority(socket);
		if (!original)
			return detail::with_context(original.error(), socket_name(pid, inode));
		// A priority its process set is not ours to borrow: it may pick the frames' VLAN
		// priority (the device's egress map) or a band of the device's qdisc, for as long as
		// the phase lasts. Such a socket keeps its own cap instead.
		if (*original != 0 && *original != kShaperSteering)
			return make_error(EBUSY, socket_name(pid, inode) + ": SO_PRIORITY " + std::to_string(*original) +
							 " is its process's (a VLAN priority or a qdisc band): not steered");
		record.original_priority = *original;
	}
	if (setting == kRtoMin && !record.original_rto_min_us) {
		auto original = get_rto_min_us(socket);
		if (!original)
			return detail::with_context(original.error(), socket_name(pid, inode));
		record.original_rto_min_us = *original;
	}
	record.fd = borrowed->fd_in_process;
	if (setting == kRate)
		record.applied_bytes_per_second = value;
	if (setting == kRtoMin)
		record.applied_rto_min_us = static_cast<uint32_t>(value);

	// On disk before the socket changes: a crash after this line leaves a record to undo.
	// put() writes only what restoring depends on (who holds the socket, the originals, which
	// settings are ours), so a new cap or floor on a recorded socket costs no write.
	if (auto saved = store_.put(record); !saved)
		return saved.error();
	Expected<void> set = setting == kPriority ? set_priority(socket, kShaperSteering)
			     : setting == kRate	  ? set_max_pacing_rate(socket, value)
						  : set_rto_min_us(socket, static_cast<uint32_t>(value));
	if (!set) {
		// The socket kept its setting: the record must say what is true again.
		if (previous)
			store_.update(*previous);
		else
			store_.erase_pacing(pid, start_time, inode);
		return detail::with_context(set.error(), socket_name(pid, inode));
	}
	if (setting == kRtoMin) {
		// The kernel keeps whole jiffies: the revert compares with what the socket says now.
		if (auto now = get_rto_min_us(socket); now && *now != record.applied_rto_min_us) {
			record.applied_rto_min_us = *now;
			store_.update(record);
		}
	}
	return {};
}

Expected<void> PacingActuator::revert(pid_t pid, uint64_t inode)
{
	return undo(pid, inode, kRate | kPriority | kRtoMin);
}

Expected<void> PacingActuator::revert_rate(pid_t pid, uint64_t inode)
{
	return undo(pid, inode, kRate);
}

Expected<void> PacingActuator::unsteer(pid_t pid, uint64_t inode)
{
	return undo(pid, inode, kPriority);
}

Expected<void> PacingActuator::unfloor_rto(pid_t pid, uint64_t inode)
{
	return undo(pid, inode, kRtoMin);
}

Expected<void> PacingActuator::undo(pid_t pid, uint64_t inode, unsigned settings)
{
	const PacingRecord *found = nullptr;
	for (const PacingRecord &record : store_.state().pacing) {
		if (record.pid == pid && record.inode == inode)
			found = &record;
	}
	if (!found)
		return make_error(ENOENT, "no pacing was applied to " + socket_name(pid, inode));
	const PacingRecord record = *found;
	const bool capped = record.applied_bytes_per_second != 0, steered = record.original_priority.has_value(),
		   floored = record.original_rto_min_us.has_value();
	const bool undo_rate = (settings & kRate) && capped, undo_priority = (settings & kPriority) && steered,
		   undo_rto = (settings & kRtoMin) && floored;
	// The other settings stay applied: only the asked ones go back, and the record stays.
	const bool keeps = (capped && !undo_rate) || (steered && !undo_priority) || (floored && !undo_rto);
	if (keeps && !undo_rate && !undo_priority && !undo_rto)
		return {};
	// The daemon knows the cap it set last: a socket whose process changed it since keeps its own.
	auto restore = [&](int socket) -> Expected<void> {
		if (undo_priority) {
			if (auto set = unsteer_socket(socket, *record.original_priority); !set)
				return set;
		}
		if (undo_rto) {
			if (auto set = unfloor_socket(socket, *record.original_rto_min_us, record.applied_rto_min_us); !set)
				return set;
		}
		if (undo_rate)
			return uncap_socket(socket, record.original_bytes_per_second, record.applied_bytes_per_second);
		return {};
	};
	Expected<detail::Undone> undone = detail::Undone::gone;
	auto handle = processes_.find(pid);
	Expected<BorrowedSocket> borrowed =
		handle != processes_.end() && handle->second.start_time == record.start_time
			? borrow_socket(handle->second.pidfd.get(), pid, inode, record.fd)
			: duplicate_process_socket(pid, inode, record.start_time, record.fd);
	if (borrowed) {
		if (auto set = restore(borrowed->socket.get()); !set)
			undone = detail::with_context(set.error(), socket_name(pid, inode));
		else
			undone = detail::Undone::reverted;
	} else if (borrowed.error().err != ESRCH && borrowed.error().err != ENOENT) {
		undone = borrowed.error();
	}
	if (!undone)
		return undone.error();
	if (keeps && *undone == detail::Undone::reverted) {
		PacingRecord rest = record;
		if (undo_rate)
			rest.applied_bytes_per_second = 0;
		if (undo_priority)
			rest.original_priority.reset();
		if (undo_rto) {
			rest.original_rto_min_us.reset();
			rest.applied_rto_min_us = 0;
		}
		return store_.put(rest);
	}
	auto erased = store_.erase_pacing(record.pid, record.start_time, record.inode);
	if (std::none_of(store_.state().pacing.begin(), store_.state().pacing.end(),
			 [&](const PacingRecord &r) { return r.pid == pid; }))
		forget_if_exited(pid);
	return erased;
}

Expected<void> PacingActuator::revert_all()
{
	std::optional<Error> first_failure;
	const std::vector<PacingRecord> records = store_.state().pacing;
	for (const PacingRecord &record : records) {
		auto reverted = revert(record.pid, record.inode);
		if (!reverted && !first_failure)
			first_failure = reverted.error();
	}
	if (first_failure)
		return *first_failure;
	return {};
}

Expected<detail::Undone> detail::undo_pacing(const PacingRecord &record)
{
	return put_back(record);
}

} // namespace gp::stock
