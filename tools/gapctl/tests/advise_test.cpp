// `gapctl advise bcast`: argument parsing, output, and the broadcast models behind it
// (Yamada et al. cost models, daemon/models/bcast_model.hpp; Documentation/models.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "advise.hpp"
#include "commands.hpp"

namespace gp {
namespace {

using Words = std::vector<std::string_view>;

struct Captured {
	int status;
	std::string out, err;
};

std::string read_all(FILE *f)
{
	std::string text;
	std::rewind(f);
	char buf[4096];
	size_t got;
	while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0)
		text.append(buf, got);
	std::fclose(f);
	return text;
}

Captured run(Words words, GlobalOptions options = {})
{
	FILE *out = std::tmpfile();
	FILE *err = std::tmpfile();
	const int status = dispatch(options, words, out, err);
	return {status, read_all(out), read_all(err)};
}

// ------------------------------------------------------------------ parsing

// --nodes/--size/--params, like `hint` also without dashes; -j/-p after the command too.
TEST(AdviseArgs, AcceptsDashedAndPlainKeywords)
{
	const Words dashed{"--nodes", "64", "--size", "1m", "--params", "p.json", "-j"};
	auto a = parse_advise_bcast_args(dashed);
	ASSERT_TRUE(a) << a.error().message;
	EXPECT_EQ(a->nodes, 64u);
	EXPECT_EQ(a->bytes, 1u << 20);
	EXPECT_EQ(a->params_path, "p.json");
	EXPECT_EQ(a->format, OutputFormat::Json);

	const Words plain{"size", "4096", "nodes", "8", "-j", "-p"};
	auto b = parse_advise_bcast_args(plain);
	ASSERT_TRUE(b) << b.error().message;
	EXPECT_EQ(b->bytes, 4096u);
	EXPECT_FALSE(b->params_path);
	EXPECT_EQ(b->format, OutputFormat::PrettyJson);
}

// P >= 2 nodes, 1 byte .. 1 TiB, known keywords only: each refusal says what is wrong.
TEST(AdviseArgs, RefusesBadInput)
{
	const std::vector<std::pair<Words, std::string>> cases{
		{{"--size", "1m"}, "missing \"nodes\""},
		{{"--nodes", "8"}, "missing \"size\""},
		{{"--nodes", "1", "--size", "1m"}, "invalid --nodes \"1\" (a node count, 2 .. 1048576)"},
		{{"--nodes", "eight", "--size", "1m"}, "invalid --nodes \"eight\" (a node count, 2 .. 1048576)"},
		{{"--nodes", "8", "--size", "0"},
		 "invalid --size \"0\" (bytes, 1 .. 1T; k, m, g suffixes are powers of 1024)"},
		{{"--nodes", "8", "--size", "lots"},
		 "invalid --size \"lots\" (bytes, 1 .. 1T; k, m, g suffixes are powers of 1024)"},
		{{"--nodes", "8", "--size", "1m", "--root", "0"}, "unknown keyword \"root\""},
		{{"--nodes", "8", "--size", "1m", "--params"}, "missing value after \"params\""},
	};
	for (const auto &[words, message] : cases) {
		auto a = parse_advise_bcast_args(words);
		ASSERT_FALSE(a) << message;
		EXPECT_EQ(a.error().message, message);
	}
}

// ------------------------------------------------------------------ the command

// The text lists binomial, hybrid d = 2 .. p/2 and scatter+ring, and names the model's choice
// (best_bcast over bcast_estimates with the built-in 10 Gbit-class parameters).
TEST(AdviseCommand, PrintsEveryAlgorithmAndTheBestD)
{
	auto r = run({"advise", "bcast", "--nodes", "64", "--size", "1m"});
	ASSERT_EQ(r.status, kExitSuccess) << r.err;
	EXPECT_EQ(r.err, "");
	const auto params = models::default_bcast_params();
	const auto estimates = models::bcast_estimates(params, 64, 1 << 20);
	const auto best = models::best_bcast(estimates);
	EXPECT_EQ(r.out.rfind("bcast of 1048576 bytes to 64 nodes; parameters: built-in 10 Gbit-class defaults "
			      "(S1 1.5 us, S2 2 us)\n",
			      0),
		  0u)
		<< r.out;
	for (const char *name : {"binomial", "hybrid", "scatter+ring"})
		EXPECT_NE(r.out.find(name), std::string::npos) << name;
	char best_line[96];
	std::snprintf(best_line, sizeof(best_line), "best: %s d=%llu, %.1f us\n",
		      models::bcast_algorithm_name(best.algorithm), static_cast<unsigned long long>(best.d),
		      best.time_us);
	EXPECT_NE(r.out.find(best_line), std::string::npos) << r.out;
	// One line per candidate: header, title, 7 estimates (d = 1, 2 .. 32, 64), best.
	EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 10);
}

// JSON with -j before the object or after the command; the best is the fastest or, within
// the 1% tie tolerance of best_bcast, fewer groups, and never scatter+ring (models.md).
TEST(AdviseCommand, JsonAfterTheCommandOrBefore)
{
	for (auto [words, options] : {std::pair{Words{"advise", "bcast", "--nodes", "16", "--size", "64k", "-j"},
						  GlobalOptions{}},
				      std::pair{Words{"advise", "bcast", "--nodes", "16", "--size", "64k"},
						GlobalOptions{OutputFormat::Json, false}}}) {
		auto r = run(words, options);
		ASSERT_EQ(r.status, kExitSuccess) << r.err;
		const auto doc = nlohmann::json::parse(r.out);
		EXPECT_EQ(doc["nodes"], 16);
		EXPECT_EQ(doc["bytes"], 65536);
		EXPECT_TRUE(doc["params"].is_null());
		ASSERT_EQ(doc["estimates"].size(), 5u); // binomial, d = 2, 4, 8, scatter+ring
		double fastest = 1e300;
		for (const auto &e : doc["estimates"])
			fastest = std::min(fastest, e["time_us"].get<double>());
		// The best is the fastest, or the fewest groups within 1% of it.
		EXPECT_LE(doc["best"]["time_us"].get<double>(), fastest * 1.01);
		EXPECT_NE(doc["best"]["algorithm"], "scatter+ring");
	}
}

class AdviseWithParams : public ::testing::Test {
protected:
	void SetUp() override
	{
		char templ[] = "/tmp/gp-advise-test-XXXXXX";
		ASSERT_NE(::mkdtemp(templ), nullptr);
		dir_ = templ;
	}
	void TearDown() override { std::filesystem::remove_all(dir_); }
	std::string write(const char *name, const std::string &text)
	{
		const std::string path = dir_ / name;
		std::ofstream(path) << text;
		return path;
	}
	std::filesystem::path dir_;
};

// A slow network (S1 = 40 us, S2 = 55 us, ~0.04 us/byte: the parameter file's example) changes
// the prediction: the file's values are used, not the defaults.
TEST_F(AdviseWithParams, UsesTheFile)
{
	const std::string path = write("params.json", R"({
		"format": "gappace-params/1", "latency_us": 45,
		"oneway": {"S_us": 40}, "twoway": {"S_us": 55},
		"points": [{"bytes": 0, "g_us": 5},
			   {"bytes": 65536, "g_us": 2700, "m1_us_per_byte": 0.041, "m2_us_per_byte": 0.043}]})");
	auto r = run({"advise", "bcast", "--nodes", "8", "--size", "64k", "--params", path, "-j"});
	ASSERT_EQ(r.status, kExitSuccess) << r.err;
	const auto doc = nlohmann::json::parse(r.out);
	EXPECT_EQ(doc["params"], path);
	EXPECT_EQ(doc["s1_us"], 40.0);
	// Binomial on 8 nodes: 3 (S1 + n M1).
	EXPECT_NEAR(doc["estimates"][0]["time_us"].get<double>(), 3 * (40 + 65536 * 0.041), 1e-3);
}

// A parameter file is input: unreadable, invalid, or without S1/S2 exits 2 with the loader's message.
TEST_F(AdviseWithParams, BadFilesAreUsageErrors)
{
	const std::string no_startup = write("no-s.json", R"({"format": "gappace-params/1", "latency_us": 45,
		"points": [{"bytes": 0, "g_us": 5}]})");
	auto r = run({"advise", "bcast", "--nodes", "8", "--size", "64k", "--params", no_startup});
	EXPECT_EQ(r.status, kExitUsage);
	EXPECT_EQ(r.out, "");
	EXPECT_EQ(r.err, "gapctl: " + no_startup + ": oneway.S_us: missing (S1, needed by the broadcast model)\n");

	const std::string broken = write("broken.json", R"({"format": "gappace-params/1", "latency_us": -4,
		"points": [{"bytes": 0, "g_us": 5}]})");
	r = run({"advise", "bcast", "--nodes", "8", "--size", "64k", "--params", broken});
	EXPECT_EQ(r.status, kExitUsage);
	EXPECT_EQ(r.err, "gapctl: " + broken + ": latency_us: must be >= 0\n");

	const std::string missing = (dir_ / "missing.json").string();
	r = run({"advise", "bcast", "--nodes", "8", "--size", "64k", "--params", missing});
	EXPECT_EQ(r.status, kExitUsage);
	EXPECT_EQ(r.err, "gapctl: " + missing + ": cannot open: No such file or directory\n");
}

// Bad arguments: message, the command's usage, exit 2, nothing on stdout.
TEST(AdviseCommand, BadArgumentsExit2WithUsage)
{
	auto r = run({"advise", "bcast", "--nodes", "1", "--size", "1m"});
	EXPECT_EQ(r.status, kExitUsage);
	EXPECT_EQ(r.out, "");
	EXPECT_EQ(r.err, "gapctl: invalid --nodes \"1\" (a node count, 2 .. 1048576)\n"
			 "Usage: gapctl advise bcast --nodes P --size N [--params FILE] [-j]\n");
	auto unknown = run({"advise", "alltoall"});
	EXPECT_EQ(unknown.status, kExitUsage);
	EXPECT_NE(unknown.err.find("unknown command \"alltoall\" for advise"), std::string::npos) << unknown.err;
}

} // namespace
} // namespace gp
