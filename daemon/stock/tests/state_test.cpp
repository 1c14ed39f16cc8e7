// The state file: its JSON form, bad input, the atomic writer and the store's rules.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "netns.hpp"
#include "stock.hpp"

namespace gp::stock {
namespace {

StockState sample_state()
{
	StockState state;
	state.netns_inode = 4026531840ULL;
	RouteRecord v4;
	v4.peer = *parse_host_address("10.1.2.3");
	v4.table = 254;
	v4.oif = 7;
	v4.gateway = *parse_host_address("10.1.2.254");
	v4.prefsrc = *parse_host_address("10.1.2.1");
	v4.rto_min_ms = 5;
	v4.quickack = true;
	RouteRecord v6;
	v6.peer = *parse_host_address("fd00::42");
	v6.table = 1000; // above 255: only RTA_TABLE can carry it
	v6.oif = 3;
	v6.rto_min_ms = 120000;
	v6.quickack = false;
	state.routes = {v4, v6};
	PacingRecord paced;
	paced.pid = 4242;
	paced.start_time = 123456789;
	paced.inode = 98765;
	paced.fd = 5;
	paced.original_bytes_per_second = kUnlimitedPacingRate; // the largest number JSON must carry
	paced.applied_bytes_per_second = 1250000;
	PacingRecord steered; // into a host shaper, its rate left alone
	steered.pid = 4243;
	steered.start_time = 7;
	steered.inode = 98766;
	steered.original_bytes_per_second = kUnlimitedPacingRate;
	steered.original_priority = 6;
	PacingRecord floored; // capped, and its RTO floored (TCP_RTO_MIN_US)
	floored.pid = 4244;
	floored.start_time = 8;
	floored.inode = 98767;
	floored.fd = 6;
	floored.original_bytes_per_second = kUnlimitedPacingRate;
	floored.applied_bytes_per_second = 2500000;
	floored.original_rto_min_us = 200000;
	floored.applied_rto_min_us = 8000;
	state.pacing = {paced, steered, floored};
	state.original_tso_rtt_log = 9; // a host shaper is installed
	return state;
}

TEST(StateFile, RoundTripsEveryField)
{
	const StockState state = sample_state();
	const std::string text = serialize_state(state);
	auto parsed = parse_state(text);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(*parsed, state);
	EXPECT_NE(text.find("\"original_bytes_per_second\":18446744073709551615"), std::string::npos) << text;
	EXPECT_NE(text.find("\"peer\":\"fd00::42\""), std::string::npos) << text;
	EXPECT_NE(text.find("\"applied_bytes_per_second\":0,\"original_priority\":6"), std::string::npos) << text;
	EXPECT_EQ(text.find("original_priority"), text.rfind("original_priority"))
		<< "only a steered socket's record carries a priority: " << text;
	EXPECT_EQ(text.find("gateway\":\"\""), std::string::npos) << "absent gateways are left out: " << text;
	EXPECT_NE(text.find("\"original_tso_rtt_log\":9"), std::string::npos) << text;
	EXPECT_NE(text.find("\"original_rto_min_us\":200000,\"applied_rto_min_us\":8000"), std::string::npos) << text;
	EXPECT_EQ(text.find("original_rto_min_us"), text.rfind("original_rto_min_us"))
		<< "only a floored socket's record carries an RTO minimum: " << text;
}

TEST(StateFile, TheTsoRecordIsOptional)
{
	StockState state = sample_state();
	state.original_tso_rtt_log.reset();
	const std::string text = serialize_state(state);
	EXPECT_EQ(text.find("tso_rtt_log"), std::string::npos) << text;
	auto parsed = parse_state(text);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(*parsed, state);
	state.routes.clear();
	state.pacing.clear();
	EXPECT_TRUE(state.empty());
	state.original_tso_rtt_log = 0;
	EXPECT_FALSE(state.empty()) << "a recorded sysctl is a setting to undo";
}

TEST(StateFile, TheFdHintIsOptional)
{
	StockState state = sample_state();
	state.pacing[0].fd = -1;
	state.pacing[2].fd = -1;
	const std::string text = serialize_state(state);
	EXPECT_EQ(text.find("\"fd\""), std::string::npos) << text;
	auto parsed = parse_state(text);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(*parsed, state);
}

TEST(StateFile, EmptyStateRoundTrips)
{
	StockState state;
	auto parsed = parse_state(serialize_state(state));
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_TRUE(parsed->empty());
}

TEST(StateFile, RejectsWhatWeDidNotWrite)
{
	struct Case {
		const char *text;
		const char *message_part;
	};
	const Case cases[] = {
		{"", "not valid JSON"},
		{"{\"version\":1,", "not valid JSON"},
		{"[]", "top level must be an object"},
		{"{\"netns_inode\":1,\"routes\":[],\"pacing\":[]}", "missing \"version\""},
		{"{\"version\":2,\"netns_inode\":1,\"routes\":[],\"pacing\":[]}", "version 2 is not supported"},
		{"{\"version\":1,\"netns_inode\":1,\"pacing\":[]}", "missing \"routes\""},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":{},\"pacing\":[]}", "\"routes\" must be an array"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[{\"peer\":\"10.0.0.1:80\",\"table\":254,\"oif\":1,"
		 "\"rto_min_ms\":5,\"quickack\":true}],\"pacing\":[]}",
		 "routes[0]: \"peer\""},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[{\"peer\":\"10.0.0.1\",\"table\":-1,\"oif\":1,"
		 "\"rto_min_ms\":5,\"quickack\":true}],\"pacing\":[]}",
		 "\"table\" must be an unsigned integer"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[{\"peer\":\"10.0.0.1\",\"table\":4294967296,\"oif\":1,"
		 "\"rto_min_ms\":5,\"quickack\":true}],\"pacing\":[]}",
		 "\"table\" is out of range"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[{\"peer\":\"10.0.0.1\",\"table\":254,\"oif\":1,"
		 "\"rto_min_ms\":5,\"quickack\":1}],\"pacing\":[]}",
		 "\"quickack\" must be true or false"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[],\"pacing\":[{\"pid\":0,\"start_time\":1,\"inode\":2,"
		 "\"fd\":3,\"original_bytes_per_second\":4,\"applied_bytes_per_second\":5}]}",
		 "\"pid\" must not be 0"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[],\"pacing\":[{\"pid\":1,\"start_time\":1,\"inode\":2,"
		 "\"fd\":3,\"original_bytes_per_second\":4}]}",
		 "pacing[0]: missing \"applied_bytes_per_second\""},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[],\"pacing\":[{\"pid\":1.5,\"start_time\":1,\"inode\":2,"
		 "\"fd\":3,\"original_bytes_per_second\":4,\"applied_bytes_per_second\":5}]}",
		 "\"pid\" must be an unsigned integer"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[],\"pacing\":[{\"pid\":1,\"start_time\":1,\"inode\":2,"
		 "\"original_bytes_per_second\":4,\"applied_bytes_per_second\":0,\"original_priority\":4294967296}]}",
		 "\"original_priority\" is out of range"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[],\"pacing\":[],\"original_tso_rtt_log\":-9}",
		 "\"original_tso_rtt_log\" must be an unsigned integer"},
		{"{\"version\":1,\"netns_inode\":1,\"routes\":[],\"pacing\":[],\"original_tso_rtt_log\":4294967296}",
		 "\"original_tso_rtt_log\" is out of range"},
	};
	for (const Case &c : cases) {
		auto parsed = parse_state(c.text);
		ASSERT_FALSE(parsed) << c.text;
		EXPECT_EQ(parsed.error().err, EINVAL) << c.text;
		EXPECT_NE(parsed.error().message.find(c.message_part), std::string::npos)
			<< c.text << " -> " << parsed.error().message;
	}
}

TEST(StateFile, LoadOfAMissingFileIsENOENT)
{
	testing::TempDir dir;
	auto loaded = load_state(dir.path() + "/none.json");
	ASSERT_FALSE(loaded);
	EXPECT_EQ(loaded.error().err, ENOENT);
}

TEST(StateFile, WritesAtomicallyAndCreatesDirectories)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/run/gappace/stock-state.json";
	ASSERT_TRUE(write_state_file(path, sample_state()));
	auto loaded = load_state(path);
	ASSERT_TRUE(loaded) << loaded.error().message;
	EXPECT_EQ(*loaded, sample_state());
	EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
	struct stat st {};
	ASSERT_EQ(stat(path.c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(StateFile, WriteFailsWithAClearMessage)
{
	testing::TempDir dir;
	const std::string blocker = dir.path() + "/file";
	std::ofstream(blocker) << "x";
	auto written = write_state_file(blocker + "/state.json", StockState{});
	ASSERT_FALSE(written);
	EXPECT_EQ(written.error().err, ENOTDIR);
	EXPECT_NE(written.error().message.find("is not a directory"), std::string::npos) << written.error().message;
}

TEST(StateStore, AdditionsAreOnDiskAtOnceRemovalsAtFlush)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	auto store = StateStore::create(path);
	ASSERT_TRUE(store) << store.error().message;
	auto on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	EXPECT_TRUE(on_disk->empty());
	EXPECT_EQ(on_disk->netns_inode, *current_netns_inode());

	const StockState sample = sample_state();
	ASSERT_TRUE(store->put(sample.routes[0]));
	ASSERT_TRUE(store->put(sample.pacing[0]));
	on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	ASSERT_EQ(on_disk->routes.size(), 1u);
	EXPECT_EQ(on_disk->routes[0], sample.routes[0]);
	ASSERT_EQ(on_disk->pacing.size(), 1u);
	EXPECT_EQ(on_disk->pacing[0], sample.pacing[0]);

	// Same peer (any port): replaced, not added.
	RouteRecord changed = sample.routes[0];
	changed.rto_min_ms = 10;
	changed.peer.port = 80;
	ASSERT_TRUE(store->put(changed));
	on_disk = load_state(path);
	ASSERT_EQ(on_disk->routes.size(), 1u);
	EXPECT_EQ(on_disk->routes[0].rto_min_ms, 10u);
	EXPECT_EQ(on_disk->routes[0].peer.port, 0) << "peers are stored without ports";
	EXPECT_NE(store->find_route(sample.routes[0].peer), nullptr);

	ASSERT_TRUE(store->erase_route(sample.routes[0].peer));
	ASSERT_TRUE(store->erase_pacing(sample.pacing[0].pid, sample.pacing[0].start_time, sample.pacing[0].inode));
	ASSERT_TRUE(store->erase_route(sample.routes[0].peer)) << "erasing twice is fine";
	EXPECT_TRUE(store->state().empty());
	// Removals are lazy (a stale record is harmless, a missing one leaks a setting): the file
	// still has both records until the next write.
	EXPECT_TRUE(store->dirty());
	on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	EXPECT_EQ(on_disk->routes.size(), 1u);
	EXPECT_EQ(on_disk->pacing.size(), 1u);
	ASSERT_TRUE(store->flush());
	EXPECT_FALSE(store->dirty());
	on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	EXPECT_TRUE(on_disk->empty());

	// An addition writes the pending removals with it.
	ASSERT_TRUE(store->put(sample.pacing[0]));
	ASSERT_TRUE(store->erase_pacing(sample.pacing[0].pid, sample.pacing[0].start_time, sample.pacing[0].inode));
	ASSERT_TRUE(store->put(sample.routes[0]));
	on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	EXPECT_EQ(on_disk->routes.size(), 1u);
	EXPECT_TRUE(on_disk->pacing.empty());
}

// Every write replaces the file (temporary file + rename): a new inode means a write.
ino_t file_inode(const std::string &path)
{
	struct stat st {};
	EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
	return st.st_ino;
}

TEST(StateStore, ARecordPutBackUnchangedCostsNoWrite)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	auto store = StateStore::create(path);
	ASSERT_TRUE(store) << store.error().message;
	const StockState sample = sample_state();
	ASSERT_TRUE(store->put(sample.routes[0]));
	ASSERT_TRUE(store->put(sample.pacing[0]));
	const ino_t written = file_inode(path);

	// A phase ends and the next one on the same connection begins: the records come back
	// as they were (the cap applied may differ, restoring does not use it).
	ASSERT_TRUE(store->erase_route(sample.routes[0].peer));
	ASSERT_TRUE(store->erase_pacing(sample.pacing[0].pid, sample.pacing[0].start_time, sample.pacing[0].inode));
	EXPECT_TRUE(store->dirty());
	EXPECT_EQ(store->find_route(sample.routes[0].peer), nullptr) << "removed records are not live";
	ASSERT_TRUE(store->put(sample.routes[0]));
	PacingRecord recapped = sample.pacing[0];
	recapped.applied_bytes_per_second *= 2;
	ASSERT_TRUE(store->put(recapped));
	EXPECT_EQ(file_inode(path), written) << "the file held both records already";
	EXPECT_FALSE(store->dirty()) << "nothing left to remove";
	ASSERT_NE(store->find_pacing(recapped.pid, recapped.start_time, recapped.inode), nullptr);
	EXPECT_EQ(store->find_pacing(recapped.pid, recapped.start_time, recapped.inode)->applied_bytes_per_second,
		  recapped.applied_bytes_per_second);

	// What restoring depends on changed: written ahead, as any addition.
	RouteRecord slower = sample.routes[0];
	slower.rto_min_ms = 20;
	ASSERT_TRUE(store->put(slower));
	EXPECT_NE(file_inode(path), written);
	PacingRecord elsewhere = sample.pacing[0];
	elsewhere.fd = 9;
	const ino_t before_fd_change = file_inode(path);
	ASSERT_TRUE(store->put(elsewhere));
	EXPECT_NE(file_inode(path), before_fd_change) << "restoring uses the fd";
	auto on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	ASSERT_EQ(on_disk->pacing.size(), 1u);
	EXPECT_EQ(on_disk->pacing[0].fd, 9);

	// The tick writes removals only once they are old enough.
	ASSERT_TRUE(store->erase_pacing(elsewhere.pid, elsewhere.start_time, elsewhere.inode));
	const ino_t pending = file_inode(path);
	ASSERT_TRUE(store->flush_older_than(std::chrono::hours(1)));
	EXPECT_EQ(file_inode(path), pending);
	EXPECT_TRUE(store->dirty());
	ASSERT_TRUE(store->flush_older_than(std::chrono::seconds(0)));
	EXPECT_FALSE(store->dirty());
	on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	EXPECT_TRUE(on_disk->pacing.empty());
	ASSERT_EQ(on_disk->routes.size(), 1u);
	EXPECT_EQ(on_disk->routes[0].rto_min_ms, 20u);

	// Once written away, a record comes back with a write again.
	const ino_t flushed = file_inode(path);
	ASSERT_TRUE(store->put(elsewhere));
	EXPECT_NE(file_inode(path), flushed);
}

// A socket capped and floored, both undone at the phase's end, then capped and floored again
// by the next phase (the cap first): the file's record covers every step, so nothing is
// written. One it does not cover is written ahead.
TEST(StateStore, ARecordThatRestoresMoreCostsNoWrite)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	auto store = StateStore::create(path);
	ASSERT_TRUE(store) << store.error().message;
	const PacingRecord both = sample_state().pacing[2];
	ASSERT_TRUE(both.original_rto_min_us);
	ASSERT_TRUE(store->put(both));
	const ino_t written = file_inode(path);
	ASSERT_TRUE(store->erase_pacing(both.pid, both.start_time, both.inode));

	PacingRecord capped_only = both;
	capped_only.original_rto_min_us.reset();
	capped_only.applied_rto_min_us = 0;
	ASSERT_TRUE(store->put(capped_only));
	EXPECT_EQ(file_inode(path), written) << "the file's record restores the cap, and an RTO minimum the socket has";
	ASSERT_TRUE(store->put(both));
	EXPECT_EQ(file_inode(path), written);
	EXPECT_FALSE(store->dirty());

	PacingRecord other_original = both;
	other_original.original_rto_min_us = 50000; // its process set one between the phases
	ASSERT_TRUE(store->put(other_original));
	EXPECT_NE(file_inode(path), written) << "restoring would put back the wrong minimum";
	const ino_t rewritten = file_inode(path);
	PacingRecord steered_too = other_original;
	steered_too.original_priority = 0;
	ASSERT_TRUE(store->put(steered_too));
	EXPECT_NE(file_inode(path), rewritten) << "the file's record does not unsteer";
	auto on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	ASSERT_EQ(on_disk->pacing.size(), 1u);
	EXPECT_EQ(on_disk->pacing[0], steered_too);
}

TEST(StateStore, RefusesToForgetWhatAPreviousDaemonLeft)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	ASSERT_TRUE(write_state_file(path, sample_state()));
	auto store = StateStore::create(path);
	ASSERT_FALSE(store);
	EXPECT_EQ(store.error().err, EEXIST);
	EXPECT_NE(store.error().message.find("restore it first"), std::string::npos) << store.error().message;
	auto untouched = load_state(path);
	ASSERT_TRUE(untouched);
	EXPECT_EQ(*untouched, sample_state());

	std::ofstream(path) << "not json";
	auto corrupt = StateStore::create(path);
	ASSERT_FALSE(corrupt);
	EXPECT_EQ(corrupt.error().err, EINVAL);
}

// What restore_from_state() could not undo does not stop the next daemon: it keeps the
// records (and tries them again at its shutdown) instead of refusing to start forever.
TEST(StateStore, AdoptsWhatCouldNotBeUndone)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	StockState left = sample_state();
	left.netns_inode = *current_netns_inode();
	ASSERT_TRUE(write_state_file(path, left));
	std::vector<std::string> notes;
	auto store = StateStore::adopt(path, notes);
	ASSERT_TRUE(store) << store.error().message;
	EXPECT_EQ(store->state(), left);
	auto on_disk = load_state(path);
	ASSERT_TRUE(on_disk);
	EXPECT_EQ(*on_disk, left) << "nothing is dropped from the file";
	ASSERT_EQ(notes.size(), 1u);
	EXPECT_NE(notes[0].find("keeping " + std::to_string(left.records()) + " record(s)"), std::string::npos)
		<< notes[0];
	// Reverting a kept record removes it like any other.
	ASSERT_TRUE(store->erase_route(left.routes[0].peer));
	ASSERT_TRUE(store->flush());
	EXPECT_EQ(load_state(path)->routes.size(), 1u);

	// A file without records, or none, starts empty without a note.
	notes.clear();
	ASSERT_TRUE(write_state_file(path, StockState{}));
	auto fresh = StateStore::adopt(path, notes);
	ASSERT_TRUE(fresh);
	EXPECT_TRUE(fresh->state().empty());
	EXPECT_TRUE(notes.empty());
	EXPECT_TRUE(StateStore::adopt(dir.path() + "/none.json", notes));
	std::ofstream(path) << "not json";
	auto corrupt = StateStore::adopt(path, notes);
	ASSERT_FALSE(corrupt);
	EXPECT_EQ(corrupt.error().err, EINVAL);
}

TEST(StateStore, MovesAnotherNamespacesRoutesAside)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	const uint64_t ours = *current_netns_inode();
	StockState left = sample_state();
	left.netns_inode = ours + 1000;
	ASSERT_TRUE(write_state_file(path, left));
	std::vector<std::string> notes;
	auto store = StateStore::adopt(path, notes);
	ASSERT_TRUE(store) << store.error().message;
	// Socket records stay (a socket is reached by pid from anywhere); the routes and the
	// sysctl of the other namespace go to a file of their own.
	EXPECT_EQ(store->state().netns_inode, ours);
	EXPECT_EQ(store->state().pacing, left.pacing);
	EXPECT_TRUE(store->state().routes.empty());
	EXPECT_FALSE(store->state().original_tso_rtt_log);
	const std::string aside = path + ".netns-" + std::to_string(ours + 1000);
	auto moved = load_state(aside);
	ASSERT_TRUE(moved) << moved.error().message;
	EXPECT_EQ(moved->netns_inode, ours + 1000);
	EXPECT_EQ(moved->routes, left.routes);
	EXPECT_EQ(moved->original_tso_rtt_log, left.original_tso_rtt_log);
	EXPECT_TRUE(moved->pacing.empty());
	ASSERT_EQ(notes.size(), 2u);
	EXPECT_NE(notes[0].find(aside), std::string::npos) << notes[0];

	// A later daemon moving more routes of that namespace adds to the file.
	StockState more;
	more.netns_inode = ours + 1000;
	RouteRecord extra = left.routes[0];
	extra.peer = *parse_host_address("10.9.9.9");
	more.routes = {left.routes[0], extra};
	ASSERT_TRUE(write_state_file(path, more));
	notes.clear();
	ASSERT_TRUE(StateStore::adopt(path, notes));
	moved = load_state(aside);
	ASSERT_TRUE(moved);
	ASSERT_EQ(moved->routes.size(), 3u);
	EXPECT_EQ(moved->routes[2], extra);
	EXPECT_TRUE(load_state(path)->empty());
}

TEST(StateStore, RestoreOfAMissingFileHasNothingToDo)
{
	testing::TempDir dir;
	auto report = restore_from_state(dir.path() + "/none.json");
	ASSERT_TRUE(report) << report.error().message;
	EXPECT_EQ(report->routes_deleted + report->pacing_restored + report->already_gone, 0u);
	EXPECT_TRUE(report->failures.empty());
}

TEST(StateStore, RestoreKeepsRoutesOfAnotherNamespace)
{
	testing::TempDir dir;
	const std::string path = dir.path() + "/state.json";
	StockState state = sample_state();
	state.netns_inode = *current_netns_inode() + 1;
	state.pacing.clear();
	ASSERT_TRUE(write_state_file(path, state));
	auto report = restore_from_state(path);
	ASSERT_TRUE(report) << report.error().message;
	EXPECT_EQ(report->routes_deleted, 0u);
	EXPECT_FALSE(report->tso_rtt_log_restored);
	ASSERT_EQ(report->failures.size(), 3u);
	for (const Error &failure : report->failures)
		EXPECT_EQ(failure.err, EXDEV) << failure.message;
	EXPECT_NE(report->failures[2].message.find("tcp_tso_rtt_log"), std::string::npos) << report->failures[2].message;
	auto kept = load_state(path);
	ASSERT_TRUE(kept);
	EXPECT_EQ(kept->routes, state.routes) << "what could not be undone stays recorded";
	EXPECT_EQ(kept->original_tso_rtt_log, state.original_tso_rtt_log);
}

// TsoSizing against a file standing in for the sysctl: what it records, when, and what it puts back.
class TsoSizingTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		auto created = StateStore::create(dir_.path() + "/state.json");
		ASSERT_TRUE(created) << created.error().message;
		store_.emplace(std::move(*created));
	}
	void set_sysctl(const std::string &text) { std::ofstream(sysctl_) << text; }
	std::string sysctl_text() const
	{
		std::ifstream in(sysctl_);
		return std::string(std::istreambuf_iterator<char>(in), {});
	}

	testing::TempDir dir_;
	std::string sysctl_ = dir_.path() + "/tcp_tso_rtt_log";
	std::optional<StateStore> store_;
};

TEST_F(TsoSizingTest, SetsZeroRecordsTheValueBeforeAndPutsItBack)
{
	set_sysctl("9\n");
	TsoSizing sizing(*store_, sysctl_);
	ASSERT_TRUE(sizing.engage());
	EXPECT_EQ(sysctl_text(), "0\n");
	EXPECT_EQ(sizing.original(), std::optional<uint32_t>(9));
	auto on_disk = load_state(store_->path());
	ASSERT_TRUE(on_disk);
	EXPECT_EQ(on_disk->original_tso_rtt_log, std::optional<uint32_t>(9)) << "recorded before the change";

	set_sysctl("0\n");
	ASSERT_TRUE(sizing.engage()) << "engaged already: a no-op";
	EXPECT_EQ(sizing.original(), std::optional<uint32_t>(9)) << "the value before us, not our own 0";

	ASSERT_TRUE(sizing.release());
	EXPECT_EQ(sysctl_text(), "9\n");
	EXPECT_FALSE(sizing.original());
	ASSERT_TRUE(store_->flush());
	on_disk = load_state(store_->path());
	ASSERT_TRUE(on_disk);
	EXPECT_TRUE(on_disk->empty());
	ASSERT_TRUE(sizing.release()) << "released already: a no-op";
	EXPECT_EQ(sysctl_text(), "9\n");
}

// A predecessor's record that the restore could not undo (StateStore::adopt kept it): the
// new daemon's TsoSizing starts engaged with it, so its release puts the value back, and a
// phase that engages meanwhile neither loses the record nor records its own 0.
TEST_F(TsoSizingTest, AnAdoptedRecordIsPutBackByTheNextRelease)
{
	const std::string path = dir_.path() + "/adopted.json";
	StockState left;
	left.netns_inode = *current_netns_inode();
	left.original_tso_rtt_log = 9;
	ASSERT_TRUE(write_state_file(path, left));
	std::vector<std::string> notes;
	auto adopted = StateStore::adopt(path, notes);
	ASSERT_TRUE(adopted) << adopted.error().message;
	set_sysctl("0\n");	// the restore could not write it back
	TsoSizing sizing(*adopted, sysctl_);
	EXPECT_EQ(sizing.original(), std::optional<uint32_t>(9));
	ASSERT_TRUE(sizing.engage());	// a phase of long messages
	EXPECT_EQ(sizing.original(), std::optional<uint32_t>(9));
	ASSERT_TRUE(sizing.release());
	EXPECT_EQ(sysctl_text(), "9\n");
	EXPECT_FALSE(adopted->state().original_tso_rtt_log);
}

TEST_F(TsoSizingTest, AValueWrittenSinceIsLeftAlone)
{
	set_sysctl("9\n");
	TsoSizing sizing(*store_, sysctl_);
	ASSERT_TRUE(sizing.engage());
	set_sysctl("3\n"); // an administrator's, while ours was on
	ASSERT_TRUE(sizing.release());
	EXPECT_EQ(sysctl_text(), "3\n") << "not the 9 from before ours";
	EXPECT_FALSE(sizing.original());
	EXPECT_FALSE(store_->state().original_tso_rtt_log) << "nothing of ours is left to undo";

	set_sysctl("0\n");
	auto untouched = put_back_tso_rtt_log(sysctl_, 9);
	ASSERT_TRUE(untouched);
	EXPECT_TRUE(*untouched) << "our 0 goes back";
	EXPECT_EQ(sysctl_text(), "9\n");
	auto absent = put_back_tso_rtt_log(dir_.path() + "/no-such-sysctl", 9);
	ASSERT_TRUE(absent);
	EXPECT_FALSE(*absent);
}

TEST_F(TsoSizingTest, NothingToRecordWhereItIsZeroOrAbsent)
{
	set_sysctl("0\n");
	TsoSizing zero(*store_, sysctl_);
	ASSERT_TRUE(zero.engage());
	EXPECT_FALSE(zero.original());
	EXPECT_FALSE(store_->state().original_tso_rtt_log);
	ASSERT_TRUE(zero.release());
	EXPECT_EQ(sysctl_text(), "0\n");

	TsoSizing absent(*store_, dir_.path() + "/no-such-sysctl"); // a kernel before 6.0
	ASSERT_TRUE(absent.engage());
	ASSERT_TRUE(absent.release());
	EXPECT_TRUE(store_->state().empty());
}

TEST_F(TsoSizingTest, ASysctlItCannotReadChangesNothing)
{
	set_sysctl("nine\n");
	TsoSizing sizing(*store_, sysctl_);
	auto engaged = sizing.engage();
	ASSERT_FALSE(engaged);
	EXPECT_EQ(engaged.error().err, EINVAL);
	EXPECT_NE(engaged.error().message.find("does not hold an unsigned integer"), std::string::npos)
		<< engaged.error().message;
	EXPECT_EQ(sysctl_text(), "nine\n");
	EXPECT_TRUE(store_->state().empty());
}

} // namespace
} // namespace gp::stock
