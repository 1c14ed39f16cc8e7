// Waiting while `rto set` holds its lease: the RTO override lives as long as the netlink
// socket that made it, so gapctl keeps that socket open until SIGINT, SIGTERM or SIGHUP,
// or until the override's TTL has passed. Signals arrive through a signalfd: nothing runs
// in signal context.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <optional>

#include "expected.hpp"
#include "unique_fd.hpp"

namespace gp {

using HoldClock = std::chrono::steady_clock;

// How long after the TTL gapctl still waits, so that the lease ends by the kernel's timer
// rather than by our socket closing (either way the connection gets its values back).
inline constexpr std::chrono::milliseconds kTtlMargin{200};

// When the wait ends by itself: TTL + margin after `start`; nullopt without a TTL (wait
// for a signal only).
std::optional<HoldClock::time_point> hold_deadline(HoldClock::time_point start, std::optional<uint32_t> ttl_ms);

// The poll() timeout until `deadline`: -1 without one, 0 once it has passed, else the
// milliseconds left rounded up (never wakes early) and capped at INT_MAX.
int poll_timeout_ms(std::optional<HoldClock::time_point> deadline, HoldClock::time_point now);

// Blocks SIGINT, SIGTERM and SIGHUP (those not ignored when gapctl started: nohup, `&` in a
// script) for the calling thread and reads them from a signalfd; the destructor restores
// the previous signal mask. Made before the request is sent, so
// that a Ctrl-C during it is not lost: the wait then ends at once.
class HoldSignals {
public:
	static Expected<HoldSignals> block();

	HoldSignals(HoldSignals &&other) noexcept;
	HoldSignals &operator=(HoldSignals &&) = delete;
	HoldSignals(const HoldSignals &) = delete;
	HoldSignals &operator=(const HoldSignals &) = delete;
	~HoldSignals();

	struct Ended {
		int signal = 0; // the signal that ended the wait; 0 when the deadline passed
	};
	// Waits for one of the signals or the deadline (nullopt: no deadline).
	Expected<Ended> wait(std::optional<HoldClock::time_point> deadline);

private:
	HoldSignals(UniqueFd fd, const sigset_t &previous) noexcept;

	UniqueFd fd_;
	sigset_t previous_{};
	bool restore_ = false;
};

} // namespace gp
