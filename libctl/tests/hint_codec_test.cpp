// The hint encoding: what libgapctl writes is what the daemon reads, and the daemon's
// validation refuses what the kernel's policy refuses.
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "hint_codec.hpp"

namespace gp::hint {
namespace {

Peer address_peer(const char *text, int32_t rank)
{
	Peer p;
	p.remote = *parse_host_address(text);
	p.rank = rank;
	return p;
}

Peer tuple_peer(const char *local, const char *remote)
{
	Peer p;
	p.local = *parse_endpoint(local);
	p.remote = *parse_endpoint(remote);
	return p;
}

std::vector<uint8_t> encoded(const Header &h, const std::vector<Peer> &peers)
{
	std::vector<uint8_t> buf(max_encoded_size(peers.size()));
	buf.resize(encode(buf, 0x1234, 7, h, peers));
	return buf;
}

const nlmsghdr *msg(const std::vector<uint8_t> &buf) { return reinterpret_cast<const nlmsghdr *>(buf.data()); }

// Builds a hint by hand, attribute by attribute, to feed the decoder what libgapctl never writes.
struct Raw {
	std::vector<uint8_t> buf = std::vector<uint8_t>(1 << 16);
	nlmsghdr *nlh;
	nlattr *nest;
	Raw()
	{
		nlh = mnl_nlmsg_put_header(buf.data());
		auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
		genl->cmd = GAPPACE_CMD_HINT;
		nest = mnl_attr_nest_start(nlh, GAPPACE_A_HINT);
	}
	const nlmsghdr *done()
	{
		mnl_attr_nest_end(nlh, nest);
		return nlh;
	}
};

TEST(HintCodec, BeginRoundTripsEveryField)
{
	Header h;
	h.event = Event::Begin;
	h.phase_id = 0x1122334455667788ULL;
	h.kind = GAPPACE_HINT_KIND_ALLTOALL;
	h.algorithm = GAPPACE_HINT_ALGORITHM_PAIRWISE;
	h.flags = GAPPACE_HINT_F_VECTOR | GAPPACE_HINT_F_NONBLOCKING | GAPPACE_HINT_F_RENDEZVOUS;
	h.bytes_per_peer = 65536;
	h.comm_size = 16;
	h.rank = 3;
	h.repetitions = 100;
	h.signature = 0xfeedfacecafebeefULL;
	h.quiet_phases = 17;
	h.quiet_ns = 0x123456789aULL;
	std::vector<Peer> peers = {address_peer("10.0.0.2", 1), address_peer("fd00::2", -1),
				   tuple_peer("10.0.0.1:40000", "10.0.0.3:5001"),
				   tuple_peer("[fd00::1]:40001", "[fd00::3]:5002")};
	auto buf = encoded(h, peers);
	EXPECT_EQ(msg(buf)->nlmsg_type, 0x1234);
	EXPECT_EQ(msg(buf)->nlmsg_flags, NLM_F_REQUEST);
	auto hint = decode(msg(buf), SenderStamp::Forbidden);
	ASSERT_TRUE(hint) << hint.error().message;
	EXPECT_EQ(hint->header, h);
	EXPECT_EQ(hint->peers, peers);
	EXPECT_FALSE(hint->sender);
}

// A dual-stack socket's IPv4 connection named by its IPv4-mapped addresses (as another encoder
// may name it) reads as the IPv4 connection the kernel files it under.
TEST(HintCodec, MappedAddressesReadAsIpv4)
{
	Header h;
	h.event = Event::Begin;
	h.phase_id = 1;
	h.kind = GAPPACE_HINT_KIND_ALLTOALL;
	h.bytes_per_peer = 4096;
	Peer mapped;
	mapped.local = make_endpoint(AF_INET6, std::array<uint8_t, 16>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}.data(), 40000);
	mapped.remote = make_endpoint(AF_INET6, std::array<uint8_t, 16>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3}.data(), 5001);
	auto hint = decode(msg(encoded(h, {mapped, address_peer("::ffff:10.0.0.4", 2)})), SenderStamp::Forbidden);
	ASSERT_TRUE(hint) << hint.error().message;
	ASSERT_EQ(hint->peers.size(), 2u);
	EXPECT_EQ(hint->peers[0].local, *parse_endpoint("10.0.0.1:40000"));
	EXPECT_EQ(hint->peers[0].remote, *parse_endpoint("10.0.0.3:5001"));
	EXPECT_EQ(hint->peers[1].remote, *parse_host_address("10.0.0.4"));
}

TEST(HintCodec, EndCarriesDurationOnly)
{
	Header h;
	h.event = Event::End;
	h.phase_id = 42;
	h.duration_ns = 123456789;
	auto hint = decode(msg(encoded(h, {})), SenderStamp::Forbidden);
	ASSERT_TRUE(hint) << hint.error().message;
	EXPECT_EQ(hint->header.event, Event::End);
	EXPECT_EQ(hint->header.phase_id, 42u);
	EXPECT_EQ(hint->header.duration_ns, 123456789u);
	EXPECT_EQ(hint->header.kind, 0u);
}

TEST(HintCodec, AdviceRoundTripsAndRejectsWhatIsNotAdvice)
{
	std::vector<uint8_t> buf(kAdviceMaxSize);
	buf.resize(encode_advice(buf, 9, Advice{0x0123456789abcdefULL, 1500}));
	auto advice = decode_advice(msg(buf));
	ASSERT_TRUE(advice) << advice.error().message;
	EXPECT_EQ(*advice, (Advice{0x0123456789abcdefULL, 1500}));
	EXPECT_FALSE(advice->quiet_summary);
	std::vector<uint8_t> with_summary(kAdviceMaxSize);
	with_summary.resize(encode_advice(with_summary, 9, Advice{7, 20, true}));
	auto summary = decode_advice(msg(with_summary));
	ASSERT_TRUE(summary) << summary.error().message;
	EXPECT_EQ(*summary, (Advice{7, 20, true}));

	// A hint is not advice, and advice is not a hint.
	Header h;
	h.kind = GAPPACE_HINT_KIND_BCAST;
	auto not_advice = decode_advice(msg(encoded(h, {})));
	ASSERT_FALSE(not_advice);
	EXPECT_EQ(not_advice.error().err, EOPNOTSUPP);
	EXPECT_FALSE(decode(msg(buf), SenderStamp::Forbidden));

	// Advice without its quiet time is refused.
	std::vector<uint8_t> raw(256);
	nlmsghdr *nlh = mnl_nlmsg_put_header(raw.data());
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = GAPPACE_CMD_HINT_ADVICE;
	nlattr *nest = mnl_attr_nest_start(nlh, GAPPACE_A_ADVICE);
	mnl_attr_put_u64(nlh, GAPPACE_A_ADVICE_SIGNATURE, 5);
	mnl_attr_nest_end(nlh, nest);
	auto incomplete = decode_advice(nlh);
	ASSERT_FALSE(incomplete);
	EXPECT_EQ(incomplete.error().err, EINVAL);
}

TEST(HintCodec, EncodedSizeStaysWithinTheBound)
{
	std::vector<Peer> peers(GAPPACE_HINT_MAX_PEERS, tuple_peer("[fd00::1]:1", "[fd00::2]:2"));
	for (auto &p : peers)
		p.rank = 7;
	Header h;
	h.kind = 1;
	h.flags = 1;
	h.algorithm = 1;
	h.comm_size = 1;
	h.rank = 1;
	h.repetitions = 1;
	std::vector<uint8_t> buf(max_encoded_size(peers.size()));
	size_t len = encode(buf, 1, 1, h, peers);
	EXPECT_LE(len, buf.size());
	EXPECT_GT(len, buf.size() / 2); // the bound is not absurdly loose
}

TEST(HintCodec, SenderStampRules)
{
	Raw raw;
	mnl_attr_put_u32(raw.nlh, GAPPACE_A_HINT_EVENT, 2);
	mnl_attr_put_u64(raw.nlh, GAPPACE_A_HINT_PHASE_ID, 9);
	mnl_attr_put_u32(raw.nlh, GAPPACE_A_HINT_SENDER_PID, 100);
	mnl_attr_put_u32(raw.nlh, GAPPACE_A_HINT_SENDER_UID, 1000);
	mnl_attr_put_u32(raw.nlh, GAPPACE_A_HINT_SENDER_NETNS, 4026531840u);
	const nlmsghdr *nlh = raw.done();
	auto forbidden = decode(nlh, SenderStamp::Forbidden);
	ASSERT_FALSE(forbidden);
	EXPECT_EQ(forbidden.error().err, EINVAL);
	EXPECT_NE(forbidden.error().message.find("sender stamp"), std::string::npos);
	auto required = decode(nlh, SenderStamp::Required);
	ASSERT_TRUE(required) << required.error().message;
	EXPECT_EQ(*required->sender, (Sender{100, 1000, 4026531840u}));

	Header h;
	h.event = Event::End;
	h.phase_id = 1;
	EXPECT_FALSE(decode(msg(encoded(h, {})), SenderStamp::Required));
}

struct BadCase {
	const char *name;
	void (*build)(nlmsghdr *);
	int err;
	const char *message;
};

void begin_basics(nlmsghdr *nlh)
{
	mnl_attr_put_u32(nlh, GAPPACE_A_HINT_EVENT, 1);
	mnl_attr_put_u64(nlh, GAPPACE_A_HINT_PHASE_ID, 1);
	mnl_attr_put_u32(nlh, GAPPACE_A_HINT_KIND, 1);
}

const uint8_t kV4[4] = {10, 0, 0, 1};
const uint8_t kV6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

class HintCodecRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(HintCodecRejects, WithErrnoAndMessage)
{
	Raw raw;
	GetParam().build(raw.nlh);
	auto hint = decode(raw.done(), SenderStamp::Forbidden);
	ASSERT_FALSE(hint);
	EXPECT_EQ(hint.error().err, GetParam().err);
	EXPECT_NE(hint.error().message.find(GetParam().message), std::string::npos) << hint.error().message;
}

INSTANTIATE_TEST_SUITE_P(
	Cases, HintCodecRejects,
	::testing::Values(
		BadCase{"NoEvent", [](nlmsghdr *n) { mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, 1); }, EINVAL,
			"missing EVENT"},
		BadCase{"BadEvent",
			[](nlmsghdr *n) {
				mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, 3);
				mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, 1);
			},
			ERANGE, "EVENT 3"},
		BadCase{"NoPhase", [](nlmsghdr *n) { mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, 2); }, EINVAL,
			"missing PHASE_ID"},
		BadCase{"BeginWithoutKind",
			[](nlmsghdr *n) {
				mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, 1);
				mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, 1);
			},
			EINVAL, "needs KIND"},
		BadCase{"UnknownKind",
			[](nlmsghdr *n) {
				mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, 1);
				mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, 1);
				mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_MAX + 1);
			},
			ERANGE, "KIND"},
		BadCase{"ShortPhaseId",
			[](nlmsghdr *n) {
				mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, 2);
				mnl_attr_put_u32(n, GAPPACE_A_HINT_PHASE_ID, 1);
			},
			EINVAL, "PHASE_ID has the wrong length"},
		BadCase{"UnknownFlags",
			[](nlmsghdr *n) {
				begin_basics(n);
				mnl_attr_put_u32(n, GAPPACE_A_HINT_FLAGS, 1U << 31);
			},
			EINVAL, "FLAGS"},
		BadCase{"PeerTwoAddresses",
			[](nlmsghdr *n) {
				begin_basics(n);
				nlattr *p = mnl_attr_nest_start(n, GAPPACE_A_HINT_PEER);
				mnl_attr_put(n, GAPPACE_A_PEER_DADDR_IPV4, 4, kV4);
				mnl_attr_put(n, GAPPACE_A_PEER_DADDR_IPV6, 16, kV6);
				mnl_attr_nest_end(n, p);
			},
			EINVAL, "exactly one of DADDR"},
		BadCase{"PeerPartialTuple",
			[](nlmsghdr *n) {
				begin_basics(n);
				nlattr *p = mnl_attr_nest_start(n, GAPPACE_A_HINT_PEER);
				mnl_attr_put(n, GAPPACE_A_PEER_DADDR_IPV4, 4, kV4);
				mnl_attr_put_u16(n, GAPPACE_A_PEER_SPORT, htons(1));
				mnl_attr_nest_end(n, p);
			},
			EINVAL, "SADDR, SPORT and DPORT together"},
		BadCase{"PeerMixedFamilies",
			[](nlmsghdr *n) {
				begin_basics(n);
				nlattr *p = mnl_attr_nest_start(n, GAPPACE_A_HINT_PEER);
				mnl_attr_put(n, GAPPACE_A_PEER_DADDR_IPV4, 4, kV4);
				mnl_attr_put(n, GAPPACE_A_PEER_SADDR_IPV6, 16, kV6);
				mnl_attr_put_u16(n, GAPPACE_A_PEER_SPORT, htons(1));
				mnl_attr_put_u16(n, GAPPACE_A_PEER_DPORT, htons(2));
				mnl_attr_nest_end(n, p);
			},
			EINVAL, "mixes IPv4 and IPv6"},
		BadCase{"PeerShortAddress",
			[](nlmsghdr *n) {
				begin_basics(n);
				nlattr *p = mnl_attr_nest_start(n, GAPPACE_A_HINT_PEER);
				mnl_attr_put(n, GAPPACE_A_PEER_DADDR_IPV6, 4, kV4);
				mnl_attr_nest_end(n, p);
			},
			EINVAL, "must be 16 bytes"},
		BadCase{"TooManyPeers",
			[](nlmsghdr *n) {
				begin_basics(n);
				for (int i = 0; i <= GAPPACE_HINT_MAX_PEERS; ++i) {
					nlattr *p = mnl_attr_nest_start(n, GAPPACE_A_HINT_PEER);
					mnl_attr_put(n, GAPPACE_A_PEER_DADDR_IPV4, 4, kV4);
					mnl_attr_nest_end(n, p);
				}
			},
			E2BIG, "peers"},
		// As the kernel's policy: a quiet summary is both attributes, of at least one phase.
		BadCase{"QuietPhasesWithoutTime",
			[](nlmsghdr *n) {
				begin_basics(n);
				mnl_attr_put_u32(n, GAPPACE_A_HINT_QUIET_PHASES, 3);
			},
			EINVAL, "needs both QUIET_PHASES and QUIET_NS"},
		BadCase{"QuietTimeWithoutPhases",
			[](nlmsghdr *n) {
				begin_basics(n);
				mnl_attr_put_u64(n, GAPPACE_A_HINT_QUIET_NS, 3000);
			},
			EINVAL, "needs both QUIET_PHASES and QUIET_NS"},
		BadCase{"QuietZeroPhases",
			[](nlmsghdr *n) {
				begin_basics(n);
				mnl_attr_put_u32(n, GAPPACE_A_HINT_QUIET_PHASES, 0);
				mnl_attr_put_u64(n, GAPPACE_A_HINT_QUIET_NS, 3000);
			},
			ERANGE, "QUIET_PHASES must be at least 1"}),
	[](const auto &info) { return std::string(info.param.name); });

TEST(HintCodec, RejectsOtherCommandsAndMissingNest)
{
	std::vector<uint8_t> buf(256);
	nlmsghdr *nlh = mnl_nlmsg_put_header(buf.data());
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = GAPPACE_CMD_HINT;
	auto missing = decode(nlh, SenderStamp::Forbidden);
	ASSERT_FALSE(missing);
	EXPECT_NE(missing.error().message.find("missing the HINT"), std::string::npos);
	genl->cmd = GAPPACE_CMD_RULE_NEW;
	auto other = decode(nlh, SenderStamp::Forbidden);
	ASSERT_FALSE(other);
	EXPECT_EQ(other.error().err, EOPNOTSUPP);
}

TEST(HintCodec, Names)
{
	EXPECT_STREQ(kind_name(GAPPACE_HINT_KIND_ALLTOALL), "alltoall");
	EXPECT_EQ(kind_from_name("p2p_burst"), static_cast<uint32_t>(GAPPACE_HINT_KIND_P2P_BURST));
	EXPECT_EQ(kind_from_name("nonsense"), 0u);
	EXPECT_EQ(kind_name(0), nullptr);
	EXPECT_EQ(kind_name(GAPPACE_HINT_KIND_MAX + 1), nullptr);
	for (uint32_t k = 1; k <= GAPPACE_HINT_KIND_MAX; ++k)
		EXPECT_EQ(kind_from_name(kind_name(k)), k);
	EXPECT_EQ(algorithm_from_name("ring"), static_cast<uint32_t>(GAPPACE_HINT_ALGORITHM_RING));
}

} // namespace
} // namespace gp::hint
