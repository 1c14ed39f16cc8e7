// The state file: what we changed, on disk before we change it. Written with our JsonWriter,
// read with nlohmann::json (Debian's nlohmann-json3-dev), parsed without exceptions.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "internal.hpp"
#include "json.hpp"

namespace gp::stock {
namespace {

using detail::system_error;
using nlohmann::json;

constexpr uint64_t kStateVersion = 1;

Error invalid(const std::string &what)
{
	return make_error(EINVAL, "state file: " + what);
}

// Typed, exception-free access to the fields of one JSON object.
class Fields {
public:
	Fields(const json &object, std::string where) : object_(object), where_(std::move(where)) {}

	Expected<uint64_t> unsigned_number(const char *name, uint64_t max = ~uint64_t{0}) const
	{
		auto it = object_.find(name);
		if (it == object_.end())
			return invalid(where_ + ": missing \"" + name + "\"");
		if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
			return invalid(where_ + ": \"" + name + "\" must be an unsigned integer");
		const uint64_t value = it->get<uint64_t>();
		if (value > max)
			return invalid(where_ + ": \"" + name + "\" is out of range (" + std::to_string(value) + ")");
		return value;
	}

	Expected<bool> boolean(const char *name) const
	{
		auto it = object_.find(name);
		if (it == object_.end())
			return invalid(where_ + ": missing \"" + name + "\"");
		if (!it->is_boolean())
			return invalid(where_ + ": \"" + name + "\" must be true or false");
		return it->get<bool>();
	}

	// An address without a port; nullopt if the field is absent and `optional`.
	Expected<std::optional<Endpoint>> address(const char *name, bool optional) const
	{
		auto it = object_.find(name);
		if (it == object_.end()) {
			if (optional)
				return std::optional<Endpoint>();
			return invalid(where_ + ": missing \"" + name + "\"");
		}
		if (!it->is_string())
			return invalid(where_ + ": \"" + name + "\" must be an address string");
		auto parsed = parse_host_address(it->get<std::string>());
		if (!parsed)
			return invalid(where_ + ": \"" + name + "\": " + parsed.error().message);
		return std::optional<Endpoint>(*parsed);
	}

	Expected<const json *> array(const char *name) const
	{
		auto it = object_.find(name);
		if (it == object_.end())
			return invalid(where_ + ": missing \"" + name + "\"");
		if (!it->is_array())
			return invalid(where_ + ": \"" + name + "\" must be an array");
		return &*it;
	}

private:
	const json &object_;
	std::string where_;
};

// Collects the first error of a series of field reads.
template <class T> bool take(Expected<T> &&result, T &out, std::optional<Error> &error)
{
	if (error)
		return false;
	if (!result) {
		error = result.error();
		return false;
	}
	out = std::move(result.value());
	return true;
}

Expected<RouteRecord> parse_route(const json &item, size_t index)
{
	const std::string where = "routes[" + std::to_string(index) + "]";
	if (!item.is_object())
		return invalid(where + " must be an object");
	const Fields fields(item, where);
	RouteRecord record;
	std::optional<Endpoint> peer;
	uint64_t table = 0, oif = 0, rto_min_ms = 0;
	std::optional<Error> error;
	take(fields.address("peer", false), peer, error);
	take(fields.unsigned_number("table", UINT32_MAX), table, error);
	take(fields.unsigned_number("oif", UINT32_MAX), oif, error);
	take(fields.address("gateway", true), record.gateway, error);
	take(fields.address("prefsrc", true), record.prefsrc, error);
	take(fields.unsigned_number("rto_min_ms", UINT32_MAX), rto_min_ms, error);
	take(fields.boolean("quickack"), record.quickack, error);
	if (error)
		return *error;
	record.peer = *peer;
	record.table = static_cast<uint32_t>(table);
	record.oif = static_cast<uint32_t>(oif);
	record.rto_min_ms = static_cast<uint32_t>(rto_min_ms);
	return record;
}

Expected<PacingRecord> parse_pacing(const json &item, size_t index)
{
	const std::string where = "pacing[" + std::to_string(index) + "]";
	if (!item.is_object())
		return invalid(where + " must be an object");
	const Fields fields(item, where);
	PacingRecord record;
	uint64_t pid = 0, fd = 0;
	std::optional<Error> error;
	take(fields.unsigned_number("pid", INT32_MAX), pid, error);
	take(fields.unsigned_number("start_time"), record.start_time, error);
	take(fields.unsigned_number("inode"), record.inode, error);
	if (item.contains("fd")) // only a hint, and absent when we had none
		take(fields.unsigned_number("fd", INT32_MAX), fd, error);
	else
		fd = ~uint64_t{0};
	take(fields.unsigned_number("original_bytes_per_second"), record.original_bytes_per_second, error);
	take(fields.unsigned_number("applied_bytes_per_second"), record.applied_bytes_per_second, error);
	if (item.contains("original_priority")) { // only for sockets steered into a host shaper
		uint64_t priority = 0;
		if (take(fields.unsigned_number("original_priority", UINT32_MAX), priority, error))
			record.original_priority = static_cast<uint32_t>(priority);
	}
	if (item.contains("original_rto_min_us")) { // only for sockets whose RTO we floored
		uint64_t original = 0, applied = 0;
		if (take(fields.unsigned_number("original_rto_min_us", UINT32_MAX), original, error))
			record.original_rto_min_us = static_cast<uint32_t>(original);
		if (take(fields.unsigned_number("applied_rto_min_us", UINT32_MAX), applied, error))
			record.applied_rto_min_us = static_cast<uint32_t>(applied);
	}
	if (error)
		return *error;
	if (pid == 0)
		return invalid(where + ": \"pid\" must not be 0");
	record.pid = static_cast<pid_t>(pid);
	record.fd = fd == ~uint64_t{0} ? -1 : static_cast<int>(fd);
	return record;
}

std::string directory_of(const std::string &path)
{
	const size_t slash = path.rfind('/');
	if (slash == std::string::npos)
		return ".";
	if (slash == 0)
		return "/";
	return path.substr(0, slash);
}

// mkdir -p
Expected<void> make_directories(const std::string &directory)
{
	struct stat st {};
	if (stat(directory.c_str(), &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return make_error(ENOTDIR, directory + " is not a directory");
		return {};
	}
	const std::string parent = directory_of(directory);
	if (parent != directory) {
		if (auto made = make_directories(parent); !made)
			return made;
	}
	if (mkdir(directory.c_str(), 0755) < 0 && errno != EEXIST)
		return system_error(errno, "cannot create directory " + directory);
	return {};
}

} // namespace

Expected<void> make_parent_directories(const std::string &path)
{
	return make_directories(directory_of(path));
}

namespace {

Expected<void> write_all(int fd, const std::string &text, const std::string &path)
{
	size_t written = 0;
	while (written < text.size()) {
		const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return system_error(errno, "cannot write " + path);
		}
		written += static_cast<size_t>(n);
	}
	return {};
}

bool same_address(const Endpoint &a, const Endpoint &b)
{
	return detail::address_only(a) == detail::address_only(b);
}

} // namespace

std::string serialize_state(const StockState &state)
{
	JsonWriter out;
	out.begin_object();
	out.field("version", kStateVersion);
	out.field("netns_inode", state.netns_inode);
	out.key("routes").begin_array();
	for (const RouteRecord &route : state.routes) {
		out.begin_object();
		out.field("peer", format_endpoint(detail::address_only(route.peer)));
		out.field("table", route.table);
		out.field("oif", route.oif);
		if (route.gateway)
			out.field("gateway", format_endpoint(detail::address_only(*route.gateway)));
		if (route.prefsrc)
			out.field("prefsrc", format_endpoint(detail::address_only(*route.prefsrc)));
		out.field("rto_min_ms", route.rto_min_ms);
		out.field("quickack", route.quickack);
		out.end_object();
	}
	out.end_array();
	out.key("pacing").begin_array();
	for (const PacingRecord &pacing : state.pacing) {
		out.begin_object();
		out.field("pid", static_cast<uint64_t>(pacing.pid));
		out.field("start_time", pacing.start_time);
		out.field("inode", pacing.inode);
		if (pacing.fd >= 0)
			out.field("fd", static_cast<uint64_t>(pacing.fd));
		out.field("original_bytes_per_second", pacing.original_bytes_per_second);
		out.field("applied_bytes_per_second", pacing.applied_bytes_per_second);
		if (pacing.original_priority)
			out.field("original_priority", static_cast<uint64_t>(*pacing.original_priority));
		if (pacing.original_rto_min_us) {
			out.field("original_rto_min_us", static_cast<uint64_t>(*pacing.original_rto_min_us));
			out.field("applied_rto_min_us", static_cast<uint64_t>(pacing.applied_rto_min_us));
		}
		out.end_object();
	}
	out.end_array();
	if (state.original_tso_rtt_log)
		out.field("original_tso_rtt_log", static_cast<uint64_t>(*state.original_tso_rtt_log));
	out.end_object();
	return out.str() + "\n";
}

Expected<StockState> parse_state(const std::string &text)
{
	const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
	if (document.is_discarded())
		return invalid("not valid JSON");
	if (!document.is_object())
		return invalid("the top level must be an object");
	const Fields top(document, "top level");
	auto version = top.unsigned_number("version");
	if (!version)
		return version.error();
	if (*version != kStateVersion)
		return invalid("version " + std::to_string(*version) + " is not supported (this daemon writes " +
			       std::to_string(kStateVersion) + ")");
	StockState state;
	auto netns = top.unsigned_number("netns_inode");
	if (!netns)
		return netns.error();
	state.netns_inode = *netns;
	auto routes = top.array("routes");
	if (!routes)
		return routes.error();
	for (size_t i = 0; i < (*routes)->size(); ++i) {
		auto route = parse_route((**routes)[i], i);
		if (!route)
			return route.error();
		state.routes.push_back(*route);
	}
	auto pacing = top.array("pacing");
	if (!pacing)
		return pacing.error();
	for (size_t i = 0; i < (*pacing)->size(); ++i) {
		auto record = parse_pacing((**pacing)[i], i);
		if (!record)
			return record.error();
		state.pacing.push_back(*record);
	}
	if (document.contains("original_tso_rtt_log")) { // only while TsoSizing is engaged
		auto original = top.unsigned_number("original_tso_rtt_log", UINT32_MAX);
		if (!original)
			return original.error();
		state.original_tso_rtt_log = static_cast<uint32_t>(*original);
	}
	return state;
}

Expected<StockState> load_state(const std::string &path)
{
	std::ifstream file(path);
	if (!file) {
		const int err = errno ? errno : EIO;
		if (err == ENOENT)
			return make_error(ENOENT, "no state file " + path);
		return system_error(err, "cannot read " + path);
	}
	std::ostringstream text;
	text << file.rdbuf();
	auto state = parse_state(text.str());
	if (!state)
		return detail::with_context(state.error(), path);
	return state;
}

Expected<uint64_t> current_netns_inode()
{
	struct stat st {};
	if (stat("/proc/thread-self/ns/net", &st) < 0)
		return system_error(errno, "cannot stat /proc/thread-self/ns/net");
	return static_cast<uint64_t>(st.st_ino);
}

Expected<void> write_state_file(const std::string &path, const StockState &state, bool create_directory)
{
	if (path.empty())
		return make_error(EINVAL, "state file: empty path");
	if (create_directory) {
		if (auto made = make_directories(directory_of(path)); !made)
			return made;
	}
	// The temporary file is in the same directory, so rename() replaces the old file in one
	// step: a reader (or a crash) sees the old state or the new one, never half of one.
	const std::string temporary = path + ".tmp";
	UniqueFd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
	if (!fd)
		return system_error(errno, "cannot create " + temporary);
	if (auto written = write_all(fd.get(), serialize_state(state), temporary); !written) {
		unlink(temporary.c_str());
		return written;
	}
	// No fsync: the file protects against a *daemon* crash, which rename() alone survives.
	// After a power loss there is nothing to undo (routes and sockets are gone too), and an
	// fsync per change costs tens of milliseconds on a busy disk, on the phase's critical path.
	fd.reset();
	if (rename(temporary.c_str(), path.c_str()) < 0) {
		const int err = errno;
		unlink(temporary.c_str());
		return system_error(err, "cannot rename " + temporary + " to " + path);
	}
	return {};
}

Expected<StateStore> StateStore::create(std::string path)
{
	auto existing = load_state(path);
	if (existing) {
		if (!existing->empty())
			return make_error(EEXIST, "state file " + path + " still records " +
							  std::to_string(existing->routes.size()) + " route(s), " +
							  std::to_string(existing->pacing.size()) + " paced socket(s)" +
							  (existing->original_tso_rtt_log ? " and a changed tcp_tso_rtt_log" : "") +
							  ": restore it first");
	} else if (existing.error().err != ENOENT) {
		return existing.error();
	}
	auto netns = current_netns_inode();
	if (!netns)
		return netns.error();
	StockState state;
	state.netns_inode = *netns;
	if (auto written = write_state_file(path, state); !written)
		return written.error();
	return StateStore(std::move(path), std::move(state));
}

Expected<StateStore> StateStore::adopt(std::string path, std::vector<std::string> &notes)
{
	auto existing = load_state(path);
	if (!existing) {
		if (existing.error().err == ENOENT)
			return create(std::move(path));
		return existing.error();
	}
	if (existing->empty())
		return create(std::move(path));
	auto netns = current_netns_inode();
	if (!netns)
		return netns.error();

	StockState kept;
	kept.netns_inode = *netns;
	kept.pacing = existing->pacing;	// sockets are reached by pid, from any namespace
	if (existing->netns_inode == *netns) {
		kept.routes = existing->routes;
		kept.original_tso_rtt_log = existing->original_tso_rtt_log;
	} else if (!existing->routes.empty() || existing->original_tso_rtt_log) {
		const std::string aside = path + ".netns-" + std::to_string(existing->netns_inode);
		StockState foreign;
		if (auto earlier = load_state(aside))
			foreign = *earlier;
		else if (earlier.error().err != ENOENT)
			return earlier.error();
		foreign.netns_inode = existing->netns_inode;
		for (const RouteRecord &route : existing->routes) {
			const bool known = std::any_of(foreign.routes.begin(), foreign.routes.end(),
						       [&](const RouteRecord &r) { return same_address(r.peer, route.peer); });
			if (!known)
				foreign.routes.push_back(route);
		}
		if (!foreign.original_tso_rtt_log)
			foreign.original_tso_rtt_log = existing->original_tso_rtt_log;
		// Written before the main file drops them: nothing is lost if we die in between.
		if (auto written = write_state_file(aside, foreign, false); !written)
			return written.error();
		notes.push_back("moved " + std::to_string(existing->routes.size()) + " route(s)" +
				(existing->original_tso_rtt_log ? " and tcp_tso_rtt_log" : "") +
				" of network namespace " + std::to_string(existing->netns_inode) +
				", which this daemon cannot undo, to " + aside);
	}
	if (auto written = write_state_file(path, kept); !written)
		return written.error();
	if (!kept.empty())
		notes.push_back("keeping " + std::to_string(kept.records()) +
				" record(s) that could not be undone yet; undone again at shutdown");
	return StateStore(std::move(path), std::move(kept));
}

Expected<void> StateStore::write(const StockState &next)
{
	// create() made the directory; someone deleting it meanwhile gets a clear error instead.
	if (auto written = write_state_file(path_, next, false); !written)
		return written;
	state_ = next;
	on_disk_ = next;
	dirty_ = false;
	return {};
}

void StateStore::removed()
{
	if (!dirty_)
		dirty_since_ = std::chrono::steady_clock::now();
	dirty_ = true;
}

void StateStore::readopted()
{
	// Live records are always a subset of the file's (by key): equal counts, nothing pending.
	dirty_ = state_.records() != on_disk_.records();
}

Expected<void> StateStore::flush()
{
	if (!dirty_)
		return {};
	return write(state_);
}

Expected<void> StateStore::flush_older_than(std::chrono::steady_clock::duration age)
{
	if (!dirty_ || std::chrono::steady_clock::now() - dirty_since_ < age)
		return {};
	return write(state_);
}

namespace {

template <class Record, class SameKey>
void put_record(std::vector<Record> &records, const Record &record, SameKey same_key)
{
	auto it = std::find_if(records.begin(), records.end(), same_key);
	if (it != records.end())
		*it = record;
	else
		records.push_back(record);
}

// Whether restoring from the file's record of a socket (`on_disk`) undoes at least what the
// live record needs: the same socket and fd hint, the same originals of every setting the
// live record holds. The applied cap and floor may differ from the file's, and the file may
// name settings no longer held (removed lazily): putting back an original the socket has
// again is harmless, as for records removed whole. So the phases of an MPI loop, which make
// and undo the same settings on the same sockets, write the file once.
bool covers(const PacingRecord &on_disk, const PacingRecord &live)
{
	return on_disk.pid == live.pid && on_disk.start_time == live.start_time && on_disk.inode == live.inode &&
	       on_disk.fd == live.fd && on_disk.original_bytes_per_second == live.original_bytes_per_second &&
	       (live.applied_bytes_per_second == 0 || on_disk.applied_bytes_per_second != 0) &&
	       (!live.original_priority || on_disk.original_priority == live.original_priority) &&
	       (!live.original_rto_min_us || on_disk.original_rto_min_us == live.original_rto_min_us);
}

} // namespace

Expected<void> StateStore::put(const RouteRecord &record)
{
	RouteRecord normalized = record;
	normalized.peer = detail::address_only(record.peer);
	auto same_peer = [&](const RouteRecord &r) { return same_address(r.peer, normalized.peer); };
	StockState next = state_;
	put_record(next.routes, normalized, same_peer);
	auto on_disk = std::find_if(on_disk_.routes.begin(), on_disk_.routes.end(), same_peer);
	if (on_disk != on_disk_.routes.end() && *on_disk == normalized) {
		state_ = std::move(next);
		readopted();
		return {};
	}
	return write(next);
}

Expected<void> StateStore::put(const PacingRecord &record)
{
	auto same_socket = [&](const PacingRecord &r) {
		return r.pid == record.pid && r.start_time == record.start_time && r.inode == record.inode;
	};
	StockState next = state_;
	put_record(next.pacing, record, same_socket);
	auto on_disk = std::find_if(on_disk_.pacing.begin(), on_disk_.pacing.end(), same_socket);
	if (on_disk != on_disk_.pacing.end() && covers(*on_disk, record)) {
		state_ = std::move(next);
		readopted();
		return {};
	}
	return write(next);
}

void StateStore::update(const PacingRecord &record)
{
	// Only ever for a record the file covers (covers()): nothing to write for it.
	put_record(state_.pacing, record, [&](const PacingRecord &r) {
		return r.pid == record.pid && r.start_time == record.start_time && r.inode == record.inode;
	});
}

Expected<void> StateStore::erase_route(const Endpoint &peer)
{
	const size_t before = state_.routes.size();
	std::erase_if(state_.routes, [&](const RouteRecord &r) { return same_address(r.peer, peer); });
	if (state_.routes.size() != before)
		removed();
	return {};
}

Expected<void> StateStore::erase_pacing(pid_t pid, uint64_t start_time, uint64_t inode)
{
	const size_t before = state_.pacing.size();
	std::erase_if(state_.pacing, [&](const PacingRecord &r) {
		return r.pid == pid && r.start_time == start_time && r.inode == inode;
	});
	if (state_.pacing.size() != before)
		removed();
	return {};
}

Expected<void> StateStore::put_tso_rtt_log(uint32_t original)
{
	StockState next = state_;
	next.original_tso_rtt_log = original;
	if (on_disk_.original_tso_rtt_log == original) {
		state_ = std::move(next);
		readopted();
		return {};
	}
	return write(next);
}

Expected<void> StateStore::erase_tso_rtt_log()
{
	if (state_.original_tso_rtt_log) {
		state_.original_tso_rtt_log.reset();
		removed();
	}
	return {};
}

const RouteRecord *StateStore::find_route(const Endpoint &peer) const
{
	for (const RouteRecord &record : state_.routes) {
		if (same_address(record.peer, peer))
			return &record;
	}
	return nullptr;
}

const PacingRecord *StateStore::find_pacing(pid_t pid, uint64_t start_time, uint64_t inode) const
{
	for (const PacingRecord &record : state_.pacing) {
		if (record.pid == pid && record.start_time == start_time && record.inode == inode)
			return &record;
	}
	return nullptr;
}

Expected<RestoreReport> restore_from_state(const std::string &path)
{
	auto loaded = load_state(path);
	if (!loaded) {
		if (loaded.error().err == ENOENT)
			return RestoreReport{};
		return loaded.error();
	}
	auto netns = current_netns_inode();
	if (!netns)
		return netns.error();

	RestoreReport report;
	StockState remaining;
	remaining.netns_inode = loaded->netns_inode;
	for (const RouteRecord &route : loaded->routes) {
		const std::string name = "route to " + format_endpoint(route.peer);
		if (loaded->netns_inode != *netns) {
			report.failures.push_back(make_error(EXDEV, name + " was added in network namespace " +
									    std::to_string(loaded->netns_inode) +
									    ", not this one (" +
									    std::to_string(*netns) + "): left alone"));
			remaining.routes.push_back(route);
			continue;
		}
		auto undone = detail::undo_route(route);
		if (!undone) {
			report.failures.push_back(detail::with_context(undone.error(), name));
			remaining.routes.push_back(route);
		} else if (*undone == detail::Undone::reverted) {
			++report.routes_deleted;
		} else {
			++report.already_gone;
		}
	}
	for (const PacingRecord &pacing : loaded->pacing) {
		auto undone = detail::undo_pacing(pacing);
		if (!undone) {
			report.failures.push_back(undone.error());
			remaining.pacing.push_back(pacing);
		} else if (*undone == detail::Undone::reverted) {
			++report.pacing_restored;
		} else {
			++report.already_gone;
		}
	}
	if (loaded->original_tso_rtt_log) {
		if (loaded->netns_inode != *netns) {
			report.failures.push_back(make_error(EXDEV, "tcp_tso_rtt_log was changed in network namespace " +
									    std::to_string(loaded->netns_inode) +
									    ", not this one: left alone"));
			remaining.original_tso_rtt_log = loaded->original_tso_rtt_log;
		} else if (auto put_back = put_back_tso_rtt_log(TsoSizing::kSysctlPath, *loaded->original_tso_rtt_log);
			   !put_back) {
			report.failures.push_back(put_back.error());
			remaining.original_tso_rtt_log = loaded->original_tso_rtt_log;
		} else {
			report.tso_rtt_log_restored = *put_back;
		}
	}
	if (auto written = write_state_file(path, remaining); !written)
		return written.error();
	return report;
}

} // namespace gp::stock
