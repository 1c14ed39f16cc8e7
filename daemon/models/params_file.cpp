#include "params_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "unique_fd.hpp"

namespace gp::models {
namespace {

using nlohmann::json;

constexpr size_t kMaxFileBytes = 16 << 20; // a parameter file is a few KiB

// Reads values out of the parsed document; the first problem is kept and ends the parse.
class Reader {
public:
	explicit Reader(std::string_view source) : source_(source) {}

	bool ok() const { return !error_; }
	Error error() const { return *error_; }

	void fail(const std::string &path, const std::string &what)
	{
		if (!error_)
			error_ = make_error(EINVAL, source_ + ": " + path + ": " + what);
	}

	// obj[key], or nullptr when absent (an error too if required).
	const json *member(const json &obj, const char *key, const std::string &path, bool required)
	{
		auto it = obj.find(key);
		if (it == obj.end()) {
			if (required)
				fail(path, "missing");
			return nullptr;
		}
		return &*it;
	}

	// A finite number >= 0.
	double number(const json &obj, const char *key, const std::string &prefix, bool required)
	{
		const std::string path = prefix + key;
		const json *v = member(obj, key, path, required);
		if (!v || !ok())
			return 0;
		if (!v->is_number()) {
			fail(path, "must be a number");
			return 0;
		}
		const double d = v->get<double>();
		if (!std::isfinite(d))
			fail(path, "must be a finite number");
		else if (d < 0)
			fail(path, "must be >= 0");
		return ok() ? d : 0;
	}

	// A whole number >= 0.
	uint64_t count(const json &obj, const char *key, const std::string &prefix, bool required)
	{
		const std::string path = prefix + key;
		const json *v = member(obj, key, path, required);
		if (!v || !ok())
			return 0;
		if (v->is_number_unsigned())
			return v->get<uint64_t>();
		if (v->is_number_integer()) {
			fail(path, "must be >= 0");
			return 0;
		}
		if (v->is_number_float()) {
			const double d = v->get<double>();
			if (d < 0)
				fail(path, "must be >= 0");
			else if (d != std::floor(d) || d >= 18446744073709551616.0)
				fail(path, "must be a whole number");
			return ok() ? static_cast<uint64_t>(d) : 0;
		}
		fail(path, "must be a number");
		return 0;
	}

	std::string text(const json &obj, const char *key)
	{
		const json *v = member(obj, key, key, false);
		if (!v)
			return {};
		if (!v->is_string()) {
			fail(key, "must be a string");
			return {};
		}
		return v->get<std::string>();
	}

	// obj[key] if it is an object; nullptr when absent or wrong (an error then).
	const json *object(const json &obj, const char *key, bool required)
	{
		const json *v = member(obj, key, key, required);
		if (v && !v->is_object()) {
			fail(key, "must be an object");
			return nullptr;
		}
		return v;
	}

private:
	std::string source_;
	std::optional<Error> error_;
};

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the rest is for humans.
std::string without_exception_id(const char *what)
{
	std::string_view s = what;
	if (s.starts_with('[')) {
		const size_t end = s.find("] ");
		if (end != std::string_view::npos)
			s.remove_prefix(end + 2);
	}
	return std::string(s);
}

} // namespace

Expected<Params> parse_params(std::string_view text, std::string_view source_name)
{
	const std::string source(source_name);
	json doc;
	try {
		doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
	} catch (const json::exception &e) {
		// Also numbers beyond double (1e999): JSON has no other way to write a non-finite one.
		return make_error(EINVAL, source + ": not valid JSON: " + without_exception_id(e.what()));
	}
	Reader r(source);
	if (!doc.is_object())
		return make_error(EINVAL, source + ": must be a JSON object");

	Params p;
	if (const json *format = r.member(doc, "format", "format", true); format && r.ok()) {
		if (!format->is_string() || format->get<std::string>() != kParamsFormat)
			r.fail("format", "must be \"" + std::string(kParamsFormat) + "\", not " + format->dump());
	}
	p.local = r.text(doc, "local");
	p.peer = r.text(doc, "peer");
	p.measured_at = r.text(doc, "measured_at");
	p.latency_us = r.number(doc, "latency_us", "", true);
	if (doc.contains("link_bps"))
		p.link_bps = r.count(doc, "link_bps", "", true);
	if (const json *rtt = r.object(doc, "rtt", false)) {
		ParamsRtt v;
		v.mean_us = r.number(*rtt, "mean_us", "rtt.", true);
		v.sigma_us = r.number(*rtt, "sigma_us", "rtt.", true);
		v.samples = r.count(*rtt, "samples", "rtt.", false);
		p.rtt = v;
	}
	if (const json *sq = r.object(doc, "switch_queue", false)) {
		ParamsSwitchQueue v;
		v.delay_empty_us = r.number(*sq, "delay_empty_us", "switch_queue.", false);
		v.delay_full_us = r.number(*sq, "delay_full_us", "switch_queue.", false);
		v.bytes = r.count(*sq, "bytes", "switch_queue.", true);
		v.packets = r.count(*sq, "packets", "switch_queue.", false);
		v.mtu = r.count(*sq, "mtu", "switch_queue.", false);
		p.switch_queue = v;
	}
	if (const json *oneway = r.object(doc, "oneway", false))
		p.oneway_s_us = r.number(*oneway, "S_us", "oneway.", true);
	if (const json *twoway = r.object(doc, "twoway", false))
		p.twoway_s_us = r.number(*twoway, "S_us", "twoway.", true);

	if (const json *points = r.member(doc, "points", "points", true); points && r.ok()) {
		if (!points->is_array())
			r.fail("points", "must be an array");
		else if (points->empty())
			r.fail("points", "must hold at least one point");
		for (size_t i = 0; r.ok() && i < points->size(); ++i) {
			const std::string at = "points[" + std::to_string(i) + "]";
			const json &pt = (*points)[i];
			if (!pt.is_object()) {
				r.fail(at, "must be an object");
				break;
			}
			const std::string prefix = at + ".";
			ParamsPoint v;
			v.bytes = r.count(pt, "bytes", prefix, true);
			v.g_us = r.number(pt, "g_us", prefix, true);
			v.os_us = r.number(pt, "os_us", prefix, false);
			v.or_us = r.number(pt, "or_us", prefix, false);
			v.rtt_us = r.number(pt, "rtt_us", prefix, false);
			v.m1_us_per_byte = r.number(pt, "m1_us_per_byte", prefix, false);
			v.m2_us_per_byte = r.number(pt, "m2_us_per_byte", prefix, false);
			v.reps = r.count(pt, "reps", prefix, false);
			if (r.ok() && i > 0 && v.bytes <= p.points.back().bytes)
				r.fail(prefix + "bytes", "must be greater than points[" + std::to_string(i - 1) +
								 "].bytes (" + std::to_string(p.points.back().bytes) +
								 "): sizes strictly increase");
			p.points.push_back(v);
		}
	}
	if (!r.ok())
		return r.error();
	return p;
}

Expected<Params> load_params(const std::string &path)
{
	UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return make_error(errno, path + ": cannot open: " + std::strerror(errno));
	std::string text;
	char buf[65536];
	for (;;) {
		const ssize_t got = ::read(fd.get(), buf, sizeof(buf));
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return make_error(errno, path + ": cannot read: " + std::strerror(errno));
		}
		if (got == 0)
			break;
		text.append(buf, static_cast<size_t>(got));
		if (text.size() > kMaxFileBytes)
			return make_error(EFBIG, path + ": larger than " + std::to_string(kMaxFileBytes) +
							 " bytes, not a parameter file");
	}
	return parse_params(text, path);
}

std::string format_params(const Params &p)
{
	nlohmann::ordered_json doc;
	doc["format"] = kParamsFormat;
	if (!p.local.empty())
		doc["local"] = p.local;
	if (!p.peer.empty())
		doc["peer"] = p.peer;
	if (!p.measured_at.empty())
		doc["measured_at"] = p.measured_at;
	doc["latency_us"] = p.latency_us;
	if (p.link_bps)
		doc["link_bps"] = *p.link_bps;
	if (p.rtt)
		doc["rtt"] = {{"mean_us", p.rtt->mean_us}, {"sigma_us", p.rtt->sigma_us}, {"samples", p.rtt->samples}};
	if (p.switch_queue) {
		const auto &q = *p.switch_queue;
		doc["switch_queue"] = {{"delay_empty_us", q.delay_empty_us},
				       {"delay_full_us", q.delay_full_us},
				       {"bytes", q.bytes},
				       {"packets", q.packets},
				       {"mtu", q.mtu}};
	}
	if (p.oneway_s_us)
		doc["oneway"] = {{"S_us", *p.oneway_s_us}};
	if (p.twoway_s_us)
		doc["twoway"] = {{"S_us", *p.twoway_s_us}};
	auto points = nlohmann::ordered_json::array();
	for (const auto &pt : p.points)
		points.push_back({{"bytes", pt.bytes},
				  {"g_us", pt.g_us},
				  {"os_us", pt.os_us},
				  {"or_us", pt.or_us},
				  {"rtt_us", pt.rtt_us},
				  {"m1_us_per_byte", pt.m1_us_per_byte},
				  {"m2_us_per_byte", pt.m2_us_per_byte},
				  {"reps", pt.reps}});
	doc["points"] = std::move(points);
	// NaN and infinities come out as null, which the validation in save_params refuses.
	return doc.dump(2) + "\n";
}

Expected<void> save_params(const std::string &path, const Params &params)
{
	const std::string text = format_params(params);
	if (auto valid = parse_params(text, path); !valid)
		return valid.error();

	std::string temp = path + ".XXXXXX";
	UniqueFd fd(::mkostemp(temp.data(), O_CLOEXEC));
	if (!fd)
		return make_error(errno, path + ": cannot create a temporary file: " + std::strerror(errno));
	auto fail = [&](const char *what) {
		const int err = errno;
		::unlink(temp.c_str());
		return make_error(err, path + ": " + what + ": " + std::strerror(err));
	};
	if (::fchmod(fd.get(), 0644) != 0)
		return fail("cannot set the mode");
	for (size_t done = 0; done < text.size();) {
		const ssize_t put = ::write(fd.get(), text.data() + done, text.size() - done);
		if (put < 0) {
			if (errno == EINTR)
				continue;
			return fail("cannot write");
		}
		done += static_cast<size_t>(put);
	}
	if (::fsync(fd.get()) != 0)
		return fail("cannot sync");
	if (::close(fd.release()) != 0)
		return fail("cannot close");
	if (::rename(temp.c_str(), path.c_str()) != 0)
		return fail("cannot rename into place");
	return {};
}

Expected<PlogpTable> plogp_table(const Params &params)
{
	std::vector<PlogpPoint> points;
	points.reserve(params.points.size());
	for (const auto &p : params.points)
		points.push_back(PlogpPoint{static_cast<double>(p.bytes), p.g_us, p.os_us, p.or_us, p.rtt_us,
					    p.m1_us_per_byte, p.m2_us_per_byte});
	return PlogpTable::make(params.latency_us, std::move(points));
}

Expected<BcastParams> bcast_params(const Params &params, std::string_view source_name)
{
	const std::string source(source_name);
	if (!params.oneway_s_us)
		return make_error(EINVAL, source + ": oneway.S_us: missing (S1, needed by the broadcast model)");
	if (!params.twoway_s_us)
		return make_error(EINVAL, source + ": twoway.S_us: missing (S2, needed by the broadcast model)");
	auto table = plogp_table(params);
	if (!table)
		return make_error(EINVAL, source + ": " + table.error().message);
	return BcastParams{*params.oneway_s_us, *params.twoway_s_us, std::move(*table)};
}

} // namespace gp::models
