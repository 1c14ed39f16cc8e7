// Loads q_gappace.so like tc does (dlopen + dlsym "gappace_qdisc_util") into a program
// that provides the tc helpers the plugin uses: netlink building on top of libmnl, and
// printing that mimics tc's json_print (PRINT_FP output in text mode, keys in JSON mode).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <libmnl/libmnl.h>
#include <linux/gappace.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

// ------------------------------------------------------------------ stand-ins for tc

enum output_type { PRINT_FP = 1, PRINT_JSON = 2, PRINT_ANY = 4 };

bool g_json = false;
std::string g_out;

bool json_context(int type)
{
	return g_json && (type & (PRINT_JSON | PRINT_ANY));
}

bool fp_context(int type)
{
	return !g_json && (type & (PRINT_FP | PRINT_ANY));
}

void append_formatted(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g_out += buf;
}

} // namespace

extern "C" {

int addattr32(nlmsghdr *n, int maxlen, int type, uint32_t data)
{
	return mnl_attr_put_u32_check(n, static_cast<size_t>(maxlen), static_cast<uint16_t>(type), data) ? 0 : -1;
}

int addattr64(nlmsghdr *n, int maxlen, int type, uint64_t data)
{
	return mnl_attr_put_u64_check(n, static_cast<size_t>(maxlen), static_cast<uint16_t>(type), data) ? 0 : -1;
}

rtattr *addattr_nest(nlmsghdr *n, int maxlen, int type)
{
	return reinterpret_cast<rtattr *>(
		mnl_attr_nest_start_check(n, static_cast<size_t>(maxlen), static_cast<uint16_t>(type)));
}

int addattr_nest_end(nlmsghdr *n, rtattr *nest)
{
	mnl_attr_nest_end(n, reinterpret_cast<nlattr *>(nest));
	return static_cast<int>(n->nlmsg_len);
}

int parse_rtattr_flags(rtattr *tb[], int max, rtattr *rta, int len, unsigned short flags)
{
	std::memset(tb, 0, sizeof(rtattr *) * static_cast<size_t>(max + 1));
	for (auto *attr = reinterpret_cast<nlattr *>(rta); mnl_attr_ok(attr, len);) {
		const int type = mnl_attr_get_type(attr);
		if (type <= max && !tb[type])
			tb[type] = reinterpret_cast<rtattr *>(attr);
		len -= static_cast<int>(MNL_ALIGN(attr->nla_len));
		attr = mnl_attr_next(attr);
	}
	(void)flags;
	return 0;
}

void open_json_object(const char *name)
{
	if (g_json)
		g_out += std::string(name) + "{";
}

void close_json_object(void)
{
	if (g_json)
		g_out += "}";
}

void print_nl(void)
{
	if (!g_json)
		g_out += "\n";
}

int print_color_string(int type, int, const char *key, const char *fmt, const char *value)
{
	if (json_context(type))
		g_out += std::string(key) + "=\"" + value + "\";";
	else if (fp_context(type))
		append_formatted(fmt, value);
	return 0;
}

int print_color_u64(int type, int, const char *key, const char *fmt, uint64_t value)
{
	if (json_context(type))
		g_out += std::string(key) + "=" + std::to_string(value) + ";";
	else if (fp_context(type))
		append_formatted(fmt, value);
	return 0;
}

} // extern "C"

namespace {

// The layout the plugin exports (see q_gappace.c).
struct qdisc_util {
	qdisc_util *next;
	const char *id;
	int (*parse_qopt)(qdisc_util *qu, int argc, char **argv, nlmsghdr *n, const char *dev);
	int (*print_qopt)(qdisc_util *qu, FILE *f, rtattr *opt);
	int (*print_xstats)(qdisc_util *qu, FILE *f, rtattr *xstats);
	int (*parse_copt)(qdisc_util *qu, int argc, char **argv, nlmsghdr *n, const char *dev);
	int (*print_copt)(qdisc_util *qu, FILE *f, rtattr *opt);
	void *has_block;
};

class Plugin : public ::testing::Test {
protected:
	void SetUp() override
	{
		handle_ = dlopen(Q_GAPPACE_PATH, RTLD_NOW | RTLD_LOCAL);
		ASSERT_NE(handle_, nullptr) << dlerror();
		util_ = static_cast<qdisc_util *>(dlsym(handle_, "gappace_qdisc_util"));
		ASSERT_NE(util_, nullptr) << dlerror();
		g_out.clear();
		g_json = false;
		nlh_ = mnl_nlmsg_put_header(buffer_.data());
		mnl_nlmsg_put_extra_header(nlh_, sizeof(tcmsg));
	}
	void TearDown() override
	{
		if (handle_)
			dlclose(handle_);
	}

	int parse(std::vector<std::string> words)
	{
		std::vector<char *> argv;
		for (auto &word : words)
			argv.push_back(word.data());
		argv.push_back(nullptr);
		return util_->parse_qopt(util_, static_cast<int>(words.size()), argv.data(), nlh_, "eth0");
	}

	static int collect(const nlattr *attr, void *data)
	{
		static_cast<std::vector<const nlattr *> *>(data)->push_back(attr);
		return MNL_CB_OK;
	}

	// The TCA_OPTIONS attribute the plugin added (the only attribute of the message).
	rtattr *options_attr()
	{
		std::vector<const nlattr *> attrs;
		mnl_attr_parse(nlh_, sizeof(tcmsg), collect, &attrs);
		EXPECT_EQ(attrs.size(), 1u);
		if (attrs.size() != 1)
			return nullptr;
		EXPECT_EQ(mnl_attr_get_type(attrs[0]), TCA_OPTIONS);
		EXPECT_TRUE(attrs[0]->nla_type & NLA_F_NESTED);
		return reinterpret_cast<rtattr *>(const_cast<nlattr *>(attrs[0]));
	}

	// The TCA_GAPPACE_* attributes inside TCA_OPTIONS, by type.
	std::vector<const nlattr *> options()
	{
		std::vector<const nlattr *> found(TCA_GAPPACE_MAX + 1, nullptr);
		const auto *nest = reinterpret_cast<const nlattr *>(options_attr());
		if (!nest)
			return found;
		std::vector<const nlattr *> attrs;
		mnl_attr_parse_nested(nest, collect, &attrs);
		for (const nlattr *attr : attrs)
			found.at(mnl_attr_get_type(attr)) = attr;
		return found;
	}

	void *handle_ = nullptr;
	qdisc_util *util_ = nullptr;
	alignas(8) std::array<char, 4096> buffer_{};
	nlmsghdr *nlh_ = nullptr;
};

TEST_F(Plugin, ExportsTheKind)
{
	EXPECT_STREQ(util_->id, "gappace");
	EXPECT_EQ(util_->parse_copt, nullptr);
	EXPECT_EQ(util_->has_block, nullptr);
}

TEST_F(Plugin, ParsesAllOptions)
{
	ASSERT_EQ(parse({"linkrate", "1gbit", "ifg", "100", "limit", "1000"}), 0);
	auto opts = options();
	ASSERT_TRUE(opts[TCA_GAPPACE_LINKRATE]);
	EXPECT_EQ(mnl_attr_get_payload_len(opts[TCA_GAPPACE_LINKRATE]), 8u);
	EXPECT_EQ(mnl_attr_get_u64(opts[TCA_GAPPACE_LINKRATE]), 1000000000u);
	EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_IFG]), 100u);
	EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_LIMIT]), 1000u);
}

TEST_F(Plugin, LookaheadIsATimeInNanoseconds)
{
	const std::pair<const char *, uint32_t> cases[] = {
		{"200us", 200000}, {"200", 200000}, {"1ms", 1000000}, {"1s", 1000000000}, {"500ns", 500}, {"0", 0},
	};
	for (const auto &[text, ns] : cases) {
		SetUp();
		ASSERT_EQ(parse({"lookahead", text}), 0) << text;
		auto opts = options();
		ASSERT_TRUE(opts[TCA_GAPPACE_LOOKAHEAD]) << text;
		EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_LOOKAHEAD]), ns) << text;
		TearDown();
	}
	SetUp();
	ASSERT_EQ(parse({"lookahead", "2000us"}), 0);
	util_->print_qopt(util_, stdout, options_attr());
	EXPECT_EQ(g_out, "lookahead 2000us ");
}

TEST_F(Plugin, SendsOnlyGivenOptions)
{
	ASSERT_EQ(parse({"ifg", "20"}), 0);
	auto opts = options();
	EXPECT_FALSE(opts[TCA_GAPPACE_LINKRATE]);
	EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_IFG]), 20u);
	EXPECT_FALSE(opts[TCA_GAPPACE_LIMIT]);
}

TEST_F(Plugin, RateUnits)
{
	const std::pair<const char *, uint64_t> cases[] = {
		{"auto", 0},	       {"1000", 1000},		{"2.5gbit", 2500000000},
		{"10mbps", 80000000}, {"1Kibit", 1024},	{"100Mbit", 100000000},
	};
	for (const auto &[text, bits] : cases) {
		SetUp();
		ASSERT_EQ(parse({"linkrate", text}), 0) << text;
		EXPECT_EQ(mnl_attr_get_u64(options()[TCA_GAPPACE_LINKRATE]), bits) << text;
		TearDown();
	}
}

TEST_F(Plugin, RejectsBadInputWithoutTouchingTheMessage)
{
	const uint32_t empty_len = nlh_->nlmsg_len;
	const std::vector<std::vector<std::string>> bad = {
		{"linkrate", "10furlongs"}, {"linkrate", "-1gbit"},	{"linkrate", "gbit"},
		{"ifg", "-1"},		    {"ifg", "12b"},		{"limit", "4294967296"},
		{"bogus", "1"},		    {"ifg"},			{"ifg", "12", "ifg", "13"},
		{"help"},		    {"lookahead", "2s"},	{"lookahead", "1001ms"},
		{"lookahead", "soon"},	    {"lookahead", "-1us"},
	};
	for (const auto &words : bad) {
		EXPECT_EQ(parse(words), -1) << words[0];
		EXPECT_EQ(nlh_->nlmsg_len, empty_len) << words[0];
	}
}

TEST_F(Plugin, PrintsOptionsAsText)
{
	ASSERT_EQ(parse({"linkrate", "1gbit", "ifg", "100", "limit", "1000"}), 0);
	util_->print_qopt(util_, stdout, options_attr());
	EXPECT_EQ(g_out, "linkrate 1Gbit ifg 100 limit 1000p ");
}

TEST_F(Plugin, PrintsAutoLinkrate)
{
	ASSERT_EQ(parse({"linkrate", "auto"}), 0);
	util_->print_qopt(util_, stdout, options_attr());
	EXPECT_EQ(g_out, "linkrate auto ");
}

TEST_F(Plugin, PrintsOptionsAsJsonInBaseUnits)
{
	ASSERT_EQ(parse({"linkrate", "2.5gbit", "limit", "7"}), 0);
	g_json = true;
	util_->print_qopt(util_, stdout, options_attr());
	EXPECT_EQ(g_out, "linkrate=2500000000;limit=7;");
}

// TCA_STATS_APP carrying `len` bytes of xstats.
std::vector<char> xstats_attr(size_t len)
{
	tc_gappace_xstats xstats{};
	xstats.linkrate = 1000000000;
	xstats.data_packets = 10;
	xstats.data_bytes = 15140;
	xstats.gap_frames = 3;
	xstats.rules = 2;
	xstats.ifg = 12;
	xstats.limit = 1000;
	xstats.qlen = 1;
	std::vector<char> attr(MNL_ALIGN(sizeof(nlattr) + len) + 8, 0);
	auto *nla = reinterpret_cast<nlattr *>(attr.data());
	nla->nla_type = 1;
	nla->nla_len = static_cast<uint16_t>(sizeof(nlattr) + len);
	std::memcpy(attr.data() + sizeof(nlattr), &xstats, std::min(len, sizeof(xstats)));
	return attr;
}

TEST_F(Plugin, PrintsXstatsAsText)
{
	auto attr = xstats_attr(sizeof(tc_gappace_xstats));
	util_->print_xstats(util_, stdout, reinterpret_cast<rtattr *>(attr.data()));
	EXPECT_EQ(g_out, "  linkrate 1Gbit rules 2 ifg 12 limit 1000 qlen 1 \n"
			 "  data_packets 10 data_bytes 15140 data_wire_bytes 0 \n"
			 "  gap_frames 3 gap_bytes 0 gap_wire_bytes 0 \n"
			 "  paced_packets 0 gso_segmented 0 drops 0 idle_resyncs 0 gap_alloc_failures 0 \n"
			 "  lookahead_waits 0 ");
}

TEST_F(Plugin, PrintsOnlyTheXstatsAnOlderModuleSent)
{
	auto attr = xstats_attr(2 * sizeof(uint64_t)); // linkrate, data_packets
	g_json = true;
	util_->print_xstats(util_, stdout, reinterpret_cast<rtattr *>(attr.data()));
	EXPECT_EQ(g_out, "xstats{linkrate=1000000000;data_packets=10;}");
}

TEST_F(Plugin, AcceptsLongerXstatsFromANewerModule)
{
	auto attr = xstats_attr(sizeof(tc_gappace_xstats) + 8);
	g_json = true;
	util_->print_xstats(util_, stdout, reinterpret_cast<rtattr *>(attr.data()));
	EXPECT_EQ(g_out, "xstats{linkrate=1000000000;rules=2;ifg=12;limit=1000;qlen=1;data_packets=10;data_bytes=15140;"
			 "data_wire_bytes=0;gap_frames=3;gap_bytes=0;gap_wire_bytes=0;paced_packets=0;"
			 "gso_segmented=0;drops=0;idle_resyncs=0;gap_alloc_failures=0;lookahead_waits=0;}");
}

} // namespace
