// gp-nlprobe: bad-input probe of the gappace kernel interfaces.
//
// Out-of-range values are refused by the kernel's policy checks with ERANGE, malformed
// or missing attributes with EINVAL.
//
// Sends requests that must be refused - malformed attributes, out-of-range values,
// unknown devices, missing permissions - over generic netlink (the gappace family)
// and rtnetlink (qdisc options), and checks that each refusal has the expected errno
// AND an extack message. A refusal without a message is a failure: every error of
// ours must say what was wrong.
//
//   gp-nlprobe [-j] --dev DEV --plain-dev DEV
//     DEV        has the gappace root qdisc, with a link rate (e.g. eth0)
//     plain-dev  does not have it (e.g. lo)
//   gp-nlprobe --dev DEV --add-rules N [--hold]
//     adds N /32 rules (10.128.0.0 upwards) over one socket: a bulk load for
//     leak and scale tests, far faster than N gapctl processes. Rules are
//     leases of that socket: with --hold the probe keeps it open until SIGTERM
//     or SIGINT, otherwise the rules end when it exits
//
// Exit status: 0 all cases refused as expected (or all rules added), 1 some were
// not, 2 usage/setup error.
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/gappace.h>
#include <linux/pkt_sched.h>
#include <linux/genetlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <csignal>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "json.hpp"
#include "netlink.hpp"

namespace {

using gp::RequestBuffer;

struct Case {
	const char *name;
	int expected_errno;
	bool unprivileged;	// drop CAP_NET_ADMIN before opening the socket
	bool rtnetlink;		// qdisc request instead of generic netlink
	std::function<void(RequestBuffer &, uint16_t family, uint32_t ifindex, uint32_t plain)> build;
};

void genl_header(RequestBuffer &buf, uint16_t family, uint8_t cmd, uint16_t flags = 0)
{
	nlmsghdr *nlh = buf.nlh();
	nlh->nlmsg_type = family;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = cmd;
	genl->version = GAPPACE_GENL_VERSION;
}

// A well-formed RULE nest with the given pieces; pass nullopt-like sentinels to omit.
struct RuleSpec {
	bool v4 = true;
	bool v6 = false;
	uint32_t v4_addr = htonl(0x0a000101); // 10.0.1.1
	int prefix_len = -1;
	int v4_len = 4;
	bool rate = true;
	uint64_t rate_value = 100ULL * 1000;	// below any link rate the tests use
	bool stats = false;
	bool unflagged_nest = false;	// strict validation insists on NLA_F_NESTED
};

void put_rule(RequestBuffer &buf, const RuleSpec &r)
{
	nlmsghdr *nlh = buf.nlh();
	nlattr *nest = mnl_attr_nest_start(nlh, GAPPACE_A_RULE);
	if (r.unflagged_nest)
		nest->nla_type &= static_cast<uint16_t>(~NLA_F_NESTED);	// libmnl always sets it
	if (r.v4)
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, r.v4_len, &r.v4_addr);
	if (r.v6) {
		const unsigned char v6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV6, sizeof(v6), v6);
	}
	if (r.prefix_len >= 0)
		mnl_attr_put_u8(nlh, GAPPACE_A_RULE_PREFIX_LEN, static_cast<uint8_t>(r.prefix_len));
	if (r.rate)
		mnl_attr_put_u64(nlh, GAPPACE_A_RULE_RATE, r.rate_value);
	if (r.stats) {
		nlattr *stats = mnl_attr_nest_start(nlh, GAPPACE_A_RULE_STATS | NLA_F_NESTED);
		mnl_attr_put_u64(nlh, GAPPACE_A_STATS_DATA_PACKETS, 1);
		mnl_attr_nest_end(nlh, stats);
	}
	mnl_attr_nest_end(nlh, nest);
}

Case rule_new_case(const char *name, int err, uint32_t which_ifindex, RuleSpec spec)
{
	return {name, err, false, false,
		[which_ifindex, spec](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t plain) {
			genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
			const uint32_t idx = which_ifindex == 1 ? ifindex : which_ifindex == 2 ? plain : which_ifindex;
			mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, idx);
			put_rule(buf, spec);
		}};
}

// RTM_NEWQDISC changing the root gappace qdisc with raw options.
Case qdisc_case(const char *name, int err, std::function<void(nlmsghdr *)> options)
{
	return {name, err, false, true,
		[options](RequestBuffer &buf, uint16_t, uint32_t ifindex, uint32_t) {
			nlmsghdr *nlh = buf.nlh();
			nlh->nlmsg_type = RTM_NEWQDISC;
			nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
			auto *tcm = static_cast<tcmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg)));
			tcm->tcm_family = AF_UNSPEC;
			tcm->tcm_ifindex = static_cast<int>(ifindex);
			tcm->tcm_parent = TC_H_ROOT;
			mnl_attr_put_strz(nlh, TCA_KIND, GAPPACE_QDISC_KIND);
			nlattr *opts = mnl_attr_nest_start(nlh, TCA_OPTIONS | NLA_F_NESTED);
			options(nlh);
			mnl_attr_nest_end(nlh, opts);
		}};
}

// An RTO request: {RTO{daddr 10.0.0.2, [saddr 10.0.0.1, sport, dport], extra...}}.
Case rto_case(const char *name, int err, uint8_t cmd, bool unprivileged,
	      std::function<void(nlmsghdr *)> fill)
{
	return {name, err, unprivileged, false,
		[cmd, fill](RequestBuffer &buf, uint16_t family, uint32_t, uint32_t) {
			genl_header(buf, family, cmd);
			nlattr *nest = mnl_attr_nest_start(buf.nlh(), GAPPACE_A_RTO);
			fill(buf.nlh());
			mnl_attr_nest_end(buf.nlh(), nest);
		}};
}

void put_peer(nlmsghdr *n)
{
	const uint32_t peer = htonl(0x0a000002);	// 10.0.0.2
	mnl_attr_put(n, GAPPACE_A_RTO_DADDR_IPV4, 4, &peer);
}

void put_tuple(nlmsghdr *n)
{
	const uint32_t local = htonl(0x0a000001);
	mnl_attr_put(n, GAPPACE_A_RTO_SADDR_IPV4, 4, &local);
	mnl_attr_put_u16(n, GAPPACE_A_RTO_SPORT, htons(40000));
	put_peer(n);
	mnl_attr_put_u16(n, GAPPACE_A_RTO_DPORT, htons(6000));
}

std::vector<Case> all_cases()
{
	std::vector<Case> cases;
	cases.push_back(rule_new_case("rule_unknown_device", ENODEV, 987654, {}));
	cases.push_back(rule_new_case("rule_device_without_gappace", ENOENT, 2, {}));
	cases.push_back(rule_new_case("rule_dst_wrong_length", ERANGE, 1, {.v4_len = 3}));
	cases.push_back(rule_new_case("rule_no_destination", EINVAL, 1, {.v4 = false}));
	cases.push_back(rule_new_case("rule_two_destinations", EINVAL, 1, {.v6 = true}));
	cases.push_back(rule_new_case("rule_prefix_len_over_32", EINVAL, 1, {.prefix_len = 33}));
	cases.push_back(rule_new_case("rule_prefix_len_over_128", ERANGE, 1, {.prefix_len = 200}));
	cases.push_back(rule_new_case("rule_host_bits_set", EINVAL, 1, {.prefix_len = 24}));
	cases.push_back(rule_new_case("rule_no_rate", EINVAL, 1, {.rate = false}));
	cases.push_back(rule_new_case("rule_rate_zero", ERANGE, 1, {.rate_value = 0}));
	cases.push_back(rule_new_case("rule_rate_above_link", ERANGE, 1,
				      {.rate_value = 4000ULL * 1000 * 1000 * 1000}));
	cases.push_back(rule_new_case("rule_stats_in_request", EINVAL, 1, {.stats = true}));
	cases.push_back(rule_new_case("rule_nest_without_flag", EINVAL, 1, {.unflagged_nest = true}));
	cases.push_back({"rule_missing_nest", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
			 }});
	cases.push_back({"rule_missing_ifindex", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 put_rule(buf, {});
			 }});
	cases.push_back({"rule_ifindex_zero", ERANGE, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, 0);
				 put_rule(buf, {});
			 }});
	cases.push_back({"rule_unknown_attribute", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 put_rule(buf, {});
				 mnl_attr_put_u32(buf.nlh(), 77, 1);
			 }});
	cases.push_back({"rule_truncated_attribute", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 // an attribute header claiming more bytes than the message holds
				 nlattr *attr = static_cast<nlattr *>(mnl_nlmsg_get_payload_tail(buf.nlh()));
				 attr->nla_type = GAPPACE_A_RULE;
				 attr->nla_len = 64;
				 buf.nlh()->nlmsg_len += 8;
			 }});
	cases.push_back({"rule_qdisc_attr_in_request", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 put_rule(buf, {});
				 nlattr *q = mnl_attr_nest_start(buf.nlh(), GAPPACE_A_QDISC | NLA_F_NESTED);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_QDISC_IFG, 100);
				 mnl_attr_nest_end(buf.nlh(), q);
			 }});
	cases.push_back({"rule_del_missing", ENOENT, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_DEL);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 put_rule(buf, {.v4_addr = htonl(0x0a090909), .rate = false});
			 }});
	cases.push_back({"stats_missing_ifindex", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_STATS_GET);
			 }});
	cases.push_back({"rule_new_unprivileged", EPERM, true, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 put_rule(buf, {.v4_addr = htonl(0x0a000909)});
			 }});
	cases.push_back({"rule_del_unprivileged", EPERM, true, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_DEL);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 put_rule(buf, {.rate = false});
			 }});
	cases.push_back(rto_case("rto_set_unprivileged", EPERM, GAPPACE_CMD_RTO_SET, true, [](nlmsghdr *n) {
		put_peer(n);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 10000);
	}));
	cases.push_back(rto_case("rto_clear_unprivileged", EPERM, GAPPACE_CMD_RTO_CLEAR, true, put_peer));
	cases.push_back(rto_case("rto_set_missing_peer", EINVAL, GAPPACE_CMD_RTO_SET, false,
				 [](nlmsghdr *n) { mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 10000); }));
	cases.push_back(rto_case("rto_set_partial_tuple", EINVAL, GAPPACE_CMD_RTO_SET, false, [](nlmsghdr *n) {
		put_peer(n);
		mnl_attr_put_u16(n, GAPPACE_A_RTO_DPORT, htons(6000));
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 10000);
	}));
	cases.push_back(rto_case("rto_set_missing_rto_min", EINVAL, GAPPACE_CMD_RTO_SET, false, put_tuple));
	cases.push_back(rto_case("rto_set_below_two_jiffies", EINVAL, GAPPACE_CMD_RTO_SET, false, [](nlmsghdr *n) {
		put_tuple(n);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 1000);
	}));
	cases.push_back(rto_case("rto_set_above_200ms", EINVAL, GAPPACE_CMD_RTO_SET, false, [](nlmsghdr *n) {
		put_tuple(n);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 250000);
	}));
	cases.push_back(rto_case("rto_set_ttl_zero", EINVAL, GAPPACE_CMD_RTO_SET, false, [](nlmsghdr *n) {
		put_tuple(n);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 10000);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_TTL_MS, 0);
	}));
	cases.push_back(rto_case("rto_set_reply_only_attribute", EINVAL, GAPPACE_CMD_RTO_SET, false, [](nlmsghdr *n) {
		put_tuple(n);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 10000);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_OWNER_PID, 1);
	}));
	cases.push_back(rto_case("rto_set_unknown_tuple", ENOENT, GAPPACE_CMD_RTO_SET, false, [](nlmsghdr *n) {
		put_tuple(n);
		mnl_attr_put_u32(n, GAPPACE_A_RTO_RTO_MIN_US, 10000);
	}));
	cases.push_back(rto_case("rto_clear_nothing", ENOENT, GAPPACE_CMD_RTO_CLEAR, false, put_tuple));
	cases.push_back(qdisc_case("qdisc_ifg_below_standard", ERANGE,
				   [](nlmsghdr *n) { mnl_attr_put_u32(n, TCA_GAPPACE_IFG, 5); }));
	cases.push_back(qdisc_case("qdisc_ifg_too_large", ERANGE,
				   [](nlmsghdr *n) { mnl_attr_put_u32(n, TCA_GAPPACE_IFG, GAPPACE_IFG_MAX + 1); }));
	cases.push_back(qdisc_case("qdisc_linkrate_tiny", EINVAL,
				   [](nlmsghdr *n) { mnl_attr_put_u64(n, TCA_GAPPACE_LINKRATE, 10); }));
	cases.push_back(qdisc_case("qdisc_linkrate_huge", ERANGE, [](nlmsghdr *n) {
		mnl_attr_put_u64(n, TCA_GAPPACE_LINKRATE, 5000ULL * 1000 * 1000 * 1000);
	}));
	cases.push_back(qdisc_case("qdisc_limit_zero", ERANGE,
				   [](nlmsghdr *n) { mnl_attr_put_u32(n, TCA_GAPPACE_LIMIT, 0); }));
	cases.push_back(qdisc_case("qdisc_ifg_wrong_size", EINVAL,
				   [](nlmsghdr *n) { mnl_attr_put_u16(n, TCA_GAPPACE_IFG, 100); }));
	cases.push_back(qdisc_case("qdisc_unknown_option", EINVAL,
				   [](nlmsghdr *n) { mnl_attr_put_u32(n, 42, 1); }));
	return cases;
}

// Drops CAP_NET_ADMIN from the effective set of this thread (the probe runs as root).
bool drop_net_admin()
{
	__user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
	__user_cap_data_struct data[2]{};
	if (syscall(SYS_capget, &header, data))
		return false;
	data[CAP_NET_ADMIN / 32].effective &= ~(1U << (CAP_NET_ADMIN % 32));
	return syscall(SYS_capset, &header, data) == 0;
}

bool restore_net_admin()
{
	__user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
	__user_cap_data_struct data[2]{};
	if (syscall(SYS_capget, &header, data))
		return false;
	data[CAP_NET_ADMIN / 32].effective |= 1U << (CAP_NET_ADMIN % 32);
	return syscall(SYS_capset, &header, data) == 0;
}

int usage()
{
	std::fprintf(stderr, "usage: gp-nlprobe [-j] --dev DEV --plain-dev DEV\n"
			     "       gp-nlprobe --dev DEV --add-rules N [--hold]\n");
	return 2;
}

int add_rules(uint32_t ifindex, uint32_t count, bool hold)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if (hold)
		sigprocmask(SIG_BLOCK, &stop, nullptr);	// from now on a signal ends the hold
	auto sock = gp::NetlinkSocket::open(NETLINK_GENERIC);
	if (!sock) {
		std::fprintf(stderr, "gp-nlprobe: %s\n", sock.error().message.c_str());
		return 2;
	}
	auto family = sock->genl_family_id(GAPPACE_GENL_NAME);
	if (!family) {
		std::fprintf(stderr, "gp-nlprobe: %s\n", family.error().message.c_str());
		return 2;
	}
	for (uint32_t i = 0; i < count; ++i) {
		RequestBuffer buf;
		genl_header(buf, *family, GAPPACE_CMD_RULE_NEW);
		mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
		put_rule(buf, {.v4_addr = htonl(0x0a800000u + i), .rate_value = 10000});
		if (auto ok = sock->transact(buf); !ok) {
			std::fprintf(stderr, "gp-nlprobe: rule %u: %s\n", i, ok.error().message.c_str());
			return 1;
		}
	}
	std::printf("{\"rules_added\":%u}\n", count);
	std::fflush(stdout);
	if (hold) {
		int signal = 0;
		sigwait(&stop, &signal);	// the socket, and with it the rules, live until here
	}
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	bool json = false;
	std::string dev, plain_dev;
	long rules = -1;
	bool hold = false;
	for (int i = 1; i < argc; ++i) {
		const std::string arg = argv[i];
		if (arg == "-j")
			json = true;
		else if (arg == "--dev" && i + 1 < argc)
			dev = argv[++i];
		else if (arg == "--plain-dev" && i + 1 < argc)
			plain_dev = argv[++i];
		else if (arg == "--add-rules" && i + 1 < argc)
			rules = std::strtol(argv[++i], nullptr, 10);
		else if (arg == "--hold")
			hold = true;
		else
			return usage();
	}
	if (rules >= 0) {
		const uint32_t idx = if_nametoindex(dev.c_str());
		if (!idx || rules > 1000000) {
			std::fprintf(stderr, "gp-nlprobe: cannot find device \"%s\" or bad rule count\n", dev.c_str());
			return 2;
		}
		return add_rules(idx, static_cast<uint32_t>(rules), hold);
	}
	if (dev.empty() || plain_dev.empty())
		return usage();
	const uint32_t ifindex = if_nametoindex(dev.c_str());
	const uint32_t plain = if_nametoindex(plain_dev.c_str());
	if (!ifindex || !plain) {
		std::fprintf(stderr, "gp-nlprobe: cannot find device \"%s\" or \"%s\"\n", dev.c_str(),
			     plain_dev.c_str());
		return 2;
	}

	gp::JsonWriter out;
	out.begin_array();
	int failures = 0;
	for (const Case &c : all_cases()) {
		if (c.unprivileged && !drop_net_admin()) {
			std::fprintf(stderr, "gp-nlprobe: cannot drop CAP_NET_ADMIN\n");
			return 2;
		}
		auto sock = gp::NetlinkSocket::open(c.rtnetlink ? NETLINK_ROUTE : NETLINK_GENERIC);
		if (c.unprivileged)
			restore_net_admin();
		if (!sock) {
			std::fprintf(stderr, "gp-nlprobe: %s\n", sock.error().message.c_str());
			return 2;
		}
		uint16_t family = 0;
		if (!c.rtnetlink) {
			auto id = sock->genl_family_id(GAPPACE_GENL_NAME);
			if (!id) {
				std::fprintf(stderr, "gp-nlprobe: %s\n", id.error().message.c_str());
				return 2;
			}
			family = *id;
		}
		RequestBuffer buf;
		c.build(buf, family, ifindex, plain);
		if (c.unprivileged)
			drop_net_admin();	// the sender's capabilities count too
		const auto result = sock->transact(buf);
		if (c.unprivileged)
			restore_net_admin();

		const int err = result ? 0 : result.error().err;
		const std::string message = result ? "" : result.error().message;
		// describe_failure falls back to strerror when the kernel sent no text: detect that
		const bool has_extack = !result && message != std::strerror(err);
		const bool ok = err == c.expected_errno && has_extack;
		failures += !ok;
		if (json) {
			out.begin_object()
				.field("case", c.name)
				.field("expected_errno", c.expected_errno)
				.field("errno", err)
				.field("extack", has_extack ? message : std::string())
				.field("ok", ok)
				.end_object();
		} else {
			std::printf("%-30s %-4s errno %-3d (want %-3d) %s\n", c.name, ok ? "ok" : "FAIL", err,
				    c.expected_errno, message.c_str());
		}
	}
	out.end_array();
	if (json)
		std::printf("%s\n", out.str().c_str());
	return failures ? 1 : 0;
}
