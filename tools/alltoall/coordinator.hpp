// Rank 0's side of the rendezvous: collects every rank's ANNOUNCE, checks that all run the same
// shape, sends the TABLE, runs the start barrier, collects the RESULTs and releases everyone.
// Any rank's failure (ABORT, or its connection closing early) is passed on to every rank.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "channel.hpp"
#include "event_loop.hpp"
#include "result.hpp"
#include "wire.hpp"

namespace gp::alltoall {

class Coordinator {
public:
	static Expected<std::unique_ptr<Coordinator>> listen(EventLoop &loop, const Options &options);
	Coordinator(const Coordinator &) = delete;
	Coordinator &operator=(const Coordinator &) = delete;
	~Coordinator();

	// Rank 0's deadline passed: every rank stops and reports what it has (before START the run
	// is called off: there is nothing to report).
	void stop_all();
	// The grace for results expired: releases the ranks that did report.
	void release_all();
	// Tells every rank that the run failed, waiting at most a moment for the bytes to leave.
	void abort_all(const std::string &reason);

	bool stopped() const { return stop_sent_; }
	bool finished() const { return done_sent_; }
	const std::optional<Table> &table() const { return table_; }
	const std::vector<std::optional<RankResult>> &results() const { return results_; }
	// Before the table: ranks that never announced. After START: ranks without a result.
	std::vector<int> missing_ranks() const;

private:
	struct Peer {
		std::unique_ptr<Channel> channel;
		EventLoop::Id id = 0;
		int rank = -1; // until its ANNOUNCE
		bool ready = false;
	};

	Coordinator(EventLoop &loop, const Options &options, UniqueFd listener);
	Expected<void> accept_all();
	Expected<void> on_peer(Peer &peer, uint32_t events);
	Expected<void> on_frame(Peer &peer, const Frame &frame);
	Expected<void> on_announce(Peer &peer, const Announce &announce);
	Expected<void> send_table();
	void broadcast(const Frame &frame);
	void finish_if_complete();
	Error fail(const std::string &reason);

	EventLoop &loop_;
	Options options_;
	UniqueFd listener_;
	EventLoop::Id listener_id_ = 0;
	std::vector<std::unique_ptr<Peer>> peers_;
	std::vector<std::optional<Announce>> announces_; // by rank
	std::vector<std::optional<RankResult>> results_; // by rank
	std::optional<Table> table_;
	size_t announced_ = 0, ready_ = 0;
	bool start_sent_ = false, stop_sent_ = false, done_sent_ = false, aborted_ = false;
};

} // namespace gp::alltoall
