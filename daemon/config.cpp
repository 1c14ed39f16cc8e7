#include "config.hpp"

#include <cerrno>
#include <fstream>
#include <set>
#include <sstream>

// Header-only with error values: no exceptions leave the parser (and none cross our interfaces).
#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "units.hpp"

namespace gp::daemon {
namespace {

// Collects the first error with its position; later checks are skipped once one failed.
class Checker {
public:
	explicit Checker(std::string source) : source_(std::move(source)) {}

	bool failed() const { return error_.has_value(); }
	Error error() const { return *error_; }

	void fail(const toml::source_region &where, const std::string &key, const std::string &what)
	{
		if (error_)
			return;
		std::string position = source_;
		if (where.begin.line)
			position += ":" + std::to_string(where.begin.line);
		error_ = make_error(EINVAL, position + ": " + key + ": " + what);
	}

	// Only the keys we know: a typo must not silently mean "default".
	void only_keys(const toml::table &table, const std::string &section, std::set<std::string> known)
	{
		for (auto &&[key, node] : table)
			if (!known.count(std::string(key.str())))
				fail(node.source(), section.empty() ? std::string(key.str()) : section + "." + std::string(key.str()),
				     "unknown key");
	}

	template <class T> std::optional<T> get(const toml::table &table, const std::string &section, const char *key,
						 const char *type_name)
	{
		const toml::node *node = table.get(key);
		if (!node)
			return std::nullopt;
		auto value = node->value_exact<T>(); // 1 is not true, 2.0 is not 2
		if (!value)
			fail(node->source(), section + "." + key, std::string("must be ") + type_name);
		return value;
	}

	// Quantities are strings with units ("200mbit", "5ms"); a bare integer is also taken.
	std::optional<uint64_t> quantity(const toml::table &table, const std::string &section, const char *key,
					 std::optional<uint64_t> (*parse)(std::string_view), const char *example)
	{
		const toml::node *node = table.get(key);
		if (!node)
			return std::nullopt;
		std::optional<uint64_t> value;
		if (auto text = node->value<std::string>())
			value = parse(*text);
		else if (auto number = node->value<int64_t>(); number && *number >= 0)
			value = static_cast<uint64_t>(*number);
		if (!value)
			fail(node->source(), section + "." + key, std::string("not a valid value (example: \"") + example + "\")");
		return value;
	}

	std::optional<uint64_t> ranged(const toml::table &table, const std::string &section, const char *key,
				       std::optional<uint64_t> (*parse)(std::string_view), const char *example, uint64_t lo,
				       uint64_t hi, const std::string &range_text)
	{
		auto value = quantity(table, section, key, parse, example);
		if (value && (*value < lo || *value > hi)) {
			fail(table.get(key)->source(), section + "." + key, "out of range " + range_text);
			return std::nullopt;
		}
		return value;
	}

	// A plain number (integer or float) within [lo, hi].
	std::optional<double> fraction(const toml::table &table, const std::string &section, const char *key, double lo,
				       double hi, const char *range_text)
	{
		const toml::node *node = table.get(key);
		if (!node)
			return std::nullopt;
		auto value = node->value<double>();
		if (!value || !(*value >= lo && *value <= hi)) {
			fail(node->source(), section + "." + key, std::string("must be a number in ") + range_text);
			return std::nullopt;
		}
		return value;
	}

private:
	std::string source_;
	std::optional<Error> error_;
};

std::optional<uint64_t> parse_count(std::string_view text) { return parse_u64(text); }

const toml::table *section(Checker &check, const toml::table &root, const char *name)
{
	const toml::node *node = root.get(name);
	if (!node)
		return nullptr;
	if (!node->is_table()) {
		check.fail(node->source(), name, "must be a table ([" + std::string(name) + "])");
		return nullptr;
	}
	return node->as_table();
}

} // namespace

const char *backend_name(BackendChoice backend)
{
	switch (backend) {
	case BackendChoice::Module: return "module";
	case BackendChoice::Stock: return "stock";
	default: return "auto";
	}
}

Expected<Config> parse_config(const std::string &text, const std::string &source_name)
{
	toml::parse_result parsed = toml::parse(text, source_name);
	if (!parsed) {
		const auto &err = parsed.error();
		return make_error(EINVAL, source_name + ":" + std::to_string(err.source().begin.line) + ": " +
						  std::string(err.description()));
	}
	const toml::table &root = parsed.table();
	Config config;
	config.source = source_name;
	Checker check(source_name);
	check.only_keys(root, "", {"daemon", "remedies", "rto", "pacing", "planner", "link", "bottleneck"});

	if (const toml::table *t = section(check, root, "daemon")) {
		check.only_keys(*t, "daemon", {"backend", "hints_socket", "control_socket", "state_file", "phase_timeout",
					       "max_phases", "history", "linger", "linger_idle", "quiet", "quiet_remedied",
					       "realtime_priority"});
		if (auto v = check.get<std::string>(*t, "daemon", "backend", "a string")) {
			if (*v == "auto")
				config.backend = BackendChoice::Auto;
			else if (*v == "module")
				config.backend = BackendChoice::Module;
			else if (*v == "stock")
				config.backend = BackendChoice::Stock;
			else
				check.fail(t->get("backend")->source(), "daemon.backend", "must be \"auto\", \"module\" or \"stock\"");
		}
		for (auto [key, field] : {std::pair{"hints_socket", &config.hints_socket},
					  std::pair{"control_socket", &config.control_socket},
					  std::pair{"state_file", &config.state_file}}) {
			if (auto v = check.get<std::string>(*t, "daemon", key, "a string")) {
				const bool socket_key = std::string_view(key).ends_with("socket");
				if (v->empty() || ((*v)[0] != '/' && !(socket_key && (*v)[0] == '@' && v->size() > 1)))
					check.fail(t->get(key)->source(), std::string("daemon.") + key,
						   socket_key ? "must be an absolute path or @name (abstract socket)"
							      : "must be an absolute path");
				else if (std::string_view(key).ends_with("socket") && v->size() >= 108)
					check.fail(t->get(key)->source(), std::string("daemon.") + key,
						   "longer than a Unix socket path may be (107 bytes)");
				else
					*field = *v;
			}
		}
		if (auto v = check.ranged(*t, "daemon", "phase_timeout", parse_time_us, "10s", 1000, 3600ULL * 1000000,
					  "1ms .. 1h"))
			config.phase_timeout_ms = static_cast<uint32_t>((*v + 999) / 1000);
		if (auto v = check.ranged(*t, "daemon", "linger", parse_time_us, "50ms", 0, 10ULL * 1000000, "0 .. 10s"))
			config.linger_ms = static_cast<uint32_t>((*v + 999) / 1000);
		if (auto v = check.ranged(*t, "daemon", "linger_idle", parse_time_us, "2s", 0, 60ULL * 1000000, "0 .. 60s"))
			config.linger_idle_ms = static_cast<uint32_t>((*v + 999) / 1000);
		if (auto v = check.ranged(*t, "daemon", "quiet", parse_time_us, "1s", 0, 60ULL * 1000000, "0 .. 60s"))
			config.quiet_ms = static_cast<uint32_t>((*v + 999) / 1000);
		if (auto v = check.ranged(*t, "daemon", "quiet_remedied", parse_time_us, "100ms", 0, 10ULL * 1000000,
					  "0 .. 10s"))
			config.quiet_remedied_ms = static_cast<uint32_t>((*v + 999) / 1000);
		if (auto v = check.ranged(*t, "daemon", "max_phases", parse_count, "4096", 1, 1 << 20, "1 .. 1048576"))
			config.max_phases = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "daemon", "history", parse_count, "256", 0, 65536, "0 .. 65536"))
			config.history = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "daemon", "realtime_priority", parse_count, "10", 0, 99,
					  "0 .. 99 (0: normal scheduling)"))
			config.realtime_priority = static_cast<uint32_t>(*v);
	}

	if (const toml::table *t = section(check, root, "remedies")) {
		check.only_keys(*t, "remedies", {"pacing", "rto"});
		if (auto v = check.get<bool>(*t, "remedies", "pacing", "true or false"))
			config.pacing = *v;
		if (auto v = check.get<bool>(*t, "remedies", "rto", "true or false"))
			config.rto = *v;
	}

	if (const toml::table *t = section(check, root, "rto")) {
		check.only_keys(*t, "rto", {"floor", "min", "max", "delack_max", "quickack", "stock_floor"});
		// 200 ms is Linux's own TCP_RTO_MIN: an override above it would make things worse.
		const uint64_t lo = 1000, hi = 200000;
		if (auto v = check.ranged(*t, "rto", "floor", parse_time_us, "5ms", lo, hi, "1ms .. 200ms"))
			config.rto_floor_us = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "rto", "min", parse_time_us, "1ms", lo, hi, "1ms .. 200ms"))
			config.rto_min_us = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "rto", "max", parse_time_us, "200ms", lo, hi, "1ms .. 200ms"))
			config.rto_max_us = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "rto", "delack_max", parse_time_us, "4ms", 1, hi, "1us .. 200ms"))
			config.delack_max_us = static_cast<uint32_t>(*v);
		if (auto v = check.get<bool>(*t, "rto", "quickack", "true or false"))
			config.rto_quickack = *v;
		if (auto v = check.get<std::string>(*t, "rto", "stock_floor", "a string")) {
			if (*v == "auto")
				config.rto_stock_floor = StockFloor::Auto;
			else if (*v == "socket")
				config.rto_stock_floor = StockFloor::Socket;
			else if (*v == "route")
				config.rto_stock_floor = StockFloor::Route;
			else
				check.fail(t->get("stock_floor")->source(), "rto.stock_floor", "must be \"auto\", \"socket\" or \"route\"");
		}
		if (!check.failed() && config.rto_quickack && config.rto_stock_floor == StockFloor::Socket)
			check.fail(t->source(), "rto.quickack", "needs the floor's route: stock_floor \"route\" or \"auto\"");
		if (!check.failed() && config.rto_min_us > config.rto_max_us)
			check.fail(t->source(), "rto", "min is above max");
		if (!check.failed() && (config.rto_floor_us < config.rto_min_us || config.rto_floor_us > config.rto_max_us))
			check.fail(t->source(), "rto.floor", "outside [rto.min, rto.max]");
	}

	if (const toml::table *t = section(check, root, "pacing")) {
		check.only_keys(*t, "pacing",
				{"queue_packets", "mtu", "min_rate", "frame_overhead", "pace_local_peers", "pacer"});
		if (auto v = check.get<std::string>(*t, "pacing", "pacer", "a string")) {
			if (*v == "socket" || *v == "host")
				config.host_shaper = *v == "host";
			else
				check.fail(t->get("pacer")->source(), "pacing.pacer", "must be \"socket\" or \"host\"");
		}
		if (auto v = check.ranged(*t, "pacing", "frame_overhead", parse_count, "90", 0, 1000, "0 .. 1000"))
			config.frame_overhead = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "pacing", "queue_packets", parse_count, "40", 1, 1 << 20, "1 .. 1048576"))
			config.queue_packets = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "pacing", "mtu", parse_count, "1500", 68, 65535, "68 .. 65535"))
			config.mtu = static_cast<uint32_t>(*v);
		if (auto v = check.ranged(*t, "pacing", "min_rate", parse_rate, "64kbit", 1000, UINT64_MAX / 2, ">= 1kbit"))
			config.min_rate_bps = *v;
		if (auto v = check.get<bool>(*t, "pacing", "pace_local_peers", "true or false"))
			config.pace_local_peers = *v;
	}

	if (const toml::table *t = section(check, root, "planner")) {
		check.only_keys(*t, "planner", {"model", "parameters", "queue_share", "floor_cost", "learn", "loss_check_phases"});
		if (auto v = check.get<std::string>(*t, "planner", "model", "a string")) {
			if (*v == "models" || *v == "default")
				config.planner = *v;
			else
				check.fail(t->get("model")->source(), "planner.model", "must be \"models\" or \"default\"");
		}
		if (auto v = check.get<std::string>(*t, "planner", "parameters", "a string")) {
			if (v->empty() || (*v)[0] != '/')
				check.fail(t->get("parameters")->source(), "planner.parameters", "must be an absolute path");
			else
				config.parameters_file = *v;
		}
		if (auto v = check.fraction(*t, "planner", "queue_share", 0.05, 1.0, "0.05 .. 1"))
			config.queue_share = *v;
		if (auto v = check.fraction(*t, "planner", "floor_cost", 0.0, 1.0, "0 .. 1"))
			config.floor_cost = *v;
		if (auto v = check.get<bool>(*t, "planner", "learn", "true or false"))
			config.learn_plans = *v;
		if (auto v = check.ranged(*t, "planner", "loss_check_phases", parse_count, "32", 0, 4096, "0 .. 4096"))
			config.loss_check_phases = *v;
	}

	auto array_of_tables = [&](const char *name) -> const toml::array * {
		const toml::node *node = root.get(name);
		if (!node)
			return nullptr;
		const toml::array *array = node->as_array();
		if (!array || !array->is_array_of_tables()) {
			check.fail(node->source(), name, std::string("must be an array of tables ([[") + name + "]])");
			return nullptr;
		}
		return array;
	};

	if (const toml::array *links = array_of_tables("link")) {
		for (const toml::node &node : *links) {
			const toml::table &t = *node.as_table();
			check.only_keys(t, "link", {"device", "rate"});
			LinkOverride link;
			auto device = check.get<std::string>(t, "link", "device", "a string");
			auto rate = check.ranged(t, "link", "rate", parse_rate, "1gbit", 1000, UINT64_MAX / 2, ">= 1kbit");
			if (!check.failed() && (!device || device->empty() || device->size() >= 16))
				check.fail(t.source(), "link.device", "required, 1..15 characters");
			if (!check.failed() && !rate)
				check.fail(t.source(), "link.rate", "required");
			if (check.failed())
				break;
			link.device = *device;
			link.rate_bps = *rate;
			config.links.push_back(link);
		}
	}

	if (const toml::array *bottlenecks = array_of_tables("bottleneck")) {
		std::set<std::string> names;
		for (const toml::node &node : *bottlenecks) {
			const toml::table &t = *node.as_table();
			check.only_keys(t, "bottleneck", {"name", "capacity", "queue_packets", "prefixes"});
			Bottleneck b;
			if (auto name = check.get<std::string>(t, "bottleneck", "name", "a string"))
				b.name = *name;
			if (auto c = check.ranged(t, "bottleneck", "capacity", parse_rate, "200mbit", 1000, UINT64_MAX / 2,
						  ">= 1kbit"))
				b.capacity_bps = *c;
			if (auto q = check.ranged(t, "bottleneck", "queue_packets", parse_count, "40", 1, 1 << 20,
						  "1 .. 1048576"))
				b.queue_packets = static_cast<uint32_t>(*q);
			const toml::node *prefixes = t.get("prefixes");
			if (!check.failed() && b.name.empty())
				check.fail(t.source(), "bottleneck.name", "required");
			if (!check.failed() && !names.insert(b.name).second)
				check.fail(t.source(), "bottleneck.name", "\"" + b.name + "\" is used twice");
			if (!check.failed() && !b.capacity_bps)
				check.fail(t.source(), "bottleneck.capacity", "required");
			if (!check.failed() && (!prefixes || !prefixes->is_array() || prefixes->as_array()->empty()))
				check.fail(t.source(), "bottleneck.prefixes", "required: a non-empty array of prefixes");
			if (check.failed())
				break;
			for (const toml::node &p : *prefixes->as_array()) {
				auto text = p.value<std::string>();
				auto prefix = text ? parse_prefix(*text) : Expected<Prefix>(make_error(EINVAL, "not a string"));
				if (!prefix) {
					check.fail(p.source(), "bottleneck.prefixes", prefix.error().message);
					break;
				}
				b.prefixes.push_back(*prefix);
			}
			config.bottlenecks.push_back(std::move(b));
		}
	}

	if (check.failed())
		return check.error();
	return config;
}

Expected<Config> load_config(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		return make_error(errno ? errno : ENOENT, path + ": " + std::strerror(errno ? errno : ENOENT));
	std::stringstream text;
	text << in.rdbuf();
	return parse_config(text.str(), path);
}

} // namespace gp::daemon
