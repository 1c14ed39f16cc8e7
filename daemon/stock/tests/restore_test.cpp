// Crash recovery: a daemon process applies routes, pacing and the host shaper's tcp_tso_rtt_log,
// is SIGKILLed, and restore_from_state() in a new "daemon" undoes all of it from the state file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns.hpp"
#include "stock.hpp"

namespace gp::stock {
namespace {

using testing::ClientProcess;
using testing::FarServer;
using testing::NetnsPair;
using testing::run_command;

const std::string kOurProto = std::to_string(kRouteProtocolGappace);

// The doomed daemon: applies everything, reports on `ready`, then waits to be killed.
[[noreturn]] void doomed_daemon(const std::string &path, const NetnsPair &pair, pid_t app, uint64_t inode, int ready)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(60);
	auto store = StateStore::create(path);
	if (!store)
		_exit(10);
	RouteActuator routes(*store);
	PacingActuator pacing(*store);
	if (!routes.apply(pair.far_address(AF_INET), RouteSettings{5, true}))
		_exit(11);
	if (!routes.apply(pair.far_address(AF_INET6), RouteSettings{5, true}))
		_exit(12);
	TsoSizing sizing(*store); // as while a host shaper is installed
	if (!sizing.engage())
		_exit(15);
	// Steered first (the host pacer's order), floored (Linux 6.15+), capped last: each change
	// after the first must reach the file too, the cap with nothing written after it.
	if (!pacing.steer(app, inode))
		_exit(16);
	if (socket_rto_min().available && !pacing.floor_rto(app, inode, 5000))
		_exit(17);
	if (!pacing.apply(app, inode, 10'000'000))
		_exit(13);
	const char byte = 'k';
	if (write(ready, &byte, 1) != 1)
		_exit(14);
	for (;;)
		pause();
}

TEST(Restore, UndoesWhatAKilledDaemonLeft)
{
	if (auto reason = testing::namespace_tests_unavailable())
		GTEST_SKIP() << *reason;
	std::string error;
	auto pair = NetnsPair::create(error);
	ASSERT_TRUE(pair) << error;
	testing::TempDir dir;
	const std::string path = dir.path() + "/run/gappace/stock-state.json";
	FarServer server(*pair, AF_INET, FarServer::Mode::sink);
	ASSERT_TRUE(server.ok());
	auto app = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(app) << error;

	// The near namespace's own tcp_tso_rtt_log (a new namespace starts at the default, 9);
	// none before Linux 6.0.
	const auto tso_rtt_log = read_sysctl_u32(TsoSizing::kSysctlPath);
	ASSERT_TRUE(tso_rtt_log || tso_rtt_log.error().err == ENOENT) << tso_rtt_log.error().message;
	const bool changes_tso = tso_rtt_log && *tso_rtt_log != 0;

	int ready[2];
	ASSERT_EQ(pipe(ready), 0);
	const pid_t daemon = fork();
	ASSERT_GE(daemon, 0);
	if (daemon == 0) {
		close(ready[0]);
		doomed_daemon(path, *pair, app->pid(), app->inode(), ready[1]);
	}
	close(ready[1]);
	char byte = 0;
	const bool applied = read(ready[0], &byte, 1) == 1;
	close(ready[0]);
	if (!applied) {
		int status = 0;
		waitpid(daemon, &status, 0);
		FAIL() << "the daemon failed to apply, exit status " << WEXITSTATUS(status);
	}
	// Everything is in place...
	EXPECT_NE(run_command({"ip", "-4", "route", "show", "proto", kOurProto}).output, "");
	EXPECT_NE(run_command({"ip", "-6", "route", "show", "proto", kOurProto}).output, "");
	EXPECT_EQ(app->pacing_rate_seen_by_owner(), 1'250'000u);
	auto socket_of_app = [&] { return duplicate_process_socket(app->pid(), app->inode()); };
	{
		auto own = socket_of_app();
		ASSERT_TRUE(own) << own.error().message;
		EXPECT_EQ(*get_priority(own->socket.get()), kShaperSteering);
		if (socket_rto_min().available) {
			EXPECT_LT(*get_rto_min_us(own->socket.get()), 200000u);
		}
	}
	if (changes_tso) {
		EXPECT_EQ(*read_sysctl_u32(TsoSizing::kSysctlPath), 0u);
	}
	// ...when the daemon dies without cleaning up.
	kill(daemon, SIGKILL);
	waitpid(daemon, nullptr, 0);
	EXPECT_NE(run_command({"ip", "-4", "route", "show", "proto", kOurProto}).output, "") << "still there";

	auto blocked = StateStore::create(path);
	ASSERT_FALSE(blocked) << "a new daemon must restore before it starts a new state";
	EXPECT_EQ(blocked.error().err, EEXIST);

	auto report = restore_from_state(path);
	ASSERT_TRUE(report) << report.error().message;
	for (const Error &failure : report->failures)
		ADD_FAILURE() << failure.message;
	EXPECT_EQ(report->routes_deleted, 2u);
	EXPECT_EQ(report->pacing_restored, 1u);
	EXPECT_EQ(report->already_gone, 0u);
	EXPECT_EQ(run_command({"ip", "-4", "route", "show", "table", "all", "proto", kOurProto}).output, "");
	EXPECT_EQ(run_command({"ip", "-6", "route", "show", "table", "all", "proto", kOurProto}).output, "");
	EXPECT_EQ(app->pacing_rate_seen_by_owner(), kUnlimitedPacingRate) << "the cap, though the file had it after the steering";
	{
		auto own = socket_of_app();
		ASSERT_TRUE(own) << own.error().message;
		EXPECT_EQ(*get_priority(own->socket.get()), 0u);
		if (socket_rto_min().available) {
			EXPECT_EQ(*get_rto_min_us(own->socket.get()), 200000u);
		}
	}
	EXPECT_EQ(report->tso_rtt_log_restored, changes_tso);
	if (changes_tso) {
		EXPECT_EQ(*read_sysctl_u32(TsoSizing::kSysctlPath), *tso_rtt_log);
	}
	auto left = load_state(path);
	ASSERT_TRUE(left) << left.error().message;
	EXPECT_TRUE(left->empty());

	// Idempotent, and the next daemon can start.
	auto second = restore_from_state(path);
	ASSERT_TRUE(second);
	EXPECT_EQ(second->routes_deleted + second->pacing_restored + second->already_gone, 0u);
	EXPECT_TRUE(StateStore::create(path));
}

TEST(Restore, CountsWhatIsGoneAlready)
{
	if (auto reason = testing::namespace_tests_unavailable())
		GTEST_SKIP() << *reason;
	std::string error;
	auto pair = NetnsPair::create(error);
	ASSERT_TRUE(pair) << error;
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	FarServer server(*pair, AF_INET6, FarServer::Mode::sink);
	auto app = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(app) << error;
	{
		auto store = StateStore::create(path);
		ASSERT_TRUE(store);
		RouteActuator routes(*store);
		PacingActuator pacing(*store);
		ASSERT_TRUE(routes.apply(pair->far_address(AF_INET6), RouteSettings{5, true}));
		ASSERT_TRUE(pacing.apply(app->pid(), app->inode(), 10'000'000));
		// The store goes away without reverting, as in a crash.
	}
	app->kill_now();
	ASSERT_EQ(run_command({"ip", "-6", "route", "del", format_endpoint(pair->far_address(AF_INET6)), "proto",
			       kOurProto})
			  .status,
		  0);
	auto report = restore_from_state(path);
	ASSERT_TRUE(report) << report.error().message;
	EXPECT_TRUE(report->failures.empty());
	EXPECT_EQ(report->already_gone, 2u);
	EXPECT_EQ(report->routes_deleted + report->pacing_restored, 0u);
	auto left = load_state(path);
	ASSERT_TRUE(left);
	EXPECT_TRUE(left->empty());
}

} // namespace
} // namespace gp::stock
