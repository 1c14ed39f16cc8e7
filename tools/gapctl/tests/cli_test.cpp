#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"

namespace gp {
namespace {

using Words = std::vector<std::string_view>;

// ------------------------------------------------------------------ keyword grammar

TEST(ParseKeywords, AcceptsValuesAndFlags)
{
	const std::vector<Keyword> grammar{{"dev", KeywordKind::Value, true}, {"replace", KeywordKind::Flag}};
	const Words args{"replace", "dev", "eth0"};
	auto values = parse_keywords(args, grammar);
	ASSERT_TRUE(values) << values.error().message;
	EXPECT_EQ(values->size(), 2u);
	EXPECT_EQ(values->at("dev"), "eth0");
	EXPECT_EQ(values->at("replace"), "");
}

TEST(ParseKeywords, RejectsUnknownKeyword)
{
	const std::vector<Keyword> grammar{{"dev"}};
	const Words args{"dev", "eth0", "speed", "1"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "unknown keyword \"speed\"");
	EXPECT_EQ(values.error().err, EINVAL);
}

TEST(ParseKeywords, RejectsMissingValue)
{
	const std::vector<Keyword> grammar{{"dev"}};
	const Words args{"dev"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "missing value after \"dev\"");
}

TEST(ParseKeywords, RejectsDuplicateKeyword)
{
	const std::vector<Keyword> grammar{{"dev"}};
	const Words args{"dev", "eth0", "dev", "eth1"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "duplicate keyword \"dev\"");
}

TEST(ParseKeywords, RejectsMissingRequiredKeyword)
{
	const std::vector<Keyword> grammar{{"dev", KeywordKind::Value, true}, {"limit"}};
	const Words args{"limit", "5"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "missing \"dev\"");
}

// ------------------------------------------------------------------ qdisc

TEST(QdiscArgs, AttachWithAllOptions)
{
	const Words args{"dev", "eth0", "linkrate", "1gbit", "ifg", "100", "limit", "1000"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->dev, "eth0");
	EXPECT_EQ(parsed->options.linkrate, 1000000000u);
	EXPECT_EQ(parsed->options.ifg, 100u);
	EXPECT_EQ(parsed->options.limit, 1000u);
}

TEST(QdiscArgs, AttachWithOnlyDeviceSendsNoOptions)
{
	const Words args{"dev", "eth0"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_TRUE(parsed->options.empty());
}

TEST(QdiscArgs, LinkrateAutoIsZero)
{
	const Words args{"dev", "eth0", "linkrate", "auto"};
	auto parsed = parse_qdisc_change_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_EQ(parsed->options.linkrate, 0u);
	EXPECT_FALSE(parsed->options.ifg);
}

TEST(QdiscArgs, FractionalRateWithUnits)
{
	const Words args{"dev", "eth0", "linkrate", "2.5gbit"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_EQ(parsed->options.linkrate, 2500000000u);
}

TEST(QdiscArgs, ChangeNeedsSomethingToChange)
{
	const Words args{"dev", "eth0"};
	auto parsed = parse_qdisc_change_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "nothing to change: give linkrate, ifg or limit");
}

TEST(QdiscArgs, RejectsBadLinkrate)
{
	const Words args{"dev", "eth0", "linkrate", "fast"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid linkrate \"fast\" (a rate: e.g. 100mbit, 1gbit, 2.5gbit)");
}

TEST(QdiscArgs, RejectsIfgBeyondU32)
{
	const Words args{"dev", "eth0", "ifg", "4294967296"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid ifg \"4294967296\" (a number up to 4294967295)");
}

TEST(QdiscArgs, RejectsSizeWithSuffix)
{
	const Words args{"dev", "eth0", "limit", "10k"};
	EXPECT_FALSE(parse_qdisc_attach_args(args));
}

TEST(QdiscArgs, DetachNeedsDevice)
{
	const Words args{};
	auto parsed = parse_device_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "missing \"dev\"");
}

TEST(QdiscArgs, ShowDeviceIsOptional)
{
	const Words none{};
	auto all = parse_device_filter_args(none);
	ASSERT_TRUE(all);
	EXPECT_FALSE(all->dev);
	const Words one{"dev", "veth0"};
	auto filtered = parse_device_filter_args(one);
	ASSERT_TRUE(filtered);
	EXPECT_EQ(filtered->dev, "veth0");
}

// ------------------------------------------------------------------ pace

TEST(PaceArgs, AddIPv4HostDefaultsToFullLength)
{
	const Words args{"dev", "eth0", "dst", "10.0.1.1", "rate", "100mbit"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->dev, "eth0");
	EXPECT_EQ(parsed->dst.family, AF_INET);
	EXPECT_EQ(parsed->dst.length, 32);
	EXPECT_EQ(parsed->dst.address[0], 10);
	EXPECT_EQ(parsed->dst.address[3], 1);
	EXPECT_EQ(parsed->rate, 100000000u);
	EXPECT_FALSE(parsed->replace);
}

TEST(PaceArgs, AddWithReplaceFlag)
{
	const Words args{"dev", "eth0", "dst", "10.0.1.0/24", "rate", "1mbit", "replace"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_TRUE(parsed->replace);
	EXPECT_EQ(parsed->dst.length, 24);
}

TEST(PaceArgs, ReplaceCommandImpliesReplace)
{
	const Words args{"dev", "eth0", "dst", "10.0.1.0/24", "rate", "1mbit"};
	auto parsed = parse_pace_replace_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_TRUE(parsed->replace);
}

TEST(PaceArgs, IPv6Prefix)
{
	const Words args{"dev", "eth0", "dst", "2001:db8::/32", "rate", "10gbit"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->dst.family, AF_INET6);
	EXPECT_EQ(parsed->dst.length, 32);
	EXPECT_EQ(parsed->dst.address[0], 0x20);
	EXPECT_EQ(parsed->dst.address[1], 0x01);
	EXPECT_EQ(parsed->dst.address[2], 0x0d);
	EXPECT_EQ(parsed->dst.address[3], 0xb8);
	EXPECT_EQ(parsed->rate, 10000000000u);
	EXPECT_EQ(format_prefix(parsed->dst), "2001:db8::/32");
}

TEST(PaceArgs, IPv6HostDefaultsTo128)
{
	auto prefix = parse_prefix("fe80::1");
	ASSERT_TRUE(prefix);
	EXPECT_EQ(prefix->length, 128);
	EXPECT_EQ(format_prefix(*prefix), "fe80::1/128");
}

TEST(PaceArgs, RejectsBadRate)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1", "rate", "10 furlongs"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid rate \"10 furlongs\" (a rate: e.g. 100mbit, 1gbit, 2.5gbit)");
}

TEST(PaceArgs, RejectsPrefixLengthBeyondAddress)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1/33", "rate", "1mbit"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid prefix \"10.0.0.1/33\": prefix length must be 0..32");
}

TEST(PaceArgs, RejectsIPv6PrefixLengthBeyondAddress)
{
	auto prefix = parse_prefix("2001:db8::/129");
	ASSERT_FALSE(prefix);
	EXPECT_EQ(prefix.error().message, "invalid prefix \"2001:db8::/129\": prefix length must be 0..128");
}

TEST(PaceArgs, RejectsHostBitsBeyondLength)
{
	auto prefix = parse_prefix("10.0.1.1/24");
	ASSERT_FALSE(prefix);
	EXPECT_EQ(prefix.error().message, "invalid prefix \"10.0.1.1/24\": host bits set (did you mean 10.0.1.0/24?)");
}

TEST(PaceArgs, RejectsGarbageAddressAndLength)
{
	EXPECT_FALSE(parse_prefix("10.0.0.256"));
	EXPECT_FALSE(parse_prefix("10.0.0.0/"));
	EXPECT_FALSE(parse_prefix("10.0.0.0/-1"));
	EXPECT_FALSE(parse_prefix("eth0"));
	auto bad = parse_prefix("example.com");
	ASSERT_FALSE(bad);
	EXPECT_EQ(bad.error().message, "invalid prefix \"example.com\": not an IPv4 or IPv6 address");
}

TEST(PaceArgs, DefaultRouteIsAValidPrefix)
{
	auto prefix = parse_prefix("0.0.0.0/0");
	ASSERT_TRUE(prefix);
	EXPECT_EQ(prefix->length, 0);
}

TEST(PaceArgs, DelTakesNoRate)
{
	const Words ok{"dev", "eth0", "dst", "10.0.0.1"};
	auto parsed = parse_pace_del_args(ok);
	ASSERT_TRUE(parsed);
	EXPECT_FALSE(parsed->rate);
	const Words with_rate{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit"};
	auto rejected = parse_pace_del_args(with_rate);
	ASSERT_FALSE(rejected);
	EXPECT_EQ(rejected.error().message, "unknown keyword \"rate\"");
}

TEST(PaceArgs, ReplaceCommandRejectsReplaceFlag)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit", "replace"};
	EXPECT_FALSE(parse_pace_replace_args(args));
}

TEST(PaceArgs, AddNeedsRate)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "missing \"rate\"");
}

// ------------------------------------------------------------------ global options

TEST(CommandLine, JsonAndPretty)
{
	const char *argv[] = {"gapctl", "-j", "-p", "pace", "show"};
	auto line = parse_command_line(argv);
	ASSERT_TRUE(line);
	EXPECT_EQ(line->options.format, OutputFormat::PrettyJson);
	ASSERT_EQ(line->words.size(), 2u);
	EXPECT_EQ(line->words[0], "pace");
	EXPECT_EQ(line->words[1], "show");
}

TEST(CommandLine, PrettyAloneIsText)
{
	const char *argv[] = {"gapctl", "-p", "stats"};
	auto line = parse_command_line(argv);
	ASSERT_TRUE(line);
	EXPECT_EQ(line->options.format, OutputFormat::Text);
}

TEST(CommandLine, UnknownOption)
{
	const char *argv[] = {"gapctl", "-x", "stats"};
	auto line = parse_command_line(argv);
	ASSERT_FALSE(line);
	EXPECT_EQ(line.error().message, "unknown option \"-x\"");
}

// ------------------------------------------------------------------ dispatch (no kernel needed)

struct Captured {
	int status;
	std::string out;
	std::string err;
};

std::string read_all(FILE *f)
{
	std::fflush(f);
	std::rewind(f);
	std::string text;
	char chunk[512];
	size_t n;
	while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
		text.append(chunk, n);
	std::fclose(f);
	return text;
}

Captured run_words(Words words, GlobalOptions options = {})
{
	FILE *out = std::tmpfile();
	FILE *err = std::tmpfile();
	const int status = dispatch(options, words, out, err);
	return {status, read_all(out), read_all(err)};
}

TEST(Dispatch, UsageErrorPrintsThatCommandsUsageAndExits2)
{
	auto result = run_words({"pace", "add", "dev", "eth0", "dst", "10.0.0.1/33", "rate", "1mbit"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.out, "");
	EXPECT_EQ(result.err, "gapctl: invalid prefix \"10.0.0.1/33\": prefix length must be 0..32\n"
			      "Usage: gapctl pace add dev DEV dst PREFIX rate RATE [replace]\n");
}

TEST(Dispatch, UnknownObject)
{
	auto result = run_words({"route", "show"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.err.rfind("gapctl: unknown object \"route\"\nUsage: gapctl", 0), 0u) << result.err;
}

TEST(Dispatch, UnknownVerb)
{
	auto result = run_words({"qdisc", "frobnicate"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.err.rfind("gapctl: unknown command \"frobnicate\" for qdisc\n", 0), 0u) << result.err;
}

TEST(Dispatch, NoArgumentsIsAUsageError)
{
	auto result = run_words({});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_NE(result.err.find("Usage: gapctl"), std::string::npos);
}

TEST(Dispatch, HelpGoesToStdout)
{
	auto all = run_words({"help"});
	EXPECT_EQ(all.status, kExitSuccess);
	EXPECT_NE(all.out.find("gapctl stats [dev DEV]"), std::string::npos);
	EXPECT_NE(all.out.find("gapctl qdisc detach dev DEV"), std::string::npos);

	auto object = run_words({"pace", "help"});
	EXPECT_EQ(object.status, kExitSuccess);
	EXPECT_EQ(object.out, "Usage: gapctl pace add dev DEV dst PREFIX rate RATE [replace]\n"
			      "       gapctl pace replace dev DEV dst PREFIX rate RATE\n"
			      "       gapctl pace del dev DEV dst PREFIX\n"
			      "       gapctl pace show [dev DEV]\n");

	auto verb = run_words({"qdisc", "detach", "help"});
	EXPECT_EQ(verb.status, kExitSuccess);
	EXPECT_EQ(verb.out, "Usage: gapctl qdisc detach dev DEV\n");
}

TEST(Dispatch, UnknownDeviceFailsLikeIp)
{
	auto result = run_words({"qdisc", "attach", "dev", "gp-no-such-dev"});
	EXPECT_EQ(result.status, kExitFailure);
	EXPECT_EQ(result.err, "gapctl: Cannot find device \"gp-no-such-dev\"\n");
}

TEST(Dispatch, EveryTableEntryHasAHandlerAndItsObjectAndVerbInTheUsage)
{
	for (const auto &command : kCommands) {
		EXPECT_NE(command.handler, nullptr);
		EXPECT_EQ(command.usage.rfind(std::string(command.object) + " " + std::string(command.verb), 0), 0u)
			<< command.usage;
	}
}

} // namespace
} // namespace gp
