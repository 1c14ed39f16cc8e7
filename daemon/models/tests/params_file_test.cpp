// The parameter file "gappace-params/1" (Documentation/models.md, "Parameter file"): loading,
// validation with the JSON path in every message, and saving.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "params_file.hpp"

namespace gp::models {
namespace {

// The documented example, comments included.
constexpr const char *kExample = R"({
  "format": "gappace-params/1",
  "local": "10.0.0.1",              // our address used for the probe
  "peer": "10.0.0.2",
  "measured_at": "2026-11-22T10:00:00Z",
  "latency_us": 45.0,
  "link_bps": 200000000,
  "rtt": { "mean_us": 90.0, "sigma_us": 12.0, "samples": 1000 },
  "switch_queue": {
    "delay_empty_us": 90.0, "delay_full_us": 2500.0, "bytes": 60000, "packets": 40, "mtu": 1500 },
  "oneway":  { "S_us": 40.0 },
  "twoway":  { "S_us": 55.0 },
  "points": [
    { "bytes": 0,  "g_us": 5.0, "os_us": 2.0, "or_us": 2.0, "rtt_us": 90.0,
      "m1_us_per_byte": 0.0, "m2_us_per_byte": 0.0, "reps": 200 },
    { "bytes": 65536, "g_us": 2700.0, "os_us": 30.0, "or_us": 40.0, "rtt_us": 3000.0,
      "m1_us_per_byte": 0.041, "m2_us_per_byte": 0.043, "reps": 50 }
  ],
  "future_key": [1, 2, 3]
})";

constexpr const char *kMinimal =
	R"({"format": "gappace-params/1", "latency_us": 45, "points": [{"bytes": 0, "g_us": 5}]})";

// The example of models.md (and the probe's schema) loads, and feeds the PlogP table (linear
// interpolation: g(32768) is the mean of g(0) and g(65536)) and the broadcast model (S1, S2).
TEST(ParamsFile, ParsesTheDocumentedExample)
{
	auto p = parse_params(kExample, "params.json");
	ASSERT_TRUE(p) << p.error().message;
	EXPECT_EQ(p->peer, "10.0.0.2");
	EXPECT_DOUBLE_EQ(p->latency_us, 45);
	EXPECT_EQ(p->link_bps, 200000000u);
	ASSERT_TRUE(p->rtt);
	EXPECT_DOUBLE_EQ(p->rtt->sigma_us, 12);
	ASSERT_TRUE(p->switch_queue);
	EXPECT_EQ(p->switch_queue->bytes, 60000u);
	EXPECT_EQ(p->oneway_s_us, 40.0);
	EXPECT_EQ(p->twoway_s_us, 55.0);
	ASSERT_EQ(p->points.size(), 2u);
	EXPECT_EQ(p->points[1].bytes, 65536u);
	EXPECT_DOUBLE_EQ(p->points[1].m2_us_per_byte, 0.043);
	EXPECT_EQ(p->points[1].reps, 50u);

	auto table = plogp_table(*p);
	ASSERT_TRUE(table);
	EXPECT_DOUBLE_EQ(table->gap_us(32768), (5.0 + 2700.0) / 2);
	auto bcast = bcast_params(*p, "params.json");
	ASSERT_TRUE(bcast);
	EXPECT_DOUBLE_EQ(bcast->s1_us, 40);
	EXPECT_DOUBLE_EQ(bcast->s2_us, 55);
}

// Only format, latency_us and points are required; the broadcast model then lacks S1.
TEST(ParamsFile, OptionalPartsMayBeAbsent)
{
	auto p = parse_params(kMinimal, "p.json");
	ASSERT_TRUE(p) << p.error().message;
	EXPECT_FALSE(p->rtt);
	EXPECT_FALSE(p->link_bps);
	auto bcast = bcast_params(*p, "p.json");
	ASSERT_FALSE(bcast);
	EXPECT_EQ(bcast.error().message, "p.json: oneway.S_us: missing (S1, needed by the broadcast model)");
}

struct BadFile {
	const char *text;
	const char *message;
};

// Every refusal names the file and the JSON path.
TEST(ParamsFile, RefusesBadFilesNamingThePath)
{
	const BadFile cases[] = {
		{R"({"format": "gappace-params/2", "latency_us": 1, "points": [{"bytes": 0, "g_us": 1}]})",
		 "params.json: format: must be \"gappace-params/1\", not \"gappace-params/2\""},
		{R"({"latency_us": 1, "points": [{"bytes": 0, "g_us": 1}]})", "params.json: format: missing"},
		{R"({"format": "gappace-params/1", "points": [{"bytes": 0, "g_us": 1}]})",
		 "params.json: latency_us: missing"},
		{R"({"format": "gappace-params/1", "latency_us": 1})", "params.json: points: missing"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": []})",
		 "params.json: points: must hold at least one point"},
		{R"({"format": "gappace-params/1", "latency_us": -1, "points": [{"bytes": 0, "g_us": 1}]})",
		 "params.json: latency_us: must be >= 0"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": [{"bytes": 0, "g_us": 1},
		    {"bytes": 2, "g_us": 1}, {"bytes": 4, "g_us": 1}, {"bytes": 8, "g_us": -3}]})",
		 "params.json: points[3].g_us: must be >= 0"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": [{"bytes": 4, "g_us": 1},
		    {"bytes": 4, "g_us": 2}]})",
		 "params.json: points[1].bytes: must be greater than points[0].bytes (4): sizes strictly increase"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": [{"bytes": 0}]})",
		 "params.json: points[0].g_us: missing"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": [{"bytes": -1, "g_us": 1}]})",
		 "params.json: points[0].bytes: must be >= 0"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": [{"bytes": 1.5, "g_us": 1}]})",
		 "params.json: points[0].bytes: must be a whole number"},
		{R"({"format": "gappace-params/1", "latency_us": "45", "points": [{"bytes": 0, "g_us": 1}]})",
		 "params.json: latency_us: must be a number"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "rtt": {"mean_us": 90},
		    "points": [{"bytes": 0, "g_us": 1}]})",
		 "params.json: rtt.sigma_us: missing"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "rtt": 5, "points": [{"bytes": 0, "g_us": 1}]})",
		 "params.json: rtt: must be an object"},
		{R"({"format": "gappace-params/1", "latency_us": 1, "points": {"bytes": 0}})",
		 "params.json: points: must be an array"},
		{R"([1, 2])", "params.json: must be a JSON object"},
		{R"({"format": "gappace-params/1", "latency_us": 1e999, "points": []})",
		 "params.json: not valid JSON: number overflow parsing '1e999'"},
	};
	for (const auto &c : cases) {
		auto p = parse_params(c.text, "params.json");
		ASSERT_FALSE(p) << c.text;
		EXPECT_EQ(p.error().err, EINVAL);
		EXPECT_EQ(p.error().message, c.message);
	}
	auto syntax = parse_params("{\"format\": ", "params.json");
	ASSERT_FALSE(syntax);
	EXPECT_EQ(syntax.error().message.rfind("params.json: not valid JSON: parse error at line 1, column 12", 0), 0u)
		<< syntax.error().message;
}

class ParamsFileOnDisk : public ::testing::Test {
protected:
	void SetUp() override
	{
		char templ[] = "/tmp/gp-params-test-XXXXXX";
		ASSERT_NE(::mkdtemp(templ), nullptr);
		dir_ = templ;
	}
	void TearDown() override { std::filesystem::remove_all(dir_); }
	std::filesystem::path dir_;
};

// save_params writes what load_params reads back, atomically (temporary file + rename).
TEST_F(ParamsFileOnDisk, SaveThenLoadRoundTrips)
{
	auto original = parse_params(kExample, "example");
	ASSERT_TRUE(original);
	const std::string path = dir_ / "params.json";
	auto saved = save_params(path, *original);
	ASSERT_TRUE(saved) << saved.error().message;

	auto loaded = load_params(path);
	ASSERT_TRUE(loaded) << loaded.error().message;
	EXPECT_EQ(format_params(*loaded), format_params(*original));
	EXPECT_EQ(loaded->points.size(), 2u);
	EXPECT_DOUBLE_EQ(loaded->points[1].m1_us_per_byte, 0.041);
	EXPECT_EQ(loaded->measured_at, "2026-11-22T10:00:00Z");

	struct stat st{};
	ASSERT_EQ(::stat(path.c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0644u);
	// Only the file itself: the temporary was renamed into place.
	EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
}

// A saved file always loads: NaN (written as null) and repeated sizes are refused, nothing written.
TEST_F(ParamsFileOnDisk, SaveRefusesWhatTheLoaderWouldRefuse)
{
	auto p = parse_params(kMinimal, "minimal");
	ASSERT_TRUE(p);
	p->points[0].g_us = std::numeric_limits<double>::quiet_NaN();
	const std::string path = dir_ / "bad.json";
	auto saved = save_params(path, *p);
	ASSERT_FALSE(saved);
	EXPECT_EQ(saved.error().message, path + ": points[0].g_us: must be a number");
	EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 0);

	p->points[0].g_us = 1;
	p->points.push_back(p->points[0]); // same size twice
	EXPECT_FALSE(save_params(path, *p));
}

// Read errors carry errno and the path; validation errors the path as the source name.
TEST_F(ParamsFileOnDisk, LoadNamesTheFile)
{
	const std::string missing = dir_ / "missing.json";
	auto p = load_params(missing);
	ASSERT_FALSE(p);
	EXPECT_EQ(p.error().err, ENOENT);
	EXPECT_EQ(p.error().message, missing + ": cannot open: No such file or directory");

	const std::string bad = dir_ / "bad.json";
	std::ofstream(bad) << R"({"format": "gappace-params/1", "latency_us": 1, "points": []})";
	auto q = load_params(bad);
	ASSERT_FALSE(q);
	EXPECT_EQ(q.error().message, bad + ": points: must hold at least one point");
}

} // namespace
} // namespace gp::models
