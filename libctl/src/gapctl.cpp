// libgapctl: the C ABI of gapctl.h over a small C++ core.
//
// The caller's cost is bounded by design: gapctl_phase_begin/end validate, encode the hint
// into a preallocated slot of a fixed ring and publish it without a lock (a bounded
// multi-producer queue after Vyukov: each slot carries a sequence number that says whose turn
// it is), and wake the sender thread with one eventfd write only if it sleeps. The sender
// thread owns the carrier (the kernel's genl family, or the daemon's seqpacket socket), sends
// without blocking, counts what it could not deliver, and reconnects at most once a second.
//
// Waking a sleeping thread costs more than the send it would do (a cross-CPU wake-up: 10-18
// us of the caller's CPU against 2-4 us for the send), and an application's hints are mostly
// isolated calls that find the thread asleep. So a caller who finds the thread asleep and the
// ring empty sends the hint itself, holding the carrier for the moment of one non-blocking
// send. The thread takes over when the caller's hints come faster than its own sends take
// (a burst, where the ring and one wake-up per burst are cheaper), and for whatever a direct
// send could not finish (a full or broken carrier, a reconnect): the caller never waits.
// In a burst the thread is not rung at all: the burst's first ring-bound hint arms a timer
// (a syscall that wakes nobody) and the thread looks at the ring kBurstLook later; while it
// finds hints there, it keeps looking at that interval before it sleeps again. A burst's
// hints thus cost the caller one direct send and one timer, not a send and a cross-CPU
// wake-up, and they reach the daemon at most about kBurstLook later than they would have.
// Nothing here throws across the C ABI: every entry point catches and returns -ENOMEM/-EINVAL.
#include "gapctl.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "hint_codec.hpp"
#include "netlink.hpp"
#include "unique_fd.hpp"
#include "unix_address.hpp"

namespace {

using gp::hint::Peer;
using Clock = std::chrono::steady_clock;

constexpr size_t kRingSlots = 256;		// hints in flight per handle before drops
constexpr size_t kSlotReserve = 4096;		// covers ~45 tuple peers without reallocating
constexpr auto kReconnectInterval = std::chrono::seconds(1);
constexpr auto kCloseFlushLimit = std::chrono::milliseconds(100);
constexpr int kSlowDaemonWaitMs = 20;	// per hint, in the sender thread only
// How soon the sender thread looks at the ring after a burst's hint, and again while a burst
// goes on. Short against any phase worth pacing (milliseconds), long against a syscall.
constexpr auto kBurstLook = std::chrono::microseconds(50);
constexpr size_t kQuietEntries = 256;	// slots for signatures the daemon's quiet advice is kept for
constexpr uint32_t kQuietMaxMs = 60000;	// whatever the daemon says
// A quiet phase's id: GAPCTL_PHASE_QUIET, the generation (7 bits) and index (8 bits) of the
// advice slot it was skipped under, a 48-bit count. Its END adds its duration to that slot's
// summary unless the slot has changed hands since (another generation).
constexpr int kQuietSlotShift = 48, kQuietGenerationShift = 56;
constexpr uint64_t kQuietCountMask = (uint64_t{1} << kQuietSlotShift) - 1;
constexpr uint32_t kQuietGenerationMask = 0x7f;
static_assert(kQuietEntries <= 256, "a quiet phase's id holds the slot in 8 bits");

timespec to_timespec(std::chrono::nanoseconds d)
{
	const auto ns = d.count();
	return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

// Bumped in the child after fork(): handles opened before it are dead there (no thread).
std::atomic<uint64_t> g_fork_generation{0};
std::atomic<uint64_t> g_next_phase_id{1};
std::once_flag g_atfork_once;

static_assert((kRingSlots & (kRingSlots - 1)) == 0, "the ring's index is a mask");

// One hint in the ring. `sequence` says whose turn it is: equal to the position a producer
// will claim when the slot is free, position + 1 once that producer published it, and
// position + kRingSlots when the sender thread has sent it (free for the next lap).
struct Slot {
	std::atomic<uint64_t> sequence{0};
	std::vector<uint8_t> bytes;
	size_t len = 0;
};

// The carrier the sender thread uses now.
class Carrier {
public:
	uint32_t kind() const { return kind_; }
	int poll_fd() const
	{
		if (kind_ == GAPCTL_CARRIER_KERNEL)
			return kernel_->fd();
		return kind_ == GAPCTL_CARRIER_SOCKET ? socket_.get() : -1;
	}
	uint16_t family_id() const { return family_id_; }

	static gp::UniqueFd connect_daemon_socket()
	{
		const char *path = std::getenv("GAPPACE_HINTS_SOCK");
		if (!path || !*path)
			path = GAPPACE_HINTS_SOCKET;
		auto addr = gp::make_unix_address(path); // "@name": abstract, per network namespace
		if (!addr)
			return {};
		gp::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
		if (!fd || ::connect(fd.get(), addr->get(), addr->len) < 0)
			return {};
		return fd;
	}

	// Picks the kernel if the gappace family exists (unless told not to), else the socket.
	void connect(bool allow_kernel)
	{
		reset();
		if (allow_kernel) {
			auto nl = gp::NetlinkSocket::open(NETLINK_GENERIC);
			if (nl) {
				auto id = nl->genl_family_id(GAPPACE_GENL_NAME);
				if (id) {
					// Errors of hints come back asynchronously; never let them block us.
					fcntl(nl->fd(), F_SETFL, fcntl(nl->fd(), F_GETFL) | O_NONBLOCK);
					kernel_.emplace(std::move(*nl));
					family_id_ = *id;
					kind_ = GAPCTL_CARRIER_KERNEL;
					// Hints go through the kernel; the daemon's advice can only come back
					// over its socket. Without one, no advice: nothing else changes.
					advice_ = connect_daemon_socket();
					return;
				}
			}
		}
		gp::UniqueFd fd = connect_daemon_socket();
		if (!fd)
			return;
		socket_ = std::move(fd);
		family_id_ = 0;
		kind_ = GAPCTL_CARRIER_SOCKET;
	}

	void reset()
	{
		kernel_.reset();
		socket_.reset();
		advice_.reset();
		kind_ = GAPCTL_CARRIER_NONE;
	}

	// Where the daemon's advice arrives: the socket carrier itself, or, with the kernel
	// carrier, the daemon's socket opened for advice only. -1: no advice can arrive.
	int advice_fd() const { return kind_ == GAPCTL_CARRIER_SOCKET ? socket_.get() : advice_.get(); }
	// The advice channel of the kernel carrier was closed by the daemon (restart, stop).
	void drop_advice_channel() { advice_.reset(); }

	// 0 on success, else a positive errno; EAGAIN means "full", anything else "broken".
	int send(const uint8_t *bytes, size_t len)
	{
		int fd = poll_fd();
		if (fd < 0)
			return ENOTCONN;
		ssize_t sent;
		if (kind_ == GAPCTL_CARRIER_KERNEL) {
			sockaddr_nl kernel{};
			kernel.nl_family = AF_NETLINK;
			sent = ::sendto(fd, bytes, len, MSG_DONTWAIT, reinterpret_cast<sockaddr *>(&kernel), sizeof(kernel));
		} else {
			sent = ::send(fd, bytes, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		}
		if (sent == static_cast<ssize_t>(len))
			return 0;
		return sent < 0 ? errno : EMSGSIZE;
	}

	// Reads what came back without blocking: errors of earlier hints from the kernel, and
	// the daemon's advice on the socket. Returns the number of errors.
	template <class OnAdvice> uint64_t drain_replies(std::string &last_error, OnAdvice &&on_advice)
	{
		alignas(nlmsghdr) char buf[8192];
		// Advice we cannot read is ignored: it is only ever an offer.
		if (const int fd = advice_fd(); fd >= 0) {
			for (int round = 0; round < 64; ++round) {
				ssize_t received = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
				if (received <= 0)
					break;
				int left = static_cast<int>(received);
				for (auto *nlh = reinterpret_cast<const nlmsghdr *>(buf); mnl_nlmsg_ok(nlh, left);
				     nlh = mnl_nlmsg_next(nlh, &left))
					if (auto advice = gp::hint::decode_advice(nlh))
						on_advice(*advice);
			}
		}
		if (kind_ != GAPCTL_CARRIER_KERNEL)
			return 0;
		uint64_t errors = 0;
		for (int round = 0; round < 64; ++round) {
			ssize_t received = ::recv(kernel_->fd(), buf, sizeof(buf), MSG_DONTWAIT);
			if (received <= 0)
				break;
			int left = static_cast<int>(received);
			for (auto *nlh = reinterpret_cast<const nlmsghdr *>(buf); mnl_nlmsg_ok(nlh, left);
			     nlh = mnl_nlmsg_next(nlh, &left)) {
				if (nlh->nlmsg_type != NLMSG_ERROR)
					continue;
				if (auto error = gp::decode_ack(nlh)) {
					++errors;
					last_error = error->message;
				}
			}
		}
		return errors;
	}

private:
	uint32_t kind_ = GAPCTL_CARRIER_NONE;
	std::optional<gp::NetlinkSocket> kernel_;
	gp::UniqueFd socket_;
	gp::UniqueFd advice_;	// kernel carrier: the daemon's socket, read for advice only
	uint16_t family_id_ = 0;
};

} // namespace

struct gapctl {
	uint32_t flags = 0;
	uint64_t fork_generation = 0;
	std::atomic<uint32_t> seq{0};

	std::unique_ptr<Slot[]> ring;		// kRingSlots slots
	std::atomic<uint64_t> claimed{0};	// next position a producer claims
	uint64_t next_to_send = 0;		// the sender thread's position (its own)
	std::atomic<uint64_t> sent_through{0};	// positions below this are sent or dropped

	std::mutex lock;			// flush's wait and, without a thread, the carrier
	std::condition_variable drained;	// sent_through moved
	Slot direct;				// without a thread: the one slot, under lock

	// Threaded: who may use the carrier. The sender thread holds it while awake; a caller
	// takes it only with try_lock while the thread sleeps (see send_directly).
	std::mutex carrier_lock;
	// When the last hint was handed over (either way), and how long the last direct send
	// took. Hints that come sooner after each other than one send takes are a burst: the
	// thread, once woken, keeps up with them at a fraction of a send's cost each, while
	// hints spaced wider would find it asleep every time.
	std::atomic<int64_t> last_hint_ns{0}, direct_cost_ns{0};
	std::atomic<uint64_t> sent_directly{0};

	gp::UniqueFd wake;			// eventfd: the caller's doorbell
	gp::UniqueFd burst_timer;		// timerfd: a look at the ring, kBurstLook after arming
	std::atomic<bool> sleeping{false};	// the thread waits on the doorbell
	// The thread will look at the ring within kBurstLook (a burst's timer is armed, or the
	// thread naps between a burst's hints): nobody needs to ring.
	std::atomic<bool> look_scheduled{false};
	std::atomic<uint64_t> doorbells{0}, timed_looks{0};
	std::atomic<bool> stop{false};
	std::thread thread;

	Carrier carrier;			// threaded: under carrier_lock; else under lock
	Clock::time_point last_connect{};
	bool congested = false;			// the daemon did not read within kSlowDaemonWaitMs
	std::string last_error;

	// The daemon's quiet advice: signature -> until when. Written by whoever drains the
	// carrier, read by callers without a lock; a torn read costs one hint sent or skipped.
	// With the daemon's quiet_summary, the phases skipped under a slot's advice are counted
	// there (count, summed durations from their END) and sent with the signature's next BEGIN.
	// Two relaxed counters, taken one after the other: a phase ending meanwhile may land in
	// the next summary's count but this one's time, which skews one summary by one phase.
	struct QuietEntry {
		std::atomic<uint64_t> signature{0};
		std::atomic<int64_t> until_ns{0};
		std::atomic<uint32_t> generation{0};	// bumped when the slot takes another signature
		std::atomic<bool> summary{false};
		std::atomic<uint32_t> skipped{0};
		std::atomic<uint64_t> skipped_ns{0};
	};
	std::array<QuietEntry, kQuietEntries> quiet;
	std::atomic<bool> advised{false};	// any advice ever: callers skip the lookup until then
	std::atomic<bool> advice_channel{false};	// advice can arrive: hints carry a signature

	std::atomic<uint64_t> queued{0}, sent{0}, dropped{0}, rejected{0}, carrier_errors{0}, quieted{0};
	std::atomic<uint32_t> carrier_kind{GAPCTL_CARRIER_NONE};

	bool threaded() const { return !(flags & GAPCTL_OPEN_NO_THREAD); }

	static int64_t now_ns()
	{
		return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
	}

	// Each signature may live in one of two slots (two halves of it pick them). With one slot,
	// two phases a rank alternates between (an all-to-all and the barrier around it) whose
	// signatures met in it evicted each other's advice: every phase of that rank reached the
	// daemon, and a collective of 16 ranks ran at the pace of that one (Open MPI, 1 KB, 8+8
	// hosts: 1438 advices to one rank, under 300 to each other).
	static size_t first_slot(uint64_t signature) { return signature % kQuietEntries; }
	static size_t second_slot(uint64_t signature) { return (signature >> 32) % kQuietEntries; }

	bool quiet_in(const QuietEntry &entry, uint64_t signature, int64_t now) const
	{
		return entry.signature.load(std::memory_order_acquire) == signature &&
		       now < entry.until_ns.load(std::memory_order_relaxed);
	}

	// The slot whose advice makes `signature` quiet now, if any.
	std::optional<size_t> quiet_slot(uint64_t signature) const
	{
		if (!advised.load(std::memory_order_relaxed))
			return std::nullopt;
		const int64_t now = now_ns();
		if (quiet_in(quiet[first_slot(signature)], signature, now))
			return first_slot(signature);
		if (quiet_in(quiet[second_slot(signature)], signature, now))
			return second_slot(signature);
		return std::nullopt;
	}

	uint64_t quiet_phase_id(size_t slot) const
	{
		const uint64_t generation = quiet[slot].generation.load(std::memory_order_relaxed) & kQuietGenerationMask;
		return GAPCTL_PHASE_QUIET | generation << kQuietGenerationShift | uint64_t{slot} << kQuietSlotShift |
		       (g_next_phase_id.fetch_add(1, std::memory_order_relaxed) & kQuietCountMask);
	}

	void count_quiet_end(uint64_t phase_id, uint64_t duration_ns)
	{
		QuietEntry &entry = quiet[(phase_id >> kQuietSlotShift) & 0xff];
		const uint32_t generation = static_cast<uint32_t>(phase_id >> kQuietGenerationShift) & kQuietGenerationMask;
		if (!duration_ns || !entry.summary.load(std::memory_order_relaxed) ||
		    (entry.generation.load(std::memory_order_relaxed) & kQuietGenerationMask) != generation)
			return;
		entry.skipped.fetch_add(1, std::memory_order_relaxed);
		entry.skipped_ns.fetch_add(duration_ns, std::memory_order_relaxed);
	}

	// What was skipped under `signature`'s advice since its last BEGIN, taken (zeroed).
	void take_quiet_summary(uint64_t signature, gp::hint::Header &header)
	{
		if (!advised.load(std::memory_order_relaxed))
			return;
		for (size_t slot : {first_slot(signature), second_slot(signature)}) {
			QuietEntry &entry = quiet[slot];
			if (entry.signature.load(std::memory_order_acquire) != signature)
				continue;
			const uint32_t phases = entry.skipped.exchange(0, std::memory_order_relaxed);
			const uint64_t ns = entry.skipped_ns.exchange(0, std::memory_order_relaxed);
			if (phases && ns) {
				header.quiet_phases = phases;
				header.quiet_ns = ns;
			}
			return;
		}
	}

	// Where new advice for `signature` goes: a slot that holds it already, else a free or
	// expired one, else the one whose advice ends first.
	QuietEntry &slot_for(uint64_t signature)
	{
		QuietEntry &a = quiet[first_slot(signature)], &b = quiet[second_slot(signature)];
		const int64_t now = now_ns();
		if (a.signature.load(std::memory_order_relaxed) == signature)
			return a;
		if (b.signature.load(std::memory_order_relaxed) == signature)
			return b;
		const int64_t a_until = a.until_ns.load(std::memory_order_relaxed);
		const int64_t b_until = b.until_ns.load(std::memory_order_relaxed);
		if (a_until <= now)
			return a;
		if (b_until <= now)
			return b;
		return a_until <= b_until ? a : b;
	}

	void take_advice(const gp::hint::Advice &advice)
	{
		if (!advice.signature)
			return;
		QuietEntry &entry = slot_for(advice.signature);
		const int64_t quiet_ns = int64_t{std::min(advice.quiet_ms, kQuietMaxMs)} * 1000000;
		entry.until_ns.store(0, std::memory_order_relaxed);
		if (entry.signature.load(std::memory_order_relaxed) != advice.signature) {
			// Another signature's summary is not this one's: what it had not sent is lost.
			entry.generation.fetch_add(1, std::memory_order_relaxed);
			entry.skipped.store(0, std::memory_order_relaxed);
			entry.skipped_ns.store(0, std::memory_order_relaxed);
		}
		entry.summary.store(advice.quiet_summary, std::memory_order_relaxed);
		entry.signature.store(advice.signature, std::memory_order_release);
		entry.until_ns.store(now_ns() + quiet_ns, std::memory_order_relaxed);
		advised.store(true, std::memory_order_relaxed);
	}

	void drain_replies()
	{
		carrier_errors.fetch_add(
			carrier.drain_replies(last_error, [this](const gp::hint::Advice &a) { take_advice(a); }),
			std::memory_order_relaxed);
	}

	void ensure_carrier(bool force = false)
	{
		if (carrier.kind() != GAPCTL_CARRIER_NONE)
			return;
		auto now = Clock::now();
		if (!force && now - last_connect < kReconnectInterval)
			return;
		last_connect = now;
		carrier.connect(!(flags & GAPCTL_OPEN_NO_KERNEL));
		carrier_kind.store(carrier.kind(), std::memory_order_relaxed);
		advice_channel.store(carrier.advice_fd() >= 0, std::memory_order_relaxed);
	}

	void count_sent()
	{
		congested = false;
		// The kernel answers a hint while sendto runs: count its error before the hint
		// counts as sent, so that a reader who sees it sent also sees the error.
		if (carrier.kind() == GAPCTL_CARRIER_KERNEL)
			drain_replies();
		sent.fetch_add(1, std::memory_order_release);
	}

	void deliver(Slot &slot)
	{
		if (slot.len == 0) { // its encoding failed (out of memory): counted, never sent
			dropped.fetch_add(1, std::memory_order_relaxed);
			return;
		}
		ensure_carrier();
		// Encoded without knowing the carrier: the kernel needs the family id, the socket 0.
		reinterpret_cast<nlmsghdr *>(slot.bytes.data())->nlmsg_type = carrier.family_id();
		int err = carrier.send(slot.bytes.data(), slot.len);
		if (err == EAGAIN && threaded() && carrier.kind() == GAPCTL_CARRIER_SOCKET && !congested) {
			// A slow daemon: this is the sender thread, not the caller, so wait a little
			// (bounded) rather than drop; a lost END would leave a phase's settings applied
			// until the daemon's phase timeout. A daemon that stays stuck is not waited
			// for again until it reads.
			pollfd out{carrier.poll_fd(), POLLOUT, 0};
			if (::poll(&out, 1, kSlowDaemonWaitMs) == 1 && (out.revents & POLLOUT))
				err = carrier.send(slot.bytes.data(), slot.len);
			congested = err == EAGAIN;
		}
		if (err == 0) {
			count_sent();
			return;
		}
		dropped.fetch_add(1, std::memory_order_relaxed);
		if (err != EAGAIN && err != EMSGSIZE) { // broken: reconnect later
			carrier.reset();
			carrier_kind.store(GAPCTL_CARRIER_NONE, std::memory_order_relaxed);
			advice_channel.store(false, std::memory_order_relaxed);
		}
	}

	// The slot at the sender's position, if a producer published it.
	Slot *published_slot()
	{
		Slot &slot = ring[next_to_send & (kRingSlots - 1)];
		return slot.sequence.load(std::memory_order_seq_cst) == next_to_send + 1 ? &slot : nullptr;
	}

	void sender_loop()
	{
		// Signals belong to the application's threads, never to ours.
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, nullptr);
		// Naps between a burst's hints are short timeouts; the default slack (50 us) would
		// double them.
		prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
		std::unique_lock carrier_guard(carrier_lock);
		ensure_carrier(true);
		bool looked = false; // this round began with a burst's look (timer or nap), not a doorbell
		for (;;) {
			// From here on a producer who finds us asleep rings or arms the timer again: its
			// slot is published before it reads the flag, so what it skipped for is drained below.
			look_scheduled.store(false, std::memory_order_seq_cst);
			bool moved = false;
			while (Slot *slot = published_slot()) {
				deliver(*slot);
				slot->sequence.store(next_to_send + kRingSlots, std::memory_order_release);
				sent_through.store(++next_to_send, std::memory_order_release);
				moved = true;
			}
			if (moved) {
				std::lock_guard guard(lock); // pairs with gapctl_flush's predicate check
				drained.notify_all();
			}
			if (stop.load())
				return;
			drain_replies();
			// A burst goes on while each look finds hints: nap until the next look, with
			// the flag that spares producers the doorbell meanwhile.
			const bool nap = looked && moved;
			looked = false;
			if (nap)
				look_scheduled.store(true, std::memory_order_seq_cst);
			// Announce sleep, then look again: a producer publishes before it reads
			// `sleeping` (both seq_cst), so either it rings or we see its slot here.
			sleeping.store(true, std::memory_order_seq_cst);
			if (!published_slot() && !stop.load()) {
				const int advice = carrier.kind() == GAPCTL_CARRIER_KERNEL ? carrier.advice_fd() : -1;
				// poll() skips negative descriptors.
				pollfd fds[4] = {{wake.get(), POLLIN, 0},
						 {carrier.poll_fd(), POLLIN, 0},
						 {advice, POLLIN, 0},
						 {burst_timer.get(), POLLIN, 0}};
				const auto idle = std::chrono::milliseconds(carrier.kind() == GAPCTL_CARRIER_NONE ? 1000 : 5000);
				const timespec timeout = to_timespec(nap ? std::chrono::nanoseconds(kBurstLook)
									 : std::chrono::nanoseconds(idle));
				// Asleep, the carrier is free for callers to send on; they never close or
				// replace its descriptors, so the ones polled here stay valid.
				carrier_guard.unlock();
				const int ready = ::ppoll(fds, 4, &timeout, nullptr);
				carrier_guard.lock();
				uint64_t expirations;
				looked = (nap && ready == 0) ||
					 ((fds[3].revents & POLLIN) &&
					  ::read(burst_timer.get(), &expirations, sizeof(expirations)) > 0);
				if (advice >= 0 && (fds[2].revents & (POLLHUP | POLLERR))) {
					carrier.drop_advice_channel();
					advice_channel.store(false, std::memory_order_relaxed);
				}
				// The daemon closed its end (restart, stop): POLLHUP would wake us
				// forever. Drop the carrier; the reconnect path takes it from here.
				if (fds[1].fd >= 0 && (fds[1].revents & (POLLHUP | POLLERR)) &&
				    carrier.kind() == GAPCTL_CARRIER_SOCKET) {
					carrier.reset();
					carrier_kind.store(GAPCTL_CARRIER_NONE, std::memory_order_relaxed);
					advice_channel.store(false, std::memory_order_relaxed);
				}
			}
			sleeping.store(false, std::memory_order_relaxed);
			uint64_t ignored;
			while (::read(wake.get(), &ignored, sizeof(ignored)) > 0) {
			}
			ensure_carrier();
		}
	}

	// A caller sends the hint itself if the sender thread sleeps, nothing is queued before it
	// (so the caller's own earlier hints are sent: an END never overtakes its BEGIN), the
	// carrier is up and the caller is not in a burst. Anything but Sent leaves the hint to the
	// ring, which retries the send (a full daemon socket, a broken carrier and reconnecting
	// are the thread's business: it may wait); Burst says why, so that the ring's thread is
	// fetched by the timer instead of the doorbell.
	enum class Direct { Sent, Burst, NotNow };
	template <class Encode> Direct send_directly(size_t max_len, Encode &encode)
	{
		if (!sleeping.load(std::memory_order_seq_cst))
			return Direct::NotNow;
		const int64_t start = now_ns();
		if (start - last_hint_ns.load(std::memory_order_relaxed) < direct_cost_ns.load(std::memory_order_relaxed))
			return Direct::Burst;
		std::unique_lock guard(carrier_lock, std::try_to_lock);
		if (!guard.owns_lock() || carrier.kind() == GAPCTL_CARRIER_NONE ||
		    sent_through.load(std::memory_order_acquire) != claimed.load(std::memory_order_acquire))
			return Direct::NotNow;
		thread_local std::vector<uint8_t> buffer;
		if (buffer.size() < max_len)
			buffer.resize(max_len);
		const size_t len = encode(std::span<uint8_t>(buffer));
		if (len == 0)
			return Direct::NotNow;
		reinterpret_cast<nlmsghdr *>(buffer.data())->nlmsg_type = carrier.family_id();
		if (carrier.send(buffer.data(), len) != 0)
			return Direct::NotNow;
		queued.fetch_add(1, std::memory_order_relaxed);
		count_sent();
		sent_directly.fetch_add(1, std::memory_order_relaxed);
		const int64_t end = now_ns();
		direct_cost_ns.store(end - start, std::memory_order_relaxed);
		last_hint_ns.store(end, std::memory_order_relaxed);
		return Direct::Sent;
	}

	// After publishing a slot: make sure the thread will look at it. Awake, it does anyway
	// (see sender_loop). Asleep: in a burst, arm its timer (no wake-up now; the burst's later
	// hints find the look scheduled and make no syscall at all); otherwise ring the doorbell.
	void see_to_look(bool burst)
	{
		if (!sleeping.load(std::memory_order_seq_cst))
			return;
		if (burst) {
			if (!look_scheduled.exchange(true, std::memory_order_seq_cst)) {
				itimerspec in{};
				in.it_value = to_timespec(std::chrono::nanoseconds(kBurstLook));
				if (::timerfd_settime(burst_timer.get(), 0, &in, nullptr) == 0) {
					timed_looks.fetch_add(1, std::memory_order_relaxed);
					return;
				}
				// Cannot fail with these arguments; if it does, the doorbell below.
			} else {
				return;
			}
		} else if (look_scheduled.load(std::memory_order_seq_cst)) {
			return;
		}
		if (sleeping.exchange(false)) {
			uint64_t one = 1;
			ssize_t ignored = ::write(wake.get(), &one, sizeof(one));
			(void)ignored;
			doorbells.fetch_add(1, std::memory_order_relaxed);
		}
	}

	// Called by gapctl_phase_begin/end with the encoder for the slot.
	template <class Encode> int enqueue(size_t max_len, Encode &&encode)
	{
		if (!threaded()) {
			std::lock_guard guard(lock);
			if (direct.bytes.size() < max_len)
				direct.bytes.resize(max_len);
			direct.len = encode(std::span<uint8_t>(direct.bytes));
			queued.fetch_add(1, std::memory_order_relaxed);
			deliver(direct);
			drain_replies();
			return 0;
		}
		Direct direct_send = Direct::NotNow;
		try {
			direct_send = send_directly(max_len, encode);
			if (direct_send == Direct::Sent)
				return 0;
		} catch (...) {
			// out of memory for the caller's buffer: the ring's slots are preallocated
		}
		// Claim a position whose slot the sender thread has released.
		uint64_t position = claimed.load(std::memory_order_relaxed);
		Slot *slot;
		for (;;) {
			slot = &ring[position & (kRingSlots - 1)];
			const uint64_t sequence = slot->sequence.load(std::memory_order_acquire);
			const auto lag = static_cast<int64_t>(sequence - position);
			if (lag == 0) {
				if (claimed.compare_exchange_weak(position, position + 1, std::memory_order_relaxed))
					break;
			} else if (lag < 0) {
				dropped.fetch_add(1, std::memory_order_relaxed);
				return 0; // the ring is full; dropping is not the caller's error
			} else {
				position = claimed.load(std::memory_order_relaxed);
			}
		}
		size_t len = 0;
		try {
			if (slot->bytes.size() < max_len)
				slot->bytes.resize(max_len);
			len = encode(std::span<uint8_t>(slot->bytes));
		} catch (...) {
			len = 0; // the position must still be published, or the ring stops here
		}
		slot->len = len;
		queued.fetch_add(1, std::memory_order_relaxed);
		slot->sequence.store(position + 1, std::memory_order_seq_cst);
		see_to_look(direct_send == Direct::Burst);
		last_hint_ns.store(now_ns(), std::memory_order_relaxed);
		return len ? 0 : -ENOMEM;
	}
};

namespace {

bool valid_handle(gapctl_t *h) { return h && h->fork_generation == g_fork_generation.load(std::memory_order_relaxed); }

// Converts the caller's peers; -EINVAL names no field (the C caller gets an errno only).
int convert_peer(const gapctl_peer &in, Peer &out)
{
	out = Peer{};
	out.rank = in.rank < 0 ? -1 : in.rank;
	if (in.fd >= 0) {
		sockaddr_storage local{}, remote{};
		socklen_t llen = sizeof(local), rlen = sizeof(remote);
		if (::getsockname(in.fd, reinterpret_cast<sockaddr *>(&local), &llen) < 0 ||
		    ::getpeername(in.fd, reinterpret_cast<sockaddr *>(&remote), &rlen) < 0)
			return -EBADF;
		if (local.ss_family == AF_INET && remote.ss_family == AF_INET) {
			auto *l = reinterpret_cast<sockaddr_in *>(&local);
			auto *r = reinterpret_cast<sockaddr_in *>(&remote);
			out.local = gp::make_endpoint(AF_INET, &l->sin_addr, ntohs(l->sin_port));
			out.remote = gp::make_endpoint(AF_INET, &r->sin_addr, ntohs(r->sin_port));
		} else if (local.ss_family == AF_INET6 && remote.ss_family == AF_INET6) {
			auto *l = reinterpret_cast<sockaddr_in6 *>(&local);
			auto *r = reinterpret_cast<sockaddr_in6 *>(&remote);
			// A dual-stack socket's IPv4 connection (::ffff:a.b.c.d) as the IPv4 tuple the
			// kernel files it under, and the daemon matches.
			out.local = gp::unmapped(gp::make_endpoint(AF_INET6, &l->sin6_addr, ntohs(l->sin6_port)));
			out.remote = gp::unmapped(gp::make_endpoint(AF_INET6, &r->sin6_addr, ntohs(r->sin6_port)));
		} else {
			return -EINVAL;
		}
		return 0;
	}
	if (in.family != AF_INET && in.family != AF_INET6)
		return -EINVAL;
	out.remote = gp::unmapped(gp::make_endpoint(in.family, in.addr, 0));
	if (in.local_port) {
		if (!in.port)
			return -EINVAL;
		out.local = gp::unmapped(gp::make_endpoint(in.family, in.local_addr, in.local_port));
		out.remote.port = in.port;
		if (out.local.family != out.remote.family)
			return -EINVAL; // one address IPv4-mapped, the other not: no connection's
	}
	return 0;
}

// What the daemon's quiet advice is keyed by: the phase's description exactly as the caller
// passed it (fd peers by their numbers: converting them would cost two syscalls each, the
// very cost a quiet phase avoids). A word-at-a-time multiplicative mix, never 0 (0 means
// "no signature"): a collision only makes a phase skip or send one hint it should not.
static_assert(sizeof(gapctl_peer) % sizeof(uint64_t) == 0 && std::has_unique_object_representations_v<gapctl_peer>,
	      "gapctl_peer is hashed as whole words: no padding");

uint64_t phase_signature(const gapctl_phase &phase, uint32_t n_peers)
{
	uint64_t hash = 0x243f6a8885a308d3ULL;
	auto mix = [&hash](uint64_t word) {
		hash = (hash ^ word) * 0x9e3779b97f4a7c15ULL;
		hash ^= hash >> 29;
	};
	mix(uint64_t{phase.kind} << 32 | phase.algorithm);
	mix(uint64_t{phase.flags} << 32 | phase.comm_size);
	mix(phase.bytes_per_peer);
	mix(uint64_t{static_cast<uint32_t>(phase.rank)} << 32 | n_peers);
	for (uint32_t i = 0; i < n_peers; ++i) {
		uint64_t words[sizeof(gapctl_peer) / sizeof(uint64_t)];
		std::memcpy(words, &phase.peers[i], sizeof(words));
		for (uint64_t word : words)
			mix(word);
	}
	return hash ? hash : 1;
}

} // namespace

extern "C" {

int gapctl_open(gapctl_t **handle, uint32_t flags)
{
	if (!handle || (flags & ~(GAPCTL_OPEN_NO_KERNEL | GAPCTL_OPEN_NO_THREAD)))
		return -EINVAL;
	*handle = nullptr;
	try {
		std::call_once(g_atfork_once, [] {
			pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1); });
		});
		auto h = std::make_unique<gapctl>();
		h->flags = flags;
		h->fork_generation = g_fork_generation.load();
		h->ring = std::make_unique<Slot[]>(kRingSlots);
		for (size_t i = 0; i < kRingSlots; ++i) {
			h->ring[i].sequence.store(i, std::memory_order_relaxed); // free for lap 0
			h->ring[i].bytes.resize(kSlotReserve);
		}
		if (h->threaded()) {
			h->wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
			if (!h->wake)
				return -errno;
			h->burst_timer.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
			if (!h->burst_timer)
				return -errno;
			// The thread starts with every signal blocked (it blocks them itself too): the
			// application's process-directed signals must never land on it, not even before
			// its first instruction.
			sigset_t all, before;
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, &before);
			try {
				h->thread = std::thread([raw = h.get()] { raw->sender_loop(); });
			} catch (...) {
				pthread_sigmask(SIG_SETMASK, &before, nullptr);
				throw;
			}
			pthread_sigmask(SIG_SETMASK, &before, nullptr);
		} else {
			h->ensure_carrier(true);
		}
		*handle = h.release();
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (const std::system_error &e) {
		return -(e.code().value() ? e.code().value() : EAGAIN);
	} catch (...) {
		return -EINVAL;
	}
}

void gapctl_close(gapctl_t *handle)
{
	if (!handle)
		return;
	if (handle->fork_generation != g_fork_generation.load()) {
		// A child after fork(): the thread does not exist here, and the parent still uses
		// the descriptors' shared state. Release our memory only.
		handle->thread.detach();
		delete handle;
		return;
	}
	if (handle->threaded()) {
		gapctl_flush(handle, static_cast<int>(kCloseFlushLimit.count()));
		handle->stop.store(true);
		uint64_t one = 1;
		ssize_t ignored = ::write(handle->wake.get(), &one, sizeof(one));
		(void)ignored;
		if (handle->thread.joinable())
			handle->thread.join();
	}
	delete handle;
}

int gapctl_phase_begin(gapctl_t *handle, const struct gapctl_phase *phase, uint64_t *phase_id)
{
	if (!valid_handle(handle))
		return handle ? -ECHILD : -EINVAL;
	auto reject = [&](int err) {
		handle->rejected.fetch_add(1, std::memory_order_relaxed);
		return err;
	};
	if (!phase || !phase_id || phase->struct_size < sizeof(gapctl_phase))
		return reject(-EINVAL);
	if (phase->kind < 1 || phase->kind > GAPPACE_HINT_KIND_MAX || phase->algorithm > GAPPACE_HINT_ALGORITHM_MAX ||
	    (phase->flags & ~(GAPCTL_F_VECTOR | GAPCTL_F_NONBLOCKING | GAPCTL_F_PERSISTENT | GAPCTL_F_RENDEZVOUS)) ||
	    (phase->n_peers && !phase->peers))
		return reject(-EINVAL);
	uint32_t n = phase->n_peers > GAPCTL_MAX_PEERS ? GAPCTL_MAX_PEERS : phase->n_peers;
	// Only where advice can come back (the daemon's socket) does a hint need its signature.
	const uint64_t signature = handle->advice_channel.load(std::memory_order_relaxed) ? phase_signature(*phase, n) : 0;
	if (const auto slot = signature ? handle->quiet_slot(signature) : std::nullopt) {
		handle->quieted.fetch_add(1, std::memory_order_relaxed);
		*phase_id = handle->quiet_phase_id(*slot);
		return phase->n_peers > n ? -E2BIG : 0;
	}
	try {
		thread_local std::vector<Peer> peers;
		peers.resize(n);
		size_t bytes = 0;
		for (uint32_t i = 0; i < n; ++i) {
			if (int err = convert_peer(phase->peers[i], peers[i]))
				return reject(err);
			// The nest's 16-bit length: ~960 IPv6 tuples fit, not 1024.
			bytes += gp::hint::encoded_peer_size(peers[i]);
			if (bytes > gp::hint::kPeerBudget) {
				n = i;
				peers.resize(n);
				break;
			}
		}
		gp::hint::Header header;
		header.event = gp::hint::Event::Begin;
		header.phase_id = g_next_phase_id.fetch_add(1, std::memory_order_relaxed);
		header.kind = phase->kind;
		header.algorithm = phase->algorithm;
		header.flags = phase->flags | (phase->n_peers > n ? GAPPACE_HINT_F_PEERS_TRUNCATED : 0);
		header.bytes_per_peer = phase->bytes_per_peer;
		header.comm_size = phase->comm_size;
		header.rank = phase->rank;
		header.repetitions = phase->repetitions;
		header.signature = signature;
		if (signature)
			handle->take_quiet_summary(signature, header);
		*phase_id = header.phase_id;
		const uint32_t seq = handle->seq.fetch_add(1, std::memory_order_relaxed);
		handle->enqueue(gp::hint::max_encoded_size(n), [&](std::span<uint8_t> buf) {
			return gp::hint::encode(buf, 0, seq, header, peers);
		});
		return phase->n_peers > n ? -E2BIG : 0;
	} catch (const std::bad_alloc &) {
		return reject(-ENOMEM);
	} catch (...) {
		return reject(-EINVAL);
	}
}

int gapctl_phase_end(gapctl_t *handle, uint64_t phase_id, uint64_t duration_ns)
{
	if (!valid_handle(handle))
		return handle ? -ECHILD : -EINVAL;
	if (phase_id == 0 || phase_id == GAPCTL_PHASE_QUIET) {
		handle->rejected.fetch_add(1, std::memory_order_relaxed);
		return -EINVAL;
	}
	if (phase_id & GAPCTL_PHASE_QUIET) {
		handle->count_quiet_end(phase_id, duration_ns); // its BEGIN was never sent
		return 0;
	}

	try {
		gp::hint::Header header;
		header.event = gp::hint::Event::End;
		header.phase_id = phase_id;
		header.duration_ns = duration_ns;
		const uint32_t seq = handle->seq.fetch_add(1, std::memory_order_relaxed);
		return handle->enqueue(gp::hint::max_encoded_size(0), [&](std::span<uint8_t> buf) {
			return gp::hint::encode(buf, 0, seq, header, {});
		});
	} catch (...) {
		return -ENOMEM;
	}
}

int gapctl_flush(gapctl_t *handle, int timeout_ms)
{
	if (!valid_handle(handle))
		return handle ? -ECHILD : -EINVAL;
	if (!handle->threaded())
		return 0;
	// What was published before this call; hints other threads add meanwhile are not waited for.
	const uint64_t target = handle->claimed.load(std::memory_order_acquire);
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
	std::unique_lock guard(handle->lock);
	if (handle->sent_through.load(std::memory_order_acquire) < target) {
		uint64_t one = 1;
		ssize_t ignored = ::write(handle->wake.get(), &one, sizeof(one));
		(void)ignored;
	}
	if (!handle->drained.wait_until(guard, deadline, [&] {
		    return handle->sent_through.load(std::memory_order_acquire) >= target;
	    }))
		return -ETIMEDOUT;
	return 0;
}

int gapctl_get_stats(gapctl_t *handle, struct gapctl_stats *stats)
{
	if (!handle || !stats || stats->struct_size < offsetof(gapctl_stats, hints_quiet))
		return -EINVAL;
	if (!handle->threaded()) {
		std::lock_guard guard(handle->lock);
		handle->drain_replies();
	}
	stats->carrier = handle->carrier_kind.load();
	stats->hints_queued = handle->queued.load();
	stats->hints_sent = handle->sent.load(std::memory_order_acquire);
	stats->hints_dropped = handle->dropped.load();
	stats->hints_rejected = handle->rejected.load();
	stats->carrier_errors = handle->carrier_errors.load();
	if (stats->struct_size >= offsetof(gapctl_stats, hints_quiet) + sizeof(stats->hints_quiet))
		stats->hints_quiet = handle->quieted.load();
	if (stats->struct_size >= offsetof(gapctl_stats, hints_direct) + sizeof(stats->hints_direct))
		stats->hints_direct = handle->sent_directly.load();
	if (stats->struct_size >= offsetof(gapctl_stats, timed_looks) + sizeof(stats->timed_looks)) {
		stats->doorbells = handle->doorbells.load();
		stats->timed_looks = handle->timed_looks.load();
	}
	return 0;
}

const char *gapctl_kind_name(uint32_t kind) { return gp::hint::kind_name(kind); }

uint32_t gapctl_kind_from_name(const char *name) { return name ? gp::hint::kind_from_name(name) : 0; }

const char *gapctl_strerror(int err)
{
	switch (-err) {
	case 0: return "success";
	case EINVAL: return "invalid argument";
	case E2BIG: return "too many peers: the first GAPCTL_MAX_PEERS were sent";
	case ECHILD: return "handle opened before fork(): open a new one in the child";
	case ETIMEDOUT: return "hints still queued at the timeout";
	case ENOMEM: return "out of memory";
	case EBADF: return "a peer fd is not a connected socket";
	default: return strerror(-err);
	}
}

} // extern "C"
