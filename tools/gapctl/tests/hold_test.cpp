// The waiting of `rto set`, without real time: deadlines are computed from given instants,
// and the signal path is driven by a signal raised while it is blocked.
#include <gtest/gtest.h>
#include <signal.h>

#include <climits>

#include "hold.hpp"

namespace gp {
namespace {

using std::chrono::milliseconds;
using std::chrono::microseconds;

bool ignored(int signal)
{
	struct sigaction current {};
	return sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

const HoldClock::time_point kStart{std::chrono::seconds(1000)};

TEST(HoldDeadline, NoTtlMeansNoDeadline)
{
	EXPECT_FALSE(hold_deadline(kStart, std::nullopt));
	EXPECT_EQ(poll_timeout_ms(std::nullopt, kStart), -1);
}

TEST(HoldDeadline, TtlPlusMargin)
{
	auto deadline = hold_deadline(kStart, 60000u);
	ASSERT_TRUE(deadline);
	EXPECT_EQ(*deadline - kStart, milliseconds(60000) + kTtlMargin);
	EXPECT_GT(kTtlMargin, milliseconds(0));
	EXPECT_LE(kTtlMargin, milliseconds(1000));
	EXPECT_EQ(poll_timeout_ms(deadline, kStart), 60000 + static_cast<int>(kTtlMargin.count()));
}

TEST(HoldDeadline, LargestTtlDoesNotOverflow)
{
	auto deadline = hold_deadline(kStart, UINT32_MAX);
	ASSERT_TRUE(deadline);
	EXPECT_EQ(*deadline - kStart, milliseconds(UINT32_MAX) + kTtlMargin);
	EXPECT_EQ(poll_timeout_ms(deadline, kStart), INT_MAX); // poll() takes an int: wakes up and waits again
}

TEST(HoldDeadline, TimeoutRoundsUpAndEndsAtTheDeadline)
{
	const auto deadline = kStart + milliseconds(10);
	EXPECT_EQ(poll_timeout_ms(deadline, kStart + microseconds(9001)), 1); // 0.999 ms left: never early
	EXPECT_EQ(poll_timeout_ms(deadline, kStart + microseconds(8000)), 2);
	EXPECT_EQ(poll_timeout_ms(deadline, deadline), 0);
	EXPECT_EQ(poll_timeout_ms(deadline, deadline + milliseconds(5)), 0);
}

TEST(HoldSignals, PastDeadlineEndsTheWaitAtOnce)
{
	auto signals = HoldSignals::block();
	ASSERT_TRUE(signals) << signals.error().message;
	auto ended = signals->wait(HoldClock::now() - milliseconds(1));
	ASSERT_TRUE(ended) << ended.error().message;
	EXPECT_EQ(ended->signal, 0);
}

TEST(HoldSignals, PendingSignalEndsTheWaitAndIsConsumed)
{
	sigset_t before;
	ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
	{
		auto signals = HoldSignals::block();
		ASSERT_TRUE(signals) << signals.error().message;
		sigset_t during;
		ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &during), 0);
		for (int signal : {SIGINT, SIGTERM, SIGHUP})
			EXPECT_TRUE(sigismember(&during, signal) || ignored(signal)) << signal;
		// Blocked, so it stays pending instead of ending the test binary; no deadline, so
		// only the signal can end the wait.
		ASSERT_TRUE(sigismember(&during, SIGTERM));
		ASSERT_EQ(raise(SIGTERM), 0);
		auto ended = signals->wait(std::nullopt);
		ASSERT_TRUE(ended) << ended.error().message;
		EXPECT_EQ(ended->signal, SIGTERM);
		sigset_t pending;
		ASSERT_EQ(sigpending(&pending), 0);
		EXPECT_FALSE(sigismember(&pending, SIGTERM));
	}
	sigset_t after;
	ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
	for (int signal : {SIGINT, SIGTERM, SIGHUP})
		EXPECT_EQ(sigismember(&after, signal), sigismember(&before, signal)) << signal;
}

TEST(HoldSignals, IgnoredSignalsAreLeftAlone)
{
	struct sigaction ignore {}, previous {};
	ignore.sa_handler = SIG_IGN;
	ASSERT_EQ(sigaction(SIGHUP, &ignore, &previous), 0); // as under nohup
	sigset_t before;
	ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
	{
		auto signals = HoldSignals::block();
		ASSERT_TRUE(signals) << signals.error().message;
		sigset_t during;
		ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &during), 0);
		EXPECT_EQ(sigismember(&during, SIGHUP), sigismember(&before, SIGHUP));
	}
	ASSERT_EQ(sigaction(SIGHUP, &previous, nullptr), 0);
}

} // namespace
} // namespace gp
