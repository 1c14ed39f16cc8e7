// Core of the PMPI shim: environment, the gapctl handle, the per-communicator cache with
// its endpoint exchange, phases, and the request -> phase maps. The MPI_* wrappers live in
// wrap_*.cpp. Nothing here may throw into MPI's caller or change what MPI computes.
#include "shim.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <unordered_map>

#include <unistd.h>

namespace gp::mpishim {

std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_tracked_requests{0};

namespace {

struct Config {
	bool log = false;		// GAPPACE_SHIM_LOG=1
	bool stats = false;		// GAPPACE_SHIM_STATS=1
	bool exchange = true;		// GAPPACE_SHIM_PEERS=0 turns the endpoint exchange off
	int max_rescans = 8;		// GAPPACE_SHIM_RESCANS
	uint32_t open_flags = 0;	// GAPPACE_SHIM_CARRIER=socket: GAPCTL_OPEN_NO_KERNEL,
					// GAPPACE_SHIM_SEND=inline: GAPCTL_OPEN_NO_THREAD
	uint64_t eager_limit = 0;	// GAPPACE_SHIM_EAGER_LIMIT, else the MPI's own; 0: unknown
	const char *eager_source = nullptr; // where eager_limit came from; nullptr: not set yet
};

Config g_config;
gapctl_t *g_handle = nullptr;
bool g_started = false;
bool g_thread_multiple = false;
int g_world_rank = -1;
uint64_t g_host_key = 0;
uint64_t g_netns_key = 0;
int g_keyval = MPI_KEYVAL_INVALID;
MPI_Datatype g_endpoint_type = MPI_DATATYPE_NULL;
std::atomic<uint64_t> g_phase_counter{0};
std::atomic<uint64_t> g_exchanges{0};
// GAPPACE_SHIM_STATS only: time spent inside the shim around the forwarded calls (lookup,
// begin, end) and in endpoint exchanges, to report the shim's own per-call cost.
std::atomic<uint64_t> g_overhead_ns{0};
std::atomic<uint64_t> g_exchange_ns{0};

// Heap-allocated and never freed: MPI may run attribute delete callbacks from its own
// teardown, after static destructors of this library would have run.
struct Registry {
	std::mutex mutex;
	std::unordered_map<MPI_Comm, std::shared_ptr<CommState>> comms;
	// A multimap: under MPI_THREAD_MULTIPLE, MPI may hand a just-completed request's
	// handle to another thread's new collective before the completing thread has told us.
	// Each completion then ends the oldest phase of that handle, so every phase still ends
	// exactly once (durations may be swapped between the two in that rare race).
	std::unordered_multimap<MPI_Request, Phase> nonblocking;
	std::unordered_multimap<MPI_Request, Phase>::iterator oldest_nonblocking(MPI_Request r)
	{
		auto [it, end] = nonblocking.equal_range(r);
		auto best = it;
		for (; it != end; ++it)
			if (it->second.n < best->second.n)
				best = it;
		return best;
	}
	struct Persistent {
		std::shared_ptr<CommState> cs;
		uint32_t kind = 0;
		uint32_t flags = 0;
		uint64_t bytes = 0;
		bool active = false;
		Phase phase;
	};
	std::unordered_map<MPI_Request, Persistent> persistent;
	void update_tracked()
	{
		g_tracked_requests.store(nonblocking.size() + persistent.size(),
					 std::memory_order_relaxed);
	}
};
Registry *g_registry = nullptr;

// Bumped whenever a communicator's cache entry goes, so the per-thread last-communicator
// cache below never hands out a state of a freed communicator whose handle was reused.
std::atomic<uint64_t> g_comm_generation{1};
struct LastComm {
	MPI_Comm comm;
	CommState *cs;
	uint64_t generation;
};
thread_local LastComm t_last_comm{MPI_COMM_NULL, nullptr, 0};

// Locks only under MPI_THREAD_MULTIPLE; at lower levels MPI calls never run concurrently.
class RegistryLock {
public:
	RegistryLock() : locked_(g_thread_multiple)
	{
		if (locked_)
			g_registry->mutex.lock();
	}
	~RegistryLock()
	{
		if (locked_)
			g_registry->mutex.unlock();
	}
	RegistryLock(const RegistryLock &) = delete;
	RegistryLock &operator=(const RegistryLock &) = delete;

private:
	bool locked_;
};

uint64_t now_ns() noexcept
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

bool env_flag(const char *name, bool fallback)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return fallback;
	return !(strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 || strcasecmp(v, "off") == 0 ||
		 strcasecmp(v, "false") == 0);
}

// The largest message the MPI transport sends eagerly; larger ones wait for the receiver's
// clear-to-send (rendezvous). Read through MPI_T, by the control variables the libraries we
// know name it with: Open MPI's TCP BTL. 0 when none is found (MPICH's ch4:ucx leaves the
// choice to UCX, which MPI_T does not show).
// What the MPI message header takes from the eager limit: ample for Open MPI's ob1 match header
// (14-24 bytes).
constexpr uint64_t kMessageHeaderAllowance = 64;

uint64_t eager_limit_from_mpi_t() noexcept
{
	int provided = 0;
	if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
		return 0;
	uint64_t limit = 0;
	int index = -1;
	if (MPI_T_cvar_get_index("btl_tcp_eager_limit", &index) == MPI_SUCCESS) {
		char name[128], desc[8];
		int name_len = sizeof(name), desc_len = sizeof(desc), verbosity = 0, bind = 0, scope = 0;
		MPI_Datatype type = MPI_DATATYPE_NULL;
		MPI_T_enum enumtype = MPI_T_ENUM_NULL;
		MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
		int count = 0;
		if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
					&bind, &scope) == MPI_SUCCESS &&
		    bind == MPI_T_BIND_NO_OBJECT &&
		    MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
			union {
				int i;
				unsigned u;
				unsigned long ul;
				unsigned long long ull;
				char bytes[16];
			} value{};
			if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS) {
				if (type == MPI_INT)
					limit = value.i > 0 ? static_cast<uint64_t>(value.i) : 0;
				else if (type == MPI_UNSIGNED)
					limit = value.u;
				else if (type == MPI_UNSIGNED_LONG)
					limit = value.ul;
				else if (type == MPI_UNSIGNED_LONG_LONG)
					limit = value.ull;
			}
			MPI_T_cvar_handle_free(&handle);
		}
	}
	MPI_T_finalize();
	return limit;
}

int env_int(const char *name, int fallback, int lo, int hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return fallback;
	char *end = nullptr;
	const long n = strtol(v, &end, 10);
	if (*end != '\0' || n < lo || n > hi) {
		fprintf(stderr, "gapctl-mpi: ignoring %s=%s (want an integer in [%d, %d])\n", name,
			v, lo, hi);
		return fallback;
	}
	return static_cast<int>(n);
}

// One write(2) per line, so lines of concurrent threads do not interleave.
__attribute__((format(printf, 1, 2))) void log_line(const char *fmt, ...) noexcept
{
	char buf[4096];
	int len = snprintf(buf, sizeof(buf), "gapctl-mpi: rank=%d ", g_world_rank);
	va_list ap;
	va_start(ap, fmt);
	const int more = vsnprintf(buf + len, sizeof(buf) - len - 1, fmt, ap);
	va_end(ap);
	len = more < 0 ? len : std::min<int>(len + more, sizeof(buf) - 2);
	buf[len++] = '\n';
	ssize_t ignored = write(STDERR_FILENO, buf, len);
	(void)ignored;
}

const char *kind_name(uint32_t kind) noexcept
{
	const char *name = gapctl_kind_name(kind);
	return name ? name : "?";
}

int comm_attr_deleted(MPI_Comm comm, int /*keyval*/, void *attr, void * /*extra*/)
{
	RegistryLock lock;
	const auto it = g_registry->comms.find(comm);
	if (it != g_registry->comms.end() && it->second.get() == attr) {
		g_registry->comms.erase(it);
		g_comm_generation.fetch_add(1, std::memory_order_acq_rel);
	}
	return MPI_SUCCESS;
}

std::shared_ptr<CommState> create_state(MPI_Comm comm) noexcept
{
	std::shared_ptr<CommState> cs;
	try {
		cs = std::make_shared<CommState>();
	} catch (...) {
		return nullptr;
	}
	cs->comm = comm;
	int inter = 0;
	if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
	    PMPI_Comm_size(comm, &cs->size) != MPI_SUCCESS ||
	    PMPI_Comm_rank(comm, &cs->rank) != MPI_SUCCESS)
		return cs;	// not hinted
	// Intercommunicators: collectives there join two groups with rooted and MPI_ROOT
	// semantics the daemon has no model for; they are passed through without hints.
	cs->hinted = !inter && cs->size > 1;
	// The attribute ties the cache entry's life to the communicator's. Not holding the
	// registry lock here: MPI may call the delete callback (which takes it) under its own.
	if (g_keyval == MPI_KEYVAL_INVALID ||
	    PMPI_Comm_set_attr(comm, g_keyval, cs.get()) != MPI_SUCCESS)
		cs->hinted = false;	// cached without an attribute: never trust it with hints
	return cs;
}

CommState *lookup_or_create(MPI_Comm comm) noexcept
{
	const uint64_t generation = g_comm_generation.load(std::memory_order_acquire);
	if (t_last_comm.comm == comm && t_last_comm.generation == generation && t_last_comm.cs)
		return t_last_comm.cs;
	CommState *found = nullptr;
	{
		RegistryLock lock;
		const auto it = g_registry->comms.find(comm);
		if (it != g_registry->comms.end())
			found = it->second.get();
	}
	if (!found) {
		std::shared_ptr<CommState> cs = create_state(comm);
		if (!cs)
			return nullptr;
		RegistryLock lock;
		try {
			g_registry->comms[comm] = cs;
		} catch (...) {
			return nullptr;
		}
		found = cs.get();
	}
	t_last_comm = LastComm{comm, found, generation};
	return found;
}

// The rescan rule (README.md): exchange at the first collective on a communicator, then
// right after collective number 1, 2, 4, 8, ... while the previous exchange left some
// rank pair unmapped, at most max_rescans times. Every input here is identical on every
// rank, so every rank decides the same and the exchange's collectives always match up.
bool exchange_due(const CommState &cs) noexcept
{
	if (!g_config.exchange || cs.exchange_broken || g_endpoint_type == MPI_DATATYPE_NULL)
		return false;
	if (cs.seq == 1)
		return true;
	const uint64_t done = cs.seq - 1;
	if ((done & (done - 1)) != 0 || cs.rescans >= g_config.max_rescans)
		return false;
	// The first rescan is unconditional: before any collective, lazily connecting
	// transports (Open MPI's TCP BTL) have no sockets to show at all.
	return cs.rescans == 0 || cs.any_unmapped;
}

void log_exchange(const CommState &cs, const PeerTable &table, const EndpointExchange &ex)
{
	std::string map;
	for (uint32_t i = 0; i < table.tuple_peers && map.size() < 3000; i++) {
		if (!map.empty())
			map += ',';
		map += std::to_string(table.peers[i].rank) + '@' + format_tuple(table.peers[i]);
	}
	log_line("exchange comm_size=%d crank=%d seq=%llu due=%llu rescan=%d sockets=%zu sent=%llu "
		 "received=%llu mapped_ranks=%u matched_pairs=%llu any_unmapped=%d tuples=%u addrs=%u "
		 "map=%s",
		 cs.size, cs.rank, static_cast<unsigned long long>(cs.seq),
		 static_cast<unsigned long long>(cs.due_seq), cs.rescans, ex.sockets(),
		 static_cast<unsigned long long>(ex.sent_count()),
		 static_cast<unsigned long long>(ex.received_count()),
		 table.mapped_ranks, static_cast<unsigned long long>(table.matched_pairs),
		 table.any_unmapped ? 1 : 0, table.tuple_peers, table.address_peers,
		 map.empty() ? "-" : map.c_str());
}

// Maps this rank's sockets to ranks of cs.comm (peer_exchange.hpp): PMPI_Allgather of the
// fixed records, PMPI_Alltoall of the endpoint counts, PMPI_Allreduce of "ready to receive",
// PMPI_Alltoallv of the endpoints, PMPI_Alltoallv of the answers, PMPI_Allreduce of the sums.
// A rank whose own part fails (its scan, its routing, its receive buffer) still makes the
// calls the others make, and every rank drops that exchange alike. Not covered: memory
// running out before the first call (the records' buffer), which leaves this rank out while
// the others wait for it, as MPI's own collectives would.
void exchange(CommState &cs) noexcept
{
	ExchangeSums sums;
	std::optional<EndpointExchange> ex;
	std::vector<RankRecord> records;
	try {
		SocketScan scan;
		bool scan_failed = false;
		try {
			scan = scan_tcp_sockets(kMaxSocketsPerRank);
		} catch (const std::bad_alloc &) {
			scan = SocketScan{};
			scan_failed = true;
		}
		const RankRecord mine = make_rank_record(g_host_key, g_netns_key, scan.listeners,
							 scan.connected);
		records.resize(cs.size);
		std::vector<int> recv_counts(cs.size);
		ex.emplace(cs.rank, cs.size, std::move(scan.connected));
		if (scan_failed)
			ex->abandon();
		if (PMPI_Allgather(&mine, sizeof(mine), MPI_BYTE, records.data(), sizeof(mine),
				   MPI_BYTE, cs.comm) != MPI_SUCCESS) {
			cs.exchange_broken = true;
			return;
		}
		ex->route(records);
		if (PMPI_Alltoall(ex->send_counts().data(), 1, MPI_INT, recv_counts.data(), 1,
				  MPI_INT, cs.comm) != MPI_SUCCESS) {
			cs.exchange_broken = true;
			return;
		}
		const int unready = ex->expect(recv_counts) ? 0 : 1;
		int any_unready = 0;
		if (PMPI_Allreduce(&unready, &any_unready, 1, MPI_INT, MPI_MAX, cs.comm) != MPI_SUCCESS ||
		    any_unready) {
			cs.exchange_broken = true;	// every rank saw the same maximum
			return;
		}
		// Zero-length buffers still get a valid address: some MPIs check it.
		WireEndpoint dummy_endpoint{};
		uint8_t dummy_answer = 0;
		const auto endpoints_or_dummy = [&](auto span) {
			return span.empty() ? &dummy_endpoint : span.data();
		};
		const auto answers_or_dummy = [&](auto span) {
			return span.empty() ? &dummy_answer : span.data();
		};
		if (PMPI_Alltoallv(endpoints_or_dummy(ex->sent()), ex->send_counts().data(),
				   ex->send_displs().data(), g_endpoint_type,
				   endpoints_or_dummy(ex->received()), ex->recv_counts().data(),
				   ex->recv_displs().data(), g_endpoint_type, cs.comm) != MPI_SUCCESS) {
			cs.exchange_broken = true;
			return;
		}
		ex->answer();
		if (PMPI_Alltoallv(answers_or_dummy(ex->answers_out()), ex->recv_counts().data(),
				   ex->recv_displs().data(), MPI_BYTE, answers_or_dummy(ex->answers_in()),
				   ex->send_counts().data(), ex->send_displs().data(), MPI_BYTE,
				   cs.comm) != MPI_SUCCESS) {
			cs.exchange_broken = true;
			return;
		}
		const ExchangeSums local = ex->confirm();
		if (PMPI_Allreduce(&local, &sums, kExchangeSumsCount, MPI_UINT64_T, MPI_SUM,
				   cs.comm) != MPI_SUCCESS) {
			cs.exchange_broken = true;
			return;
		}
	} catch (...) {
		cs.exchange_broken = true;
		return;
	}
	if (sums.failed > 0) {
		cs.exchange_broken = true;	// every rank saw the same sums
		return;
	}
	// The rescan decision, from the sums alone and without allocating: the same on every
	// rank whatever happens below.
	if (cs.exchanges++ > 0)
		cs.rescans++;
	cs.any_unmapped = ex->any_unmapped(sums);
	g_exchanges.fetch_add(1, std::memory_order_relaxed);
	try {
		auto table = std::make_unique<PeerTable>();
		if (!ex->table(sums, *table))
			return;
		if (g_config.log)
			log_exchange(cs, *table, *ex);
		cs.tables.push_back(nullptr);	// the slot first: publishing cannot fail after it
		cs.peers.store(table.get(), std::memory_order_release);
		cs.tables.back() = std::move(table);
	} catch (...) {
		// Only this rank's new table is lost: it keeps naming peers as before.
	}
}

void end_leftover_phases() noexcept
{
	std::vector<Phase> leftover;
	{
		RegistryLock lock;
		for (const auto &[request, phase] : g_registry->nonblocking)
			leftover.push_back(phase);
		for (const auto &[request, p] : g_registry->persistent)
			if (p.active)
				leftover.push_back(p.phase);
		g_registry->nonblocking.clear();
		g_registry->persistent.clear();
		g_registry->update_tracked();
	}
	// Never completed through a wrapper we saw: end them so the daemon reverts, with
	// duration 0 ("not measured").
	for (Phase &phase : leftover) {
		phase.start_ns = 0;
		phase_end(phase);
	}
}

} // namespace

uint64_t type_bytes(int64_t count, MPI_Datatype type) noexcept
{
	if (count <= 0 || type == MPI_DATATYPE_NULL)
		return 0;
	int size = 0;
	if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0)
		return 0;
	return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

void shim_start() noexcept
{
	if (g_started)
		return;
	g_started = true;
	if (!env_flag("GAPPACE_SHIM", true))
		return;
	g_config.log = env_flag("GAPPACE_SHIM_LOG", false);
	g_config.stats = env_flag("GAPPACE_SHIM_STATS", false);
	g_config.exchange = env_flag("GAPPACE_SHIM_PEERS", true);
	g_config.max_rescans = env_int("GAPPACE_SHIM_RESCANS", 8, 0, 30);
	if (const char *carrier = getenv("GAPPACE_SHIM_CARRIER")) {
		if (strcmp(carrier, "socket") == 0)
			g_config.open_flags |= GAPCTL_OPEN_NO_KERNEL;
		else if (strcmp(carrier, "auto") != 0 && *carrier)
			fprintf(stderr, "gapctl-mpi: ignoring GAPPACE_SHIM_CARRIER=%s "
				"(want auto or socket)\n", carrier);
	}
	try {
		g_registry = new Registry;
	} catch (...) {
		return;
	}
	int level = MPI_THREAD_SINGLE;
	if (PMPI_Query_thread(&level) == MPI_SUCCESS)
		g_thread_multiple = level == MPI_THREAD_MULTIPLE;
	PMPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
	g_host_key = compute_host_key();
	g_netns_key = compute_netns_key();
	if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_attr_deleted, &g_keyval,
				    nullptr) != MPI_SUCCESS)
		g_keyval = MPI_KEYVAL_INVALID;
	MPI_Datatype type = MPI_DATATYPE_NULL;
	if (PMPI_Type_contiguous(sizeof(WireEndpoint), MPI_BYTE, &type) == MPI_SUCCESS &&
	    PMPI_Type_commit(&type) == MPI_SUCCESS)
		g_endpoint_type = type;
	// GAPPACE_SHIM_EAGER_LIMIT=BYTES overrides what MPI_T shows (0: never rendezvous).
	if (const char *eager = getenv("GAPPACE_SHIM_EAGER_LIMIT"); eager && *eager) {
		char *end = nullptr;
		errno = 0;
		const unsigned long long n = strtoull(eager, &end, 10);
		if (*end != '\0' || errno || eager[0] == '-')
			fprintf(stderr, "gapctl-mpi: ignoring GAPPACE_SHIM_EAGER_LIMIT=%s (want bytes)\n", eager);
		else {
			g_config.eager_limit = n;
			g_config.eager_source = "GAPPACE_SHIM_EAGER_LIMIT";
		}
	}
	if (!g_config.eager_source) {
		g_config.eager_limit = eager_limit_from_mpi_t();
		g_config.eager_source = g_config.eager_limit ? "btl_tcp_eager_limit" : "unknown";
	}
	if (const char *send = getenv("GAPPACE_SHIM_SEND")) {
		if (strcmp(send, "inline") == 0)
			g_config.open_flags |= GAPCTL_OPEN_NO_THREAD;
		else if (strcmp(send, "thread") != 0 && *send)
			fprintf(stderr, "gapctl-mpi: ignoring GAPPACE_SHIM_SEND=%s "
				"(want thread or inline)\n", send);
	}
	const int rc = gapctl_open(&g_handle, g_config.open_flags);
	if (rc < 0) {
		g_handle = nullptr;
		fprintf(stderr, "gapctl-mpi: rank %d: gapctl_open: %s; running without hints\n",
			g_world_rank, gapctl_strerror(rc));
	}
	if (g_config.log)
		log_line("start thread_multiple=%d gapctl=%s exchange=%d max_rescans=%d eager_limit=%llu (%s)",
			 g_thread_multiple ? 1 : 0, g_handle ? "open" : "none",
			 g_config.exchange ? 1 : 0, g_config.max_rescans,
			 static_cast<unsigned long long>(g_config.eager_limit), g_config.eager_source);
	g_on.store(true, std::memory_order_release);
}

void shim_stop() noexcept
{
	if (!shim_on())
		return;
	end_leftover_phases();
	g_on.store(false, std::memory_order_release);
	if (g_config.stats) {
		gapctl_stats stats{};
		stats.struct_size = sizeof(stats);
		if (g_handle)
			gapctl_flush(g_handle, 100);
		const int rc = g_handle ? gapctl_get_stats(g_handle, &stats) : -ENOTCONN;
		log_line("stats rc=%d carrier=%u queued=%llu sent=%llu dropped=%llu rejected=%llu "
			 "carrier_errors=%llu phases=%llu exchanges=%llu exchange_us=%llu "
			 "shim_ns_per_phase=%llu",
			 rc, stats.carrier, static_cast<unsigned long long>(stats.hints_queued),
			 static_cast<unsigned long long>(stats.hints_sent),
			 static_cast<unsigned long long>(stats.hints_dropped),
			 static_cast<unsigned long long>(stats.hints_rejected),
			 static_cast<unsigned long long>(stats.carrier_errors),
			 static_cast<unsigned long long>(g_phase_counter.load()),
			 static_cast<unsigned long long>(g_exchanges.load()),
			 static_cast<unsigned long long>(g_exchange_ns.load() / 1000),
			 static_cast<unsigned long long>(
				 g_overhead_ns.load() / std::max<uint64_t>(1, g_phase_counter.load())));
	}
	gapctl_close(g_handle);
	g_handle = nullptr;
	if (g_endpoint_type != MPI_DATATYPE_NULL)
		PMPI_Type_free(&g_endpoint_type);
	// The keyval stays: MPI still runs its delete callback for live communicators.
}

CommState *comm_enter(MPI_Comm comm, bool may_block) noexcept
{
	if (!shim_on() || comm == MPI_COMM_NULL)
		return nullptr;
	const uint64_t t0 = g_config.stats ? now_ns() : 0;
	CommState *cs = lookup_or_create(comm);
	if (cs && cs->hinted) {
		cs->seq++;
		if (!cs->exchange_pending && exchange_due(*cs)) {
			cs->exchange_pending = true;
			cs->due_seq = cs->seq;
		}
		if (cs->exchange_pending && may_block) {
			cs->exchange_pending = false;
			const uint64_t t1 = g_config.stats ? now_ns() : 0;
			exchange(*cs);
			if (g_config.stats) {
				const uint64_t spent = now_ns() - t1;
				g_exchange_ns.fetch_add(spent, std::memory_order_relaxed);
				g_overhead_ns.fetch_sub(spent, std::memory_order_relaxed);
			}
		}
	}
	if (g_config.stats)
		g_overhead_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
	return cs && cs->hinted ? cs : nullptr;
}

std::shared_ptr<CommState> comm_shared(MPI_Comm comm) noexcept
{
	RegistryLock lock;
	const auto it = g_registry->comms.find(comm);
	return it == g_registry->comms.end() ? nullptr : it->second;
}

Phase phase_begin(const CommState &cs, uint32_t kind, uint32_t flags, uint64_t bytes) noexcept
{
	const uint64_t t0 = g_config.stats ? now_ns() : 0;
	const PeerTable *table = cs.peers.load(std::memory_order_acquire);
	gapctl_phase desc{};
	desc.struct_size = sizeof(desc);
	desc.kind = kind;
	desc.algorithm = GAPCTL_ALGORITHM_UNKNOWN;
	// Beyond the eager limit (less the message header), each message waits for its
	// receiver's clear-to-send.
	desc.flags = flags | (g_config.eager_limit && bytes + kMessageHeaderAllowance > g_config.eager_limit
				      ? GAPCTL_F_RENDEZVOUS
				      : 0);
	desc.bytes_per_peer = bytes;
	desc.comm_size = static_cast<uint32_t>(cs.size);
	desc.rank = cs.rank;
	desc.n_peers = table ? static_cast<uint32_t>(table->peers.size()) : 0;
	desc.peers = table && !table->peers.empty() ? table->peers.data() : nullptr;

	Phase phase;
	phase.n = g_phase_counter.fetch_add(1, std::memory_order_relaxed) + 1;
	int rc = -ENOTCONN;
	if (g_handle) {
		rc = gapctl_phase_begin(g_handle, &desc, &phase.id);
		if (rc < 0 && rc != -E2BIG)	// E2BIG: sent with the first peers, id valid
			phase.id = 0;
	}
	if (g_config.log)
		log_line("begin n=%llu kind=%s flags=%u bytes=%llu comm_size=%d crank=%d peers=%u "
			 "tuples=%u addrs=%u id=%llu rc=%d",
			 static_cast<unsigned long long>(phase.n), kind_name(kind), desc.flags,
			 static_cast<unsigned long long>(bytes), cs.size, cs.rank, desc.n_peers,
			 table ? table->tuple_peers : 0, table ? table->address_peers : 0,
			 static_cast<unsigned long long>(phase.id), rc);
	phase.start_ns = now_ns();
	if (g_config.stats)
		g_overhead_ns.fetch_add(phase.start_ns - t0, std::memory_order_relaxed);
	return phase;
}

void phase_end(const Phase &phase) noexcept
{
	const uint64_t t0 = now_ns();
	const uint64_t duration = phase.start_ns ? t0 - phase.start_ns : 0;
	int rc = -ENOTCONN;
	if (g_handle && phase.id)
		rc = gapctl_phase_end(g_handle, phase.id, duration);
	if (g_config.log)
		log_line("end n=%llu ns=%llu id=%llu rc=%d", static_cast<unsigned long long>(phase.n),
			 static_cast<unsigned long long>(duration),
			 static_cast<unsigned long long>(phase.id), rc);
	if (g_config.stats)
		g_overhead_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
}

void track_nonblocking(MPI_Request request, const Phase &phase) noexcept
{
	bool tracked = false;
	{
		RegistryLock lock;
		try {
			g_registry->nonblocking.emplace(request, phase);
			tracked = true;
		} catch (...) {
		}
		g_registry->update_tracked();
	}
	if (!tracked)
		phase_end(phase);	// cannot see its completion: end now rather than never
}

void track_persistent(MPI_Request request, std::shared_ptr<CommState> cs, uint32_t kind,
		      uint32_t flags, uint64_t bytes) noexcept
{
	if (!cs)
		return;
	RegistryLock lock;
	try {
		Registry::Persistent &p = g_registry->persistent[request];
		p.cs = std::move(cs);
		p.kind = kind;
		p.flags = flags;
		p.bytes = bytes;
		p.active = false;
	} catch (...) {
	}
	g_registry->update_tracked();
}

void request_started(MPI_Request request) noexcept
{
	std::shared_ptr<CommState> cs;
	uint32_t kind = 0, flags = 0;
	uint64_t bytes = 0;
	{
		RegistryLock lock;
		const auto it = g_registry->persistent.find(request);
		if (it == g_registry->persistent.end() || it->second.active)
			return;
		cs = it->second.cs;
		kind = it->second.kind;
		flags = it->second.flags;
		bytes = it->second.bytes;
	}
	// gapctl outside the lock: it never blocks, but other threads need not wait for it.
	const Phase phase = phase_begin(*cs, kind, flags, bytes);
	RegistryLock lock;
	const auto it = g_registry->persistent.find(request);
	if (it != g_registry->persistent.end()) {
		it->second.active = true;
		it->second.phase = phase;
	}
}

void request_completed(MPI_Request request) noexcept
{
	Phase phase;
	{
		RegistryLock lock;
		if (const auto it = g_registry->oldest_nonblocking(request);
		    it != g_registry->nonblocking.end()) {
			phase = it->second;
			g_registry->nonblocking.erase(it);
			g_registry->update_tracked();
		} else if (const auto pit = g_registry->persistent.find(request);
			   pit != g_registry->persistent.end() && pit->second.active) {
			phase = pit->second.phase;
			pit->second.active = false;
		} else {
			return;
		}
	}
	phase_end(phase);
}

void request_freed(MPI_Request request) noexcept
{
	Phase phase;
	bool ended = false;
	{
		RegistryLock lock;
		if (const auto it = g_registry->oldest_nonblocking(request);
		    it != g_registry->nonblocking.end()) {
			// Freeing an active collective request is erroneous MPI, but if a
			// program does it, the phase still has to end for the daemon.
			phase = it->second;
			ended = true;
			g_registry->nonblocking.erase(it);
		} else if (const auto pit = g_registry->persistent.find(request);
			   pit != g_registry->persistent.end()) {
			if (pit->second.active) {
				phase = pit->second.phase;
				ended = true;
			}
			g_registry->persistent.erase(pit);
		}
		g_registry->update_tracked();
	}
	if (ended) {
		phase.start_ns = 0;	// completion not observed
		phase_end(phase);
	}
}

} // namespace gp::mpishim
