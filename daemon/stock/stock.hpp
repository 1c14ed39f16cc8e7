// The "stock kernel" actuators of gappaced: how the daemon applies a collective phase's
// settings when the gappace module is not loaded, with features every Linux kernel has:
//
//   * pacing   SO_MAX_PACING_RATE on the application's own TCP socket, reached through
//              pidfd_getfd(). TCP paces internally once the option is set (no fq qdisc needed).
//   * RTO      on Linux 6.15+, TCP_RTO_MIN_US on the application's own socket, like pacing;
//              else (or with quickack) a host route to the peer with the same nexthop as the
//              route in use, plus the locked metric rto_min and quickack 1, marked with our
//              route protocol.
//   * shaper   instead of a socket's own pacing: one token bucket per device that every
//              socket steered into it (SO_PRIORITY) shares, so that a host never sends more
//              than its share of a bottleneck, not even when all its flows start at once.
//
// Every change is written to a state file before it is made, so that a daemon that was
// killed can revert everything it left behind (restore_from_state) when it starts again.
//
// Not thread-safe: one daemon thread owns a StateStore and the actuators that use it.
// All functions act in the calling thread's network namespace.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "endpoint.hpp"
#include "expected.hpp"
#include "netlink.hpp"
#include "unique_fd.hpp"

namespace gp::stock {

// ------------------------------------------------------------------ socket table

// One established TCP socket of this network namespace, as sock_diag reports it.
struct TcpSocket {
	int socket_family = 0;	// AF_INET or AF_INET6 (a dual-stack socket is AF_INET6)
	Endpoint local;		// IPv4-mapped addresses are given as IPv4
	Endpoint remote;	// same
	uint32_t uid = 0;	// owner, as seen from our user namespace
	uint64_t inode = 0;	// the socket's inode: "socket:[INODE]" in /proc/PID/fd
};

// Which sockets list_established_tcp() returns; an empty filter returns all.
struct SocketFilter {
	std::optional<uint32_t> uid;
	// The peer: its address, and its port too unless remote->port is 0. An IPv4 address
	// also matches a dual-stack socket's IPv4-mapped peer.
	std::optional<Endpoint> remote;
};

// Established TCP sockets (IPv4 and IPv6) of the calling thread's network namespace, through
// NETLINK_SOCK_DIAG. Sockets without an inode (orphaned by their process) are left out: no
// process holds them, so nothing can be applied to them.
Expected<std::vector<TcpSocket>> list_established_tcp(const SocketFilter &filter = {});

// The established TCP sockets with these 4-tuples (`local` and `remote` of each; IPv4 ones
// also find dual-stack sockets' IPv4 connections), each found by sock_diag's exact lookup: a
// hash lookup per tuple, where list_established_tcp() walks the kernel's whole established hash
// (shared by all namespaces; milliseconds of CPU on a large host, however few its sockets).
// Tuples without an established socket, or whose socket has no inode, are left out.
Expected<std::vector<TcpSocket>> find_established_tcp(std::span<const TcpSocket> tuples);

// What the application has written on each of these established TCP sockets (found by their
// 4-tuples, as find_established_tcp does, and kept only if the inode is still theirs), by
// inode: the bytes acknowledged (tcpi_bytes_acked) plus those still in the write queue. It
// stays put while data already written is sent and acknowledged, and grows only with new
// writes. Sockets not found (closed, or no longer established) are absent from the result.
Expected<std::map<uint64_t, uint64_t>> written_bytes(std::span<const TcpSocket> sockets);

// The exact lookups of find_established_tcp() and written_bytes() on a sock_diag socket that
// stays open between calls (the functions above open one per call), for a caller that asks
// often: gappaced reads what lingering phases' sockets have written every tick, and resolves
// a sender's peers every second. The lookups go in batches: up to kLookupBatch requests in one
// sendmsg, which the kernel answers before it returns, and their replies and ACKs in one
// recvmmsg. One request per exchange took a sendmsg and two recvmsgs per socket, and a socket,
// a bind and a close per call: a fifth of the CPU samples of the 16-host benchmark cluster's
// daemons (Documentation/performance/daemon-cpu-session40).
//
// An error leaves the socket usable: replies of an abandoned batch are told apart by their
// sequence numbers and skipped. Move-only; bound to the network namespace it was opened in.
class SocketTable {
public:
	static constexpr size_t kLookupBatch = 16;

	static Expected<SocketTable> open();

	Expected<std::vector<TcpSocket>> find_established(std::span<const TcpSocket> tuples);
	Expected<std::map<uint64_t, uint64_t>> written_bytes(std::span<const TcpSocket> sockets);

	// Requests sent and batches (sendmsg calls) since open: what the tests check batching on.
	uint64_t lookups_sent() const noexcept { return lookups_sent_; }
	uint64_t batches_sent() const noexcept { return batches_sent_; }

private:
	explicit SocketTable(NetlinkSocket netlink) noexcept : netlink_(std::move(netlink)) {}
	// Looks up every tuple, `extensions` (1 << (INET_DIAG_* - 1)) asked for, and hands the
	// established sockets' replies to on_reply with the tuple's index. A tuple without an
	// established socket is not an error: on_reply is not called for it.
	Expected<void> lookup(std::span<const TcpSocket> tuples, uint8_t extensions,
			      const std::function<Expected<void>(size_t index, const nlmsghdr *reply)> &on_reply);
	Expected<void> lookup_batch(std::span<const TcpSocket> tuples, size_t first_index, uint8_t extensions,
				    const std::function<Expected<void>(size_t index, const nlmsghdr *reply)> &on_reply);

	NetlinkSocket netlink_;
	uint32_t next_seq_ = 1;
	uint64_t lookups_sent_ = 0;
	uint64_t batches_sent_ = 0;
	// recvmmsg's datagram slots, allocated on first use and kept.
	std::unique_ptr<char[]> reply_slots_;
};

// A socket a process holds, and the fd number it holds it under.
struct ProcessSocket {
	uint64_t inode = 0;
	int fd = -1;
};

// The sockets of `pid` among `inodes` (all of its sockets if `inodes` is empty), from the
// readlinks of /proc/PID/fd ("socket:[INODE]"). A socket held under several fds is listed
// once per fd. ESRCH if the process does not exist.
Expected<std::vector<ProcessSocket>> process_sockets(pid_t pid, std::span<const uint64_t> inodes = {});

// The connected TCP sockets `pid` holds, as tuples for find_established_tcp() (local and
// remote, IPv4-mapped addresses as IPv4; socket_family and inode set, uid not): each socket in
// its fd table duplicated (pidfd_getfd) for getsockname and getpeername. A process's
// connections without a dump, which walks the kernel's whole established hash. ESRCH if the
// process does not exist.
Expected<std::vector<TcpSocket>> process_tcp_tuples(pid_t pid);

// The start time of a process (field 22 of /proc/PID/stat, in clock ticks since boot):
// with the pid, it names a process even after the pid was reused.
Expected<uint64_t> process_start_time(pid_t pid);

// ------------------------------------------------------------------ state file

// The default place of the state file; /run is emptied at boot, as our settings are.
inline constexpr const char *kDefaultStatePath = "/run/gappace/stock-state.json";

// A pacing cap we set on somebody's socket. The socket is named without an fd (fds are
// reused): the process (pid + start time) and the socket's inode. `fd` is only a hint.
struct PacingRecord {
	pid_t pid = 0;
	uint64_t start_time = 0;
	uint64_t inode = 0;
	int fd = -1;				// -1: no hint
	uint64_t original_bytes_per_second = 0; // SO_MAX_PACING_RATE before us (~0 = unlimited)
	uint64_t applied_bytes_per_second = 0;	// 0: we left the rate alone (steered only)
	// SO_PRIORITY before we steered the socket into a host shaper; nullopt: never steered.
	std::optional<uint32_t> original_priority;
	// TCP_RTO_MIN_US before we floored the socket's RTO; nullopt: never floored.
	std::optional<uint32_t> original_rto_min_us;
	uint32_t applied_rto_min_us = 0; // the floor as the socket reads it back; 0: none now
	bool operator==(const PacingRecord &) const = default;
};

// A host route we added. It lives in the daemon's own network namespace (netns_inode in
// StockState says which); table/oif/gateway/prefsrc are what we copied from the route in use.
struct RouteRecord {
	Endpoint peer; // address only, port 0
	uint32_t table = 0;
	uint32_t oif = 0;
	std::optional<Endpoint> gateway;
	std::optional<Endpoint> prefsrc;
	uint32_t rto_min_ms = 0;
	bool quickack = false;
	bool operator==(const RouteRecord &) const = default;
};

struct StockState {
	uint64_t netns_inode = 0; // the network namespace the routes are in (/proc/self/ns/net)
	std::vector<RouteRecord> routes;
	std::vector<PacingRecord> pacing;
	// net.ipv4.tcp_tso_rtt_log of that namespace before TsoSizing set it to 0.
	std::optional<uint32_t> original_tso_rtt_log;
	size_t records() const { return routes.size() + pacing.size() + (original_tso_rtt_log ? 1 : 0); }
	bool empty() const { return records() == 0; }
	bool operator==(const StockState &) const = default;
};

// The JSON form of the state file (version 1). Rates in bytes/s, as the socket option takes them.
std::string serialize_state(const StockState &state);
// EINVAL with the reason if `text` is not a state file we wrote.
Expected<StockState> parse_state(const std::string &text);
// Reads and parses a state file. ENOENT if there is none.
Expected<StockState> load_state(const std::string &path);

// The inode of the calling thread's network namespace.
Expected<uint64_t> current_netns_inode();

// The state file of a running daemon: every record is on disk (written to a temporary file
// and renamed over the old one) before the change it describes is made, and is removed once
// the change was reverted. Directories on the path are created (mode 0755).
class StateStore {
public:
	// Starts an empty state at `path`. EEXIST if a state file with records is already there:
	// a previous daemon left settings behind, and restore_from_state() must undo them first.
	static Expected<StateStore> create(std::string path);
	// Starts the state of a new daemon at `path` after restore_from_state() undid what it
	// could. What the file still records could not be undone. Socket records, and routes and
	// tcp_tso_rtt_log of this network namespace, become this daemon's records: it tries again
	// when it reverts everything (at its shutdown), and they stay on disk until undone.
	// Routes and tcp_tso_rtt_log of another namespace, which no daemon here can undo, are
	// moved to PATH.netns-INODE (merged with what that file holds) for the administrator.
	// `notes` says what was kept or moved. Errors as create(), never EEXIST.
	static Expected<StateStore> adopt(std::string path, std::vector<std::string> &notes);

	const std::string &path() const { return path_; }
	// The live records: settings in effect now.
	const StockState &state() const { return state_; }

	// Adds or replaces the record of the same peer / the same (pid, start time, inode). The
	// file is only rewritten when it does not hold this record already: a record removed
	// recently and put back unchanged (the same collective on the same connection, again)
	// costs no write.
	Expected<void> put(const RouteRecord &record);
	Expected<void> put(const PacingRecord &record);
	// The namespace's tcp_tso_rtt_log before we changed it (one record at most).
	Expected<void> put_tso_rtt_log(uint32_t original);
	// Changes a record in memory only (written with the next put() or flush()): for changes
	// that restoring does not depend on, such as the cap applied to a recorded socket.
	void update(const PacingRecord &record);
	// Removes a record; removing one that is not there is not an error. Removals reach the
	// file with the next write, not at once: a record of a setting already undone is
	// harmless (undoing it again finds it gone or restores what is there), while a setting
	// without a record would leak. So only additions are written ahead of the change.
	Expected<void> erase_route(const Endpoint &peer);
	Expected<void> erase_pacing(pid_t pid, uint64_t start_time, uint64_t inode);
	Expected<void> erase_tso_rtt_log();
	// Writes pending removals, if any.
	Expected<void> flush();
	// Writes pending removals if the oldest of them is at least `age` old: the daemon's
	// tick, which leaves the records of back-to-back phases on disk between them.
	Expected<void> flush_older_than(std::chrono::steady_clock::duration age);
	bool dirty() const { return dirty_; }

	const RouteRecord *find_route(const Endpoint &peer) const;
	const PacingRecord *find_pacing(pid_t pid, uint64_t start_time, uint64_t inode) const;

private:
	StateStore(std::string path, StockState state) : path_(std::move(path)), state_(state), on_disk_(std::move(state)) {}
	Expected<void> write(const StockState &next);
	void removed();	// after a record left state_
	void readopted(); // after put() took a record the file has already

	std::string path_;
	StockState state_;	// live records
	StockState on_disk_;	// what the file holds: every live record, and removed ones until the next write
	bool dirty_ = false;	// on_disk_ has records that state_ no longer has
	std::chrono::steady_clock::time_point dirty_since_{};
};

// mkdir -p of the directory of `path`, each new directory 0755 (less the umask).
Expected<void> make_parent_directories(const std::string &path);

// Writes `state` to `path` atomically (temporary file in the same directory, fsync, rename).
Expected<void> write_state_file(const std::string &path, const StockState &state, bool create_directory = true);

// ------------------------------------------------------------------ pacing

// The unlimited SO_MAX_PACING_RATE (the kernel's default, ~0UL).
inline constexpr uint64_t kUnlimitedPacingRate = ~uint64_t{0};

// A process's socket, duplicated into ours.
struct BorrowedSocket {
	UniqueFd socket;	// our duplicate: the same socket, not a copy
	int fd_in_process = -1; // the fd number the process holds it under
};

// A duplicate of the socket `inode` that process `pid` holds (pidfd_open + pidfd_getfd),
// checked to be that socket and a TCP socket. ESRCH if the process is gone, ENOENT if it
// holds no such socket, EPROTOTYPE if it is not TCP. With `expected_start_time`, ESRCH also
// if the pid now names another process. `fd_hint` is tried before /proc/PID/fd is scanned.
// Close the duplicate soon: while it is open, the application's close() does not end the
// connection.
Expected<BorrowedSocket> duplicate_process_socket(pid_t pid, uint64_t inode,
						  std::optional<uint64_t> expected_start_time = std::nullopt,
						  int fd_hint = -1);

// SO_MAX_PACING_RATE of a socket, 64-bit, in bytes/s.
Expected<uint64_t> get_max_pacing_rate(int socket_fd);
Expected<void> set_max_pacing_rate(int socket_fd, uint64_t bytes_per_second);

// bit/s (our API's unit) to bytes/s (the socket's): rounded down, at least 1 byte/s.
// EINVAL for 0 and for rates below 8 bit/s.
Expected<uint64_t> pacing_bytes_per_second(uint64_t bits_per_second);

// TCP_RTO_MIN_US (Linux 6.15+): a socket's own minimum RTO, in microseconds as the socket
// reads it back (the kernel keeps jiffies: a value is rounded up to whole ones). The kernel
// derives the delayed-ACK ceiling from it too (one jiffy below it), and a route's locked
// rto_min, where there is one, overrides it. ENOPROTOOPT on older kernels.
Expected<uint32_t> get_rto_min_us(int socket_fd);
Expected<void> set_rto_min_us(int socket_fd, uint32_t microseconds);

// Whether this kernel has TCP_RTO_MIN_US, and the range it takes: from two jiffies
// (TCP_TIMEOUT_MIN; a jiffy is the resolution of CLOCK_MONOTONIC_COARSE) to 200 ms.
struct SocketRtoMin {
	bool available = false;
	uint32_t smallest_us = 0;
	static constexpr uint32_t kLargestUs = 200000; // TCP_RTO_MIN
	// `microseconds` within the range the option takes.
	uint32_t clamp(uint32_t microseconds) const;
};
// Probed once per process, on a socket of its own.
const SocketRtoMin &socket_rto_min();

// The socket actuator: caps the pacing rate of applications' sockets, steers them into a host
// shaper, floors their RTO, and puts back what was there before. One record per socket holds
// the originals of all three.
class PacingActuator {
public:
	explicit PacingActuator(StateStore &store) : store_(store) {}

	// Caps socket `inode` of process `pid` at `bits_per_second`. The first apply to a socket
	// records its current SO_MAX_PACING_RATE as the original; applying again only changes
	// the cap.
	// `fd_hint`: the fd the process holds it under, if the caller knows (saves a scan of
	// /proc/PID/fd; checked like any other candidate).
	Expected<void> apply(pid_t pid, uint64_t inode, uint64_t bits_per_second, int fd_hint = -1);
	// Steers the socket into a host shaper: SO_PRIORITY = kShaperSteering. The first change
	// to a socket records its current priority as the original. EBUSY, nothing changed, for
	// a socket whose process set a priority of its own (not 0).
	Expected<void> steer(pid_t pid, uint64_t inode, int fd_hint = -1);
	// Floors the socket's RTO: TCP_RTO_MIN_US = `microseconds` (clamped to what the option
	// takes, SocketRtoMin). The first floor records the socket's own minimum as the original.
	// ENOPROTOOPT, nothing changed, on kernels without the option.
	Expected<void> floor_rto(pid_t pid, uint64_t inode, uint32_t microseconds, int fd_hint = -1);
	// Puts the original rate, priority and RTO minimum back, whichever we changed. A socket or
	// process that is gone counts as reverted. A setting the socket's process changed since
	// we made ours is its own and stays. ENOENT if we never applied anything to that socket.
	Expected<void> revert(pid_t pid, uint64_t inode);
	// Parts of revert(), for a socket that overlapping phases changed in several ways: the
	// original rate, priority or RTO minimum goes back and the other settings stay.
	Expected<void> revert_rate(pid_t pid, uint64_t inode);
	Expected<void> unsteer(pid_t pid, uint64_t inode);
	Expected<void> unfloor_rto(pid_t pid, uint64_t inode);
	// Reverts every socket; tries them all and returns the first failure.
	Expected<void> revert_all();

private:
	enum Setting : unsigned { kRate = 1, kPriority = 2, kRtoMin = 4 };
	Expected<void> undo(pid_t pid, uint64_t inode, unsigned settings);
	// Records the socket's original setting (first change of it only), then makes the change:
	// the cap (`value` in bytes/s), the steering (no value), or the RTO floor (microseconds).
	Expected<void> change(pid_t pid, uint64_t inode, int fd_hint, Setting setting, uint64_t value);

	// An open pidfd per process we change sockets of, with the start time checked when it
	// was opened: a pidfd keeps naming that process, so later changes need neither a new
	// pidfd nor /proc reads. Dropped when the process is gone.
	struct ProcessHandle {
		UniqueFd pidfd;
		uint64_t start_time = 0;
	};
	static constexpr size_t kMaxProcessHandles = 1024;
	Expected<ProcessHandle *> process(pid_t pid);
	void forget_if_exited(pid_t pid);

	StateStore &store_;
	std::map<pid_t, ProcessHandle> processes_;
};

// SO_PRIORITY of a socket.
Expected<uint32_t> get_priority(int socket_fd);
Expected<void> set_priority(int socket_fd, uint32_t priority);

// ------------------------------------------------------------------ host shaper
//
// Per device, one htb root with our handle (6761:) and this tree:
//
//   6761:1  inner class; a socket whose SO_PRIORITY is 6761:1 lands here, and its filters sort
//     |      the packets: IPv4 total / IPv6 payload length below 128 bytes (pure ACKs) to :3,
//     |      everything else to :2
//     +-- 6761:2  leaf, its qdisc a tbf (6762:) at the shaped rate: the steered sockets' data
//     +-- 6761:3  leaf, unshaped: their ACKs, which a shaper would hold behind data
//
// Everything else the device sends goes to htb's direct queue, unshaped (default class 0).
// htb classifies by skb->priority before any filter, and a priority naming an inner class
// starts at that class's filters. The htb classes themselves never limit (their rates are
// far above any link): htb's own rate limiting lets bursts through that a tbf does not
// (Documentation/performance/host-shaper-session14).
inline constexpr uint32_t kShaperHandle = 0x67610000;	    // 6761:
inline constexpr uint32_t kShaperSteering = 0x67610001;	    // 6761:1, the SO_PRIORITY of steered sockets
inline constexpr uint32_t kShaperBucketHandle = 0x67620000; // 6762:, the tbf under 6761:2

// A device's root qdisc: its kind, and its handle (0 for the kernel's default qdisc).
struct RootQdisc {
	std::string kind;
	uint32_t handle = 0;
};
Expected<RootQdisc> root_qdisc(uint32_t ifindex);

// An rtnetlink socket (NETLINK_ROUTE), for the actuators' changes: opened on first use and
// again after reset(), which a failed exchange calls (it may leave replies behind).
Expected<NetlinkSocket> open_rtnetlink();
class RtnetlinkSocket {
public:
	Expected<NetlinkSocket *> get();
	void reset() { socket_.reset(); }

private:
	std::optional<NetlinkSocket> socket_;
};

// What a shaper does, in the tbf's units: bytes of the packets as the device sends them
// (skb->len, Ethernet header included), per second, and at most `burst_bytes` at once.
struct ShaperSettings {
	uint64_t bytes_per_second = 0;
	uint32_t burst_bytes = 0; // at least the device's largest frame: bigger ones are dropped
};

// Installs, changes and removes host shapers. Not thread-safe, like the rest.
class ShaperActuator {
public:
	ShaperActuator() = default;
	// Sets the shaper of device `ifindex`, installing it first if the device has none. The
	// device's root qdisc must be the kernel's default (handle 0) or ours: EBUSY, touching
	// nothing, if someone configured another. EINVAL for a zero rate or burst.
	Expected<void> set(uint32_t ifindex, const ShaperSettings &settings);
	// Removes our shaper from the device; the kernel puts its default qdisc back. A shaper
	// that is gone already counts as removed. ENOENT if we installed none there.
	Expected<void> remove(uint32_t ifindex);
	Expected<void> remove_all();
	// The devices with a shaper of ours, and their settings.
	const std::map<uint32_t, ShaperSettings> &installed() const { return installed_; }

private:
	RtnetlinkSocket netlink_;
	std::map<uint32_t, ShaperSettings> installed_;
};

// Removes every shaper of ours (root htb with handle 6761:) in the calling thread's network
// namespace (crash recovery at daemon start). Returns how many were removed.
Expected<size_t> purge_shapers();

// What TCP Small Queues lets a socket keep in a host shaper. TSQ holds back a socket with more
// than max(2 skbs, ~1 ms of its pacing rate) below it, and since Linux 6.0 an skb of a flow
// with a short minimum RTT is sized gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log): up to
// 64 KB (sent as one GSO packet, split into frames by the shaper's tbf) for the tens of
// microseconds of a cluster's RTT. So each steered socket may keep two of those, 128 KB, in
// its device's bucket: with 8 sockets into a 25 Mbit/s bucket, 0.3 s of queue, which their
// RTT and RTO then carry (Documentation/performance/bucket-queue-session27). tcp_tso_rtt_log
// 0 takes the RTT term out (the skb is then about a millisecond of the pacing rate, as before
// 6.0) and TSQ keeps each socket to about two frames in the bucket. It is a sysctl of the
// network namespace: the stock backend engages it while phases of long messages are steered
// (hold_tso_sizing), recorded in the state file first; release() puts it back. Kernels
// without it (before 6.0) need nothing.
class TsoSizing {
public:
	// A record in the store (kept by StateStore::adopt: a predecessor's change that the
	// restore could not put back) makes it engaged with that original, so the next
	// release() tries again.
	explicit TsoSizing(StateStore &store, std::string sysctl_path = kSysctlPath)
		: store_(store), path_(std::move(sysctl_path)), original_(store.state().original_tso_rtt_log)
	{
		engaged_ = original_.has_value();
	}
	static constexpr const char *kSysctlPath = "/proc/sys/net/ipv4/tcp_tso_rtt_log";
	// Sets tcp_tso_rtt_log to 0, recording the value before (idempotent).
	Expected<void> engage();
	// Puts the recorded value back unless the sysctl was changed since (idempotent).
	Expected<void> release();
	// The value before engage() while engaged; nullopt otherwise (also where the kernel has
	// no such sysctl).
	const std::optional<uint32_t> &original() const { return original_; }

private:
	StateStore &store_;
	std::string path_;
	bool engaged_ = false;
	std::optional<uint32_t> original_;
};

// tcp_tso_rtt_log (at `path`) back to `original` if it still holds the 0 we set: a value
// written since is its writer's (an administrator's, another tool's) and stays. true if put
// back; false if left alone, or where the kernel has no such sysctl.
Expected<bool> put_back_tso_rtt_log(const std::string &path, uint32_t original);

// The value of a sysctl file holding one unsigned integer (/proc/sys/...).
Expected<uint32_t> read_sysctl_u32(const std::string &path);
Expected<void> write_sysctl_u32(const std::string &path, uint32_t value);

// ------------------------------------------------------------------ route metrics

// The route protocol that marks our routes (rtm_protocol; `ip route show proto 167`).
// Unused by the kernel's RTPROT_* and by iproute2's rt_protos (0xbd = 189 is RIP). Name it
// for iproute2 with a line "167 gappace" in /etc/iproute2/rt_protos.d/gappace.conf.
inline constexpr uint8_t kRouteProtocolGappace = 167;

// What our host route adds to the route in use.
struct RouteSettings {
	// RTAX_RTO_MIN, in milliseconds (the kernel's unit for this metric), always locked:
	// tcp_rto_min() only honours a locked RTO_MIN. 1..120000 (TCP_RTO_MAX).
	uint32_t rto_min_ms = 0;
	bool quickack = false; // RTAX_QUICKACK 1: no delayed ACKs towards the peer
};

// The route the kernel uses now to reach an address (RTM_GETROUTE), and what we need to
// know about the FIB entry it came from (RTM_F_FIB_MATCH).
struct RouteInUse {
	uint32_t table = 0;
	uint32_t oif = 0;
	std::optional<Endpoint> gateway;
	std::optional<Endpoint> prefsrc; // the source address the kernel picks
	uint8_t fib_dst_len = 0;	 // prefix length of the FIB entry that matched
	uint8_t fib_protocol = 0;	 // and its protocol
	bool onlink = false;		 // its nexthop is RTNH_F_ONLINK
	// The FIB entry's metrics, copied to our host route: metrics[RTAX_*] (index 0 unused,
	// 0 = not set) and RTAX_CC_ALGO, the one metric the kernel reports as a name.
	std::vector<uint32_t> metrics;
	std::string congestion_control;
};
Expected<RouteInUse> lookup_route(const Endpoint &peer);

// Adds and removes our host routes.
class RouteActuator {
public:
	explicit RouteActuator(StateStore &store) : store_(store) {}

	// Adds a host route (/32, /128) to `peer` through the nexthop in use now, with the route's
	// metrics plus `settings`. If we have one for `peer` already, its metrics are replaced.
	// EEXIST, touching nothing, if a host route to `peer` exists that is not ours; EINVAL for
	// bad settings or a peer the kernel reaches by a route that is not unicast (a local or
	// multicast address); the kernel's ENETUNREACH/EHOSTUNREACH if no route leads there.
	// The port of `peer` is ignored.
	Expected<void> apply(const Endpoint &peer, const RouteSettings &settings);
	// Deletes our host route to `peer` (only ours: the delete names our protocol). A route
	// that is gone already counts as deleted. ENOENT if we never added one.
	Expected<void> revert(const Endpoint &peer);
	// Reverts every route; tries them all and returns the first failure.
	Expected<void> revert_all();

private:
	StateStore &store_;
	RtnetlinkSocket netlink_; // one for every change
	// The route in use before ours, per peer (format_endpoint): a new apply to the same peer
	// must copy its metrics, not those of our own route.
	std::map<std::string, RouteInUse> replaced_;
};

// Deletes every route with our protocol in the calling thread's network namespace, in every
// table, IPv4 and IPv6 (crash recovery at daemon start). Returns how many were deleted.
Expected<size_t> purge_routes();

// ------------------------------------------------------------------ crash recovery

struct RestoreReport {
	size_t routes_deleted = 0;	   // our routes that were still there
	size_t pacing_restored = 0;	   // sockets whose original rate, priority or RTO minimum we put back
	size_t already_gone = 0;	   // routes/sockets/processes that no longer existed
	bool tso_rtt_log_restored = false; // tcp_tso_rtt_log put back (TsoSizing)
	std::vector<Error> failures;	   // what could not be undone (kept in the state file)
};

// Undoes everything a previous daemon recorded in the state file at `path`, then rewrites the
// file with only what could not be undone (removes nothing else). A missing file means there
// is nothing to undo. Fails only if the file cannot be read, parsed or rewritten; undo errors
// are in the report. Routes recorded in another network namespace than the caller's are not
// touched (a failure in the report).
Expected<RestoreReport> restore_from_state(const std::string &path);

} // namespace gp::stock
