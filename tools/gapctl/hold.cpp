#include "hold.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

namespace gp {
namespace {

Error errno_error(std::string_view what, int err)
{
	return make_error(err, std::string(what) + ": " + std::strerror(err));
}

// The signals that end the hold, except those we were started ignoring: under nohup SIGHUP,
// and in a shell's background job SIGINT, must not end it either.
sigset_t hold_signal_set()
{
	sigset_t set;
	sigemptyset(&set);
	for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
		struct sigaction current {};
		if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN)
			continue;
		sigaddset(&set, signal);
	}
	return set;
}

} // namespace

std::optional<HoldClock::time_point> hold_deadline(HoldClock::time_point start, std::optional<uint32_t> ttl_ms)
{
	if (!ttl_ms)
		return std::nullopt;
	return start + std::chrono::milliseconds(*ttl_ms) + kTtlMargin;
}

int poll_timeout_ms(std::optional<HoldClock::time_point> deadline, HoldClock::time_point now)
{
	if (!deadline)
		return -1;
	if (*deadline <= now)
		return 0;
	const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - now).count();
	return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

HoldSignals::HoldSignals(UniqueFd fd, const sigset_t &previous) noexcept
	: fd_(std::move(fd)), previous_(previous), restore_(true)
{
}

HoldSignals::HoldSignals(HoldSignals &&other) noexcept
	: fd_(std::move(other.fd_)), previous_(other.previous_), restore_(std::exchange(other.restore_, false))
{
}

HoldSignals::~HoldSignals()
{
	fd_.reset();
	if (restore_)
		pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

Expected<HoldSignals> HoldSignals::block()
{
	const sigset_t set = hold_signal_set();
	sigset_t previous;
	if (int err = pthread_sigmask(SIG_BLOCK, &set, &previous); err != 0)
		return errno_error("cannot block signals", err);
	UniqueFd fd(signalfd(-1, &set, SFD_CLOEXEC));
	if (!fd) {
		const int err = errno;
		pthread_sigmask(SIG_SETMASK, &previous, nullptr);
		return errno_error("cannot create a signalfd", err);
	}
	return HoldSignals(std::move(fd), previous);
}

Expected<HoldSignals::Ended> HoldSignals::wait(std::optional<HoldClock::time_point> deadline)
{
	for (;;) {
		const int timeout = poll_timeout_ms(deadline, HoldClock::now());
		if (timeout == 0)
			return Ended{0};
		pollfd fds{fd_.get(), POLLIN, 0};
		const int ready = poll(&fds, 1, timeout);
		if (ready < 0) {
			if (errno == EINTR) // SIGCONT after Ctrl-Z, SIGWINCH, ...
				continue;
			return errno_error("cannot wait for signals", errno);
		}
		if (ready == 0)
			continue; // the deadline, checked again above
		signalfd_siginfo info;
		const ssize_t got = read(fd_.get(), &info, sizeof(info));
		if (got == static_cast<ssize_t>(sizeof(info)))
			return Ended{static_cast<int>(info.ssi_signo)};
		if (got < 0 && errno != EINTR && errno != EAGAIN)
			return errno_error("cannot read the signalfd", errno);
	}
}

} // namespace gp
