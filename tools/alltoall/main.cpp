// gp-alltoall: one rank of a TCP all-to-all benchmark. See usage_text() and README.md.
//
// A rank's life: rendezvous (announce itself to rank 0, get the table of all ranks), data mesh
// (one connection per pair), start barrier, the measured run, result to rank 0, wait for
// rank 0's release. Every step is bounded: the setup by --setup-timeout, everything by
// --timeout. A failing rank tells rank 0, which tells everyone: nobody waits for a dead peer.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <functional>
#include <exception>
#include <fstream>
#include <memory>
#include <string>

#include "args.hpp"
#include "coordinator.hpp"
#include "counters.hpp"
#include "event_loop.hpp"
#include "exchange.hpp"
#include "hints.hpp"
#include "member.hpp"
#include "mesh.hpp"
#include "net.hpp"
#include "report.hpp"
#include "schedule.hpp"

namespace gp::alltoall {
namespace {

// After the deadline (or the STOP), how long rank 0 waits for the ranks' results and the ranks
// wait for rank 0's release.
constexpr double kResultGraceSeconds = 5;
// A broken data connection is usually the echo of a peer's failure that rank 0 is about to
// announce with its cause ("rank 2 closed its rendezvous connection"): wait this long for that
// verdict before reporting the echo.
constexpr double kVerdictWaitSeconds = 0.3;

std::string seconds_text(double seconds)
{
	char text[32];
	std::snprintf(text, sizeof(text), "%.3g s", seconds);
	return text;
}

class RankProcess {
public:
	explicit RankProcess(const Options &options)
		: o_(options), deadline_(Deadline::after(options.timeout_seconds)),
		  setup_deadline_(Deadline::earliest(deadline_, Deadline::after(options.setup_timeout_seconds)))
	{
	}

	int run();

private:
	void say(const std::string &message) const
	{
		// The launcher merges every rank's stderr: each line names its rank.
		std::fprintf(stderr, "gp-alltoall rank %d: %s\n", o_.rank, message.c_str());
	}
	int give_up(const Error &error);
	int data_connection_failed(const Error &error);
	int setup_expired(const std::string &stage);
	int timed_out_before_start();
	std::optional<Error> stopped_during_setup() const;
	Expected<bool> wait_for(const std::function<bool()> &condition, const Deadline &deadline);
	int finish_rank0();
	int print_report();

	const Options &o_;
	const Deadline deadline_;
	const Deadline setup_deadline_;
	std::optional<EventLoop> loop_;
	std::unique_ptr<Coordinator> coordinator_; // rank 0 only
	std::unique_ptr<Member> member_;
};

int RankProcess::give_up(const Error &error)
{
	// Rank 0 tells everyone itself; the others tell rank 0, which passes it on. An abort that
	// came from rank 0 in the first place goes back to it harmlessly.
	if (coordinator_)
		coordinator_->abort_all("rank 0: " + error.message);
	else if (member_)
		member_->abort(error.message);
	say(error.message);
	return kExitFailure;
}

int RankProcess::data_connection_failed(const Error &error)
{
	if (!coordinator_)
		(void)member_->send(encode_abort(error.message)); // rank 0 passes it on
	auto verdict = loop_->run([]() -> Expected<Step> { return Step::Wait; }, Deadline::after(kVerdictWaitSeconds));
	if (!verdict) {
		// The rendezvous brought the run-wide cause (rank 0's ABORT, or for rank 0 itself a
		// rank's ABORT or disconnection, already passed on to everyone).
		say(verdict.error().message);
		return kExitFailure;
	}
	return give_up(error);
}

std::optional<Error> RankProcess::stopped_during_setup() const
{
	if (member_ && member_->stop_requested())
		return make_error(ETIMEDOUT, "rank 0 stopped the run (its --timeout passed) before it started");
	return std::nullopt;
}

Expected<bool> RankProcess::wait_for(const std::function<bool()> &condition, const Deadline &deadline)
{
	return loop_->run(
		[&]() -> Expected<Step> {
			if (auto stop = stopped_during_setup())
				return *stop;
			return condition() ? Step::Finished : Step::Wait;
		},
		deadline);
}

int RankProcess::timed_out_before_start()
{
	if (coordinator_) {
		coordinator_->stop_all();
		say("timed out (--timeout " + seconds_text(o_.timeout_seconds) + ") before the run started");
		print_report();
		return kExitFailure;
	}
	say("timed out (--timeout " + seconds_text(o_.timeout_seconds) + ") before the run started");
	return kExitFailure;
}

int RankProcess::setup_expired(const std::string &stage)
{
	if (deadline_.expired())
		return timed_out_before_start();
	std::string message = stage + ": not done within --setup-timeout " + seconds_text(o_.setup_timeout_seconds);
	if (coordinator_ && !coordinator_->table()) {
		message += "; ranks that never reached the rendezvous:";
		for (int rank : coordinator_->missing_ranks())
			message += " " + std::to_string(rank);
	}
	return give_up(make_error(ETIMEDOUT, message));
}

int RankProcess::print_report()
{
	ReportInput input;
	input.options = o_;
	input.table = coordinator_->table();
	input.results = coordinator_->results();
	input.stopped = coordinator_->stopped();
	input.missing_ranks = coordinator_->missing_ranks();
	const std::string json = build_report(input) + "\n";
	std::fputs(json.c_str(), stdout);
	std::fflush(stdout);
	if (o_.out) {
		std::ofstream out(*o_.out, std::ios::trunc);
		out << json;
		out.close();
		if (!out) {
			say("cannot write --out " + *o_.out);
			return kExitFailure;
		}
	}
	const bool complete = !input.stopped && input.missing_ranks.empty() &&
			      std::all_of(input.results.begin(), input.results.end(),
					  [](const auto &r) { return r && !r->timed_out; });
	if (complete)
		return kExitOk;
	std::string why = "incomplete run (timed out)";
	if (!input.missing_ranks.empty()) {
		why += "; no result from ranks";
		for (int rank : input.missing_ranks)
			why += " " + std::to_string(rank);
	}
	say(why);
	return kExitFailure;
}

int RankProcess::run()
{
	std::signal(SIGPIPE, SIG_IGN); // a peer that died shows as EPIPE, not as our death
	raise_fd_limit();
	auto loop = EventLoop::create();
	if (!loop)
		return say(loop.error().message), kExitFailure;
	loop_.emplace(std::move(*loop));

	// The data listener comes first: its address goes into the announcement, and a --bind that
	// is not this host's address fails here, at once.
	const SocketTuning tuning{o_.sndbuf, o_.rcvbuf, o_.pacing_rate_bps, o_.cc};
	auto listener = listen_on(o_.bind, o_.ranks, false, &tuning);
	if (!listener)
		return say("data listener: " + listener.error().message), kExitFailure;
	auto data_endpoint = local_endpoint(listener->get());
	if (!data_endpoint)
		return say(data_endpoint.error().message), kExitFailure;
	const auto inode = current_netns_inode();

	if (o_.rank == 0) {
		auto coordinator = Coordinator::listen(*loop_, o_);
		if (!coordinator)
			return say(coordinator.error().message), kExitFailure;
		coordinator_ = std::move(*coordinator);
	}
	auto member = Member::connect(*loop_, o_, setup_deadline_);
	if (!member) {
		if (setup_deadline_.expired())
			return setup_expired(member.error().message);
		return give_up(member.error());
	}
	member_ = std::move(*member);

	Announce announce;
	announce.rank = static_cast<uint32_t>(o_.rank);
	announce.ranks = static_cast<uint32_t>(o_.ranks);
	announce.data = *data_endpoint;
	announce.side = o_.side;
	announce.netns_inode = inode ? *inode : 0;
	announce.msg = o_.msg;
	announce.volume = o_.volume.value_or(0);
	announce.iterations = o_.iterations.value_or(0);
	announce.pattern = o_.pattern;
	if (auto ok = member_->send(encode_announce(announce)); !ok)
		return give_up(ok.error());

	// 1. The table of all ranks.
	auto got_table = wait_for([&] { return member_->table().has_value(); }, setup_deadline_);
	if (!got_table)
		return give_up(got_table.error());
	if (!*got_table)
		return setup_expired("the rendezvous");
	const Table table = *member_->table();
	if (table.ranks.size() != static_cast<size_t>(o_.ranks) || table.ranks[o_.rank].data != *data_endpoint)
		return give_up(make_error(EPROTO, "rank 0's table does not list this rank as announced"));
	std::vector<Side> sides;
	for (const auto &info : table.ranks)
		sides.push_back(info.side);
	auto schedule = make_schedule(o_.pattern, o_.rank, sides);
	if (!schedule)
		return give_up(schedule.error());

	// 2. The data connections.
	MeshSetup mesh;
	mesh.rank = o_.rank;
	mesh.table = &table;
	mesh.session = table.session;
	mesh.tuning = tuning;
	mesh.interrupted = [this] { return stopped_during_setup(); };
	auto links = build_mesh(*loop_, listener->get(), mesh, setup_deadline_);
	if (!links) {
		if (setup_deadline_.expired())
			return setup_expired(links.error().message);
		return give_up(links.error());
	}
	listener->reset();

	std::string warning;
	PhaseHints hints = PhaseHints::open(o_.hints, warning);
	if (!warning.empty())
		say(warning);
	hints.describe(o_.pattern, o_.rank, o_.ranks, o_.msg, table.iterations, *links, *schedule);

	// 2b. Warm-up iterations, unmeasured (hints as configured: a daemon sees the phases the
	// way an MPI job's earlier collectives show them). Every rank finishes them only after it
	// received all their data, so none of it leaks into the measured run after the barrier.
	if (o_.warmup > 0) {
		Exchange warmup({o_.rank, o_.ranks, o_.msg, o_.warmup, false}, *links, *schedule, hints);
		if (auto ok = warmup.attach(*loop_); !ok)
			return give_up(ok.error());
		warmup.begin();
		auto warmed = loop_->run(
			[&]() -> Expected<Step> { return member_->stop_requested() ? Step::Finished : warmup.pump(); },
			setup_deadline_);
		warmup.detach(*loop_);
		if (!warmed)
			return warmup.failed() ? data_connection_failed(warmed.error()) : give_up(warmed.error());
		if (!warmup.finished())
			return setup_expired("the warm-up iterations");
	}

	// 3. The start barrier. Counters are read before it: the run's traffic is all after.
	RankResult result;
	result.rank = static_cast<uint32_t>(o_.rank);
	result.netns_inode = announce.netns_inode;
	result.verified = o_.verify;
	result.cc = congestion_control((*links)[schedule->peers.front()].fd.get());
	const auto before = read_tcp_counters();
	if (auto ok = member_->send(empty_frame(MessageType::Ready)); !ok)
		return give_up(ok.error());
	auto started = wait_for([&] { return member_->started(); }, setup_deadline_);
	if (!started)
		return give_up(started.error());
	if (!*started)
		return setup_expired("the start barrier");

	// 4. The measured run, until done, the deadline, or rank 0's STOP.
	Exchange exchange({o_.rank, o_.ranks, o_.msg, table.iterations, o_.verify, o_.trace_iterations, o_.think_ms * 1000000}, *links,
			  *schedule, hints);
	if (auto ok = exchange.attach(*loop_); !ok)
		return give_up(ok.error());
	exchange.begin();
	auto ran = loop_->run(
		[&]() -> Expected<Step> { return member_->stop_requested() ? Step::Finished : exchange.pump(); },
		deadline_);
	exchange.detach(*loop_);
	if (!ran)
		return exchange.failed() ? data_connection_failed(ran.error()) : give_up(ran.error());
	const bool timed_out = !exchange.finished();
	if (timed_out && coordinator_)
		coordinator_->stop_all();
	const auto after = read_tcp_counters();

	// 5. The result to rank 0, then wait for its release.
	exchange.fill(result);
	if (before && after) {
		result.counters_valid = true;
		result.counters_before = *before;
		result.counters_after = *after;
	}
	result.timed_out = timed_out;
	result.hints = hints.stats();
	if (!hints.warning().empty())
		say(hints.warning());
	if (auto ok = member_->send(encode_result(result)); !ok)
		return give_up(ok.error());
	auto released = loop_->run([&]() -> Expected<Step> { return member_->done() ? Step::Finished : Step::Wait; },
				   Deadline::latest(deadline_, Deadline::after(0)));
	if (released && !*released) {
		// The deadline passed with ranks still running: stop them, give them a moment.
		if (coordinator_)
			coordinator_->stop_all();
		released = loop_->run(
			[&]() -> Expected<Step> { return member_->done() ? Step::Finished : Step::Wait; },
			Deadline::after(kResultGraceSeconds));
	}
	if (!released)
		return give_up(released.error());
	if (coordinator_) {
		if (!*released)
			coordinator_->release_all();
		return print_report();
	}
	if (!*released)
		return say("rank 0 did not release the run within " + seconds_text(kResultGraceSeconds) +
			   " after the deadline"),
		       kExitFailure;
	if (timed_out) {
		say("timed out after " + seconds_text(static_cast<double>(result.wall_ns) / 1e9) + " of the run: " +
		    std::to_string(result.iterations_done) + " of " + std::to_string(table.iterations) +
		    " iterations done");
		return kExitFailure;
	}
	return kExitOk;
}

} // namespace
} // namespace gp::alltoall

int main(int argc, char *argv[])
{
	using namespace gp::alltoall;
	try {
		const auto options = parse_arguments(argc, argv);
		if (!options) {
			std::fprintf(stderr, "gp-alltoall: %s\n%s", options.error().message.c_str(), usage_text().c_str());
			return kExitUsage;
		}
		if (options->help) {
			std::fputs(usage_text().c_str(), stdout);
			return kExitOk;
		}
		RankProcess process(*options);
		return process.run();
	} catch (const std::exception &e) {
		std::fprintf(stderr, "gp-alltoall: %s\n", e.what());
		return kExitFailure;
	}
}
