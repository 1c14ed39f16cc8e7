#include "probe_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "json.hpp"
#include "units.hpp"

namespace gp::probe {
namespace {

// Loaders refuse negative and non-finite numbers; the measurements never produce them on
// purpose, and a NaN from an empty sample must not make the whole file unreadable.
double sane(double v)
{
	return std::isfinite(v) && v > 0 ? v : 0;
}

uint64_t rounded(double v)
{
	return static_cast<uint64_t>(std::llround(sane(v)));
}

void write_points(JsonWriter &json, const std::vector<SizePoint> &points)
{
	json.key("points").begin_array();
	for (const auto &p : points) {
		json.begin_object()
			.field("bytes", p.bytes)
			.field("g_us", sane(p.g_us))
			.field("os_us", sane(p.os_us))
			.field("or_us", sane(p.or_us))
			.field("rtt_us", sane(p.rtt_us))
			.field("m1_us_per_byte", sane(p.m1_us_per_byte))
			.field("m2_us_per_byte", sane(p.m2_us_per_byte))
			.field("reps", p.reps)
			.field("exchange_us", sane(p.exchange_us))
			.field("exchange_reps", p.exchange_reps)
			.field("trains", p.trains)
			.field("train_length", p.train_length)
			.end_object();
	}
	json.end_array();
}

std::string printf_string(const char *format, auto... args)
{
	char line[256];
	std::snprintf(line, sizeof(line), format, args...);
	return line;
}

} // namespace

std::string params_json(const ProbeResult &r, OutputFormat format)
{
	JsonWriter json;
	json.begin_object()
		.field("format", kParamsFormat)
		.field("local", r.local)
		.field("peer", r.peer)
		.field("measured_at", r.measured_at)
		.field("latency_us", sane(r.latency_us))
		.field("link_bps", rounded(r.link_bps));
	json.key("rtt")
		.begin_object()
		.field("mean_us", sane(r.rtt.mean))
		.field("sigma_us", sane(r.rtt.sigma))
		.field("samples", static_cast<uint64_t>(r.rtt.samples))
		.field("trimmed_samples", static_cast<uint64_t>(r.rtt.used))
		.field("raw_mean_us", sane(r.rtt.raw_mean))
		.field("raw_sigma_us", sane(r.rtt.raw_sigma))
		.field("min_us", sane(r.rtt.min))
		.field("max_us", sane(r.rtt.max))
		.end_object();
	const SwitchQueue &q = r.queue;
	json.key("switch_queue")
		.begin_object()
		.field("delay_empty_us", sane(q.delay_empty_us))
		.field("delay_full_us", sane(q.delay_full_us))
		.field("delay_loaded_mean_us", sane(q.delay_loaded_mean_us))
		.field("app_delay_full_us", sane(q.app_delay_full_us))
		.field("bytes", rounded(q.bytes))
		.field("packets", rounded(q.packets))
		.field("mtu", q.mtu)
		.field("rate_bps", rounded(q.rate_bps))
		.field("rate_source", q.rate_source)
		.field("bulk_goodput_bps", rounded(q.bulk_goodput_bps))
		.field("samples", static_cast<uint64_t>(q.samples))
		.field("retransmitted", static_cast<uint64_t>(q.retransmitted))
		.field("stable", q.stable)
		.end_object();
	json.key("oneway").begin_object().field("S_us", sane(r.s1_us)).end_object();
	json.key("twoway").begin_object().field("S_us", sane(r.s2_us)).end_object();
	write_points(json, r.points);
	json.key("probe")
		.begin_object()
		.field("port", static_cast<uint32_t>(r.port))
		.field("transport", "tcp-nodelay")
		.field("quick", r.quick)
		.field("max_size", r.max_size)
		.field("mss", r.mss)
		.field("mtu", r.mtu)
		.field("overhead_clock", "CLOCK_THREAD_CPUTIME_ID")
		.field("clock_cost_ns", sane(r.cpu_clock_overhead_ns))
		.field("trim", kTrimFraction)
		.field("duration_s", sane(r.duration_s))
		.end_object();
	json.end_object();
	return finish_json(format, json);
}

std::string params_table(const ProbeResult &r, const std::string &written_to)
{
	std::string out;
	out += "probe " + r.local + " -> " + r.peer + " (TCP, nodelay) at " + r.measured_at +
	       printf_string(", %.1f s", r.duration_s) + (r.quick ? ", quick" : "") + "\n";
	out += printf_string("L %.1f us   S1 %.1f us   S2 %.1f us   RTT %.1f us, sigma %.1f us (%zu samples, 10%% trimmed)\n",
			     r.latency_us, r.s1_us, r.s2_us, r.rtt.mean, r.rtt.sigma, r.rtt.samples);
	if (!r.points.empty() && r.points.front().rtt_us / 2 <= r.points.front().g_us)
		out += "  (L = rtt(0)/2 - g(0) is below 0, written as 0: a small message's time is all per-message\n"
		       "   cost of the hosts, as on veth paths between namespaces)\n";
	out += "link " + format_rate(rounded(r.link_bps)) + " (from the gap of " + std::to_string(r.points.back().bytes) +
	       " B messages, as frames of MTU " + std::to_string(r.mtu) + " + 14)\n";
	const SwitchQueue &q = r.queue;
	if (q.rate_source != "none")
		out += printf_string("switch queue %.0f bytes = %.1f packets: delay %.1f us idle, %.1f us full, at ",
				     q.bytes, q.packets, q.delay_empty_us, q.delay_full_us) +
		       format_rate(rounded(q.rate_bps)) + (q.rate_source == "given" ? " (given)" : " (bulk stream)") +
		       (q.stable ? "" : ", delay did not settle") + "\n";
	out += printf_string("%10s %10s %9s %9s %11s %11s %10s %10s %6s\n", "bytes", "g_us", "os_us", "or_us", "rtt_us",
			     "exchange_us", "m1_us/B", "m2_us/B", "reps");
	for (const auto &p : r.points)
		out += printf_string("%10llu %10.2f %9.2f %9.2f %11.1f %11.1f %10.5f %10.5f %6u\n",
				     static_cast<unsigned long long>(p.bytes), p.g_us, p.os_us, p.or_us, p.rtt_us,
				     p.exchange_us, p.m1_us_per_byte, p.m2_us_per_byte, p.reps);
	if (!written_to.empty())
		out += "wrote " + written_to + "\n";
	return out;
}

Expected<void> write_file_atomically(const std::string &path, const std::string &content)
{
	const size_t slash = path.rfind('/');
	const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
	const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
	if (base.empty())
		return make_error(EISDIR, path + ": not a file name");
	std::string tmp = dir + "/." + base + ".XXXXXX";
	std::vector<char> name(tmp.begin(), tmp.end());
	name.push_back('\0');
	const int fd = ::mkstemp(name.data());
	if (fd < 0)
		return make_error(errno, path + ": cannot create a temporary file in " + dir + ": " + std::strerror(errno));
	tmp.assign(name.data());
	auto fail = [&](const std::string &what) {
		const int err = errno;
		::close(fd);
		::unlink(tmp.c_str());
		return make_error(err, path + ": " + what + ": " + std::strerror(err));
	};
	// mkstemp makes 0600; a parameter file is for every reader of the machine.
	if (::fchmod(fd, 0644) < 0)
		return fail("chmod");
	size_t done = 0;
	while (done < content.size()) {
		const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail("write");
		done += static_cast<size_t>(n);
	}
	if (::fsync(fd) < 0)
		return fail("fsync");
	if (::close(fd) < 0) {
		const int err = errno;
		::unlink(tmp.c_str());
		return make_error(err, path + ": close: " + std::strerror(err));
	}
	if (::rename(tmp.c_str(), path.c_str()) < 0) {
		const int err = errno;
		::unlink(tmp.c_str());
		return make_error(err, path + ": rename: " + std::strerror(err));
	}
	return {};
}

} // namespace gp::probe
