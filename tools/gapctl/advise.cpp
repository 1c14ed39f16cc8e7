#include "advise.hpp"

#include <cstdio>

#include "output.hpp"
#include "params_file.hpp"
#include "units.hpp"

namespace gp {
namespace {

constexpr const char *kDefaultsName = "built-in 10 Gbit-class defaults";

Error usage(std::string message)
{
	return make_error(EINVAL, std::move(message));
}

int usage_error(const Invocation &inv, const std::string &message)
{
	std::fprintf(inv.err, "gapctl: %s\nUsage: gapctl %.*s\n", message.c_str(),
		     static_cast<int>(inv.command->usage.size()), inv.command->usage.data());
	return kExitUsage;
}

std::string format_us(double us)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.1f us", us);
	return buf;
}

} // namespace

Expected<AdviseBcastArgs> parse_advise_bcast_args(Args args)
{
	AdviseBcastArgs parsed;
	bool json = false, pretty = false;
	std::vector<std::string_view> words;
	for (std::string_view a : args) {
		if (a == "-j" || a == "-json" || a == "--json")
			json = true;
		else if (a == "-p" || a == "-pretty" || a == "--pretty")
			pretty = true;
		else
			words.push_back(a.starts_with("--") ? a.substr(2) : a);
	}
	if (json)
		parsed.format = pretty ? OutputFormat::PrettyJson : OutputFormat::Json;

	static constexpr Keyword grammar[] = {
		{"nodes", KeywordKind::Value, true}, {"size", KeywordKind::Value, true}, {"params"}};
	auto kw = parse_keywords(words, grammar);
	if (!kw)
		return kw.error();

	const std::string_view nodes = kw->at("nodes");
	const auto p = parse_u64(nodes);
	if (!p || *p < 2 || *p > kAdviseMaxNodes)
		return usage("invalid --nodes \"" + std::string(nodes) + "\" (a node count, 2 .. " +
			     std::to_string(kAdviseMaxNodes) + ")");
	parsed.nodes = *p;

	const std::string_view size = kw->at("size");
	const auto n = parse_size(size);
	if (!n || *n < 1 || *n > kAdviseMaxBytes)
		return usage("invalid --size \"" + std::string(size) +
			     "\" (bytes, 1 .. 1T; k, m, g suffixes are powers of 1024)");
	parsed.bytes = *n;

	if (auto it = kw->find("params"); it != kw->end()) {
		if (it->second.empty())
			return usage("--params: empty file name");
		parsed.params_path = std::string(it->second);
	}
	return parsed;
}

BcastAdvice advise_bcast_with(const models::BcastParams &params, uint64_t nodes, uint64_t bytes,
			      std::optional<std::string> params_path)
{
	BcastAdvice advice;
	advice.nodes = nodes;
	advice.bytes = bytes;
	advice.params_path = std::move(params_path);
	advice.s1_us = params.s1_us;
	advice.s2_us = params.s2_us;
	advice.estimates = models::bcast_estimates(params, nodes, static_cast<double>(bytes));
	if (!advice.estimates.empty())
		advice.best = models::best_bcast(advice.estimates);
	return advice;
}

std::string format_bcast_advice_text(const BcastAdvice &advice)
{
	char line[160];
	std::snprintf(line, sizeof(line), " (S1 %g us, S2 %g us)\n", advice.s1_us, advice.s2_us);
	std::string out = "bcast of " + std::to_string(advice.bytes) + " bytes to " + std::to_string(advice.nodes) +
			  " nodes; parameters: " + advice.params_path.value_or(kDefaultsName) + line;
	std::snprintf(line, sizeof(line), "%-14s %8s %16s\n", "algorithm", "d", "predicted");
	out += line;
	for (const auto &e : advice.estimates) {
		std::snprintf(line, sizeof(line), "%-14s %8llu %16s\n", models::bcast_algorithm_name(e.algorithm),
			      static_cast<unsigned long long>(e.d), format_us(e.time_us).c_str());
		out += line;
	}
	out += "best: " + std::string(models::bcast_algorithm_name(advice.best.algorithm)) +
	       " d=" + std::to_string(advice.best.d) + ", " + format_us(advice.best.time_us) + "\n";
	return out;
}

void write_bcast_advice_json(JsonWriter &json, const BcastAdvice &advice)
{
	auto estimate = [&](const models::BcastEstimate &e) {
		json.begin_object()
			.field("algorithm", models::bcast_algorithm_name(e.algorithm))
			.field("d", e.d)
			.field("time_us", e.time_us)
			.end_object();
	};
	json.begin_object().field("nodes", advice.nodes).field("bytes", advice.bytes);
	json.key("params");
	if (advice.params_path)
		json.value(*advice.params_path);
	else
		json.null();
	json.field("s1_us", advice.s1_us).field("s2_us", advice.s2_us);
	json.key("estimates").begin_array();
	for (const auto &e : advice.estimates)
		estimate(e);
	json.end_array();
	json.key("best");
	estimate(advice.best);
	json.end_object();
}

int advise_bcast(const Invocation &inv, Args args)
{
	auto parsed = parse_advise_bcast_args(args);
	if (!parsed)
		return usage_error(inv, parsed.error().message);

	std::optional<models::BcastParams> params;
	if (parsed->params_path) {
		// A parameter file is input like the arguments: a bad one is a usage error too.
		auto file = models::load_params(*parsed->params_path);
		if (!file) {
			std::fprintf(inv.err, "gapctl: %s\n", file.error().message.c_str());
			return kExitUsage;
		}
		auto from_file = models::bcast_params(*file, *parsed->params_path);
		if (!from_file) {
			std::fprintf(inv.err, "gapctl: %s\n", from_file.error().message.c_str());
			return kExitUsage;
		}
		params.emplace(std::move(*from_file));
	} else {
		params.emplace(models::default_bcast_params());
	}

	const BcastAdvice advice = advise_bcast_with(*params, parsed->nodes, parsed->bytes, parsed->params_path);
	const OutputFormat format = parsed->format.value_or(inv.format);
	std::string text;
	if (format == OutputFormat::Text) {
		text = format_bcast_advice_text(advice);
	} else {
		JsonWriter json;
		write_bcast_advice_json(json, advice);
		text = finish_json(format, json);
	}
	if (std::fputs(text.c_str(), inv.out) < 0 || std::fflush(inv.out) != 0) {
		std::fprintf(inv.err, "gapctl: cannot write output\n");
		return kExitFailure;
	}
	return kExitSuccess;
}

} // namespace gp
