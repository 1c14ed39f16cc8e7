// Command-line grammar of gapctl: iproute2-style "keyword value" arguments, parsed into
// typed structs before anything touches the kernel. Failures here are usage errors.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "expected.hpp"
#include "messages.hpp"
#include "output.hpp"
#include "prefix.hpp"

namespace gp {

using Args = std::span<const std::string_view>;

enum class KeywordKind { Value, Flag };

struct Keyword {
	std::string_view name;
	KeywordKind kind = KeywordKind::Value;
	bool required = false;
};

// keyword -> its value ("" for flags)
using KeywordValues = std::map<std::string_view, std::string_view>;

// Checks the arguments against a grammar: every word must be a known keyword, given at
// most once, followed by a value unless it is a flag; required keywords must be present.
Expected<KeywordValues> parse_keywords(Args args, std::span<const Keyword> grammar);

// qdisc attach / qdisc change
struct QdiscSetArgs {
	std::string dev;
	QdiscOptions options;
};
Expected<QdiscSetArgs> parse_qdisc_attach_args(Args args);
Expected<QdiscSetArgs> parse_qdisc_change_args(Args args); // needs at least one option

// qdisc detach: dev DEV
struct DeviceArgs {
	std::string dev;
};
Expected<DeviceArgs> parse_device_args(Args args);

// show commands: [dev DEV]
struct DeviceFilterArgs {
	std::optional<std::string> dev;
};
Expected<DeviceFilterArgs> parse_device_filter_args(Args args);

// pace add / replace / del
struct PaceRuleArgs {
	std::string dev;
	Prefix dst;
	std::optional<uint64_t> rate; // absent for del
	std::optional<uint32_t> group; // add / replace: share the schedule of this group's rules
	bool replace = false;
};
Expected<PaceRuleArgs> parse_pace_add_args(Args args);
Expected<PaceRuleArgs> parse_pace_replace_args(Args args);
Expected<PaceRuleArgs> parse_pace_del_args(Args args);

// rto set { SADDR:SPORT DADDR:DPORT | peer ADDR } TIME [delack TIME] [ttl TIME]
// TIME is microseconds unless it has a unit (ns, us, ms, s). Only junk, 0 and values beyond
// u32 are refused here: the kernel knows HZ and checks the range.
struct RtoSetArgs {
	RtoTarget target;
	RtoSettings settings;
};
Expected<RtoSetArgs> parse_rto_set_args(Args args);

// rto clear { SADDR:SPORT DADDR:DPORT | peer ADDR }
struct RtoClearArgs {
	RtoTarget target;
};
Expected<RtoClearArgs> parse_rto_clear_args(Args args);

// rto show (no arguments)
struct NoArgs {};
Expected<NoArgs> parse_no_args(Args args);

// Options before the object: -j[son], -p[retty], -h[elp].
struct GlobalOptions {
	OutputFormat format = OutputFormat::Text;
	bool help = false;
};
struct CommandLine {
	GlobalOptions options;
	std::vector<std::string_view> words; // OBJECT VERB ARGS...
};
Expected<CommandLine> parse_command_line(std::span<const char *const> argv);

} // namespace gp
