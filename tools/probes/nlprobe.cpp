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
//   gp-nlprobe [-j] --dev DEV --plain-dev DEV [--only PREFIX]
//     DEV        has the gappace root qdisc, with a link rate (e.g. eth0)
//     plain-dev  does not have it (e.g. lo)
//     PREFIX     run only the cases whose name starts with it (e.g. hint_,
//                which need neither device to have the qdisc)
//   gp-nlprobe --dev DEV --add-rules N [--hold]
//     adds N /32 rules (10.128.0.0 upwards) over one socket: a bulk load for
//     leak and scale tests, far faster than N gapctl processes. Rules are
//     leases of that socket: with --hold the probe keeps it open until SIGTERM
//     or SIGINT, otherwise the rules end when it exits
//   gp-nlprobe --send-hint [--phase-id N] [--as-uid UID]
//     sends one valid BEGIN hint with three peers (a host, an IPv4 connection,
//     an IPv6 host) and prints one JSON line: what was sent and by whom
//     ("sent":true, pid, uid, netns inode), or the refusal ("sent":false,
//     errno, message; exit 1)
//   gp-nlprobe --listen-hints COUNT --timeout-ms T [--as-uid UID]
//     joins the "hints" group, checks that every message comes from the
//     kernel (port id 0), prints each hint as one JSON line with all its
//     fields, peers and sender stamps; says "listening" on stderr once joined.
//     Exit 0 after COUNT hints, 1 on timeout or a bad message, 3 if the
//     kernel refused the subscription (EPERM for the unprivileged)
//   gp-nlprobe --rto-churn TUPLE --count N --interval-ms M [--ttl-tuple TUPLE --ttl-ms T]
//     over one socket: first floors the --ttl-tuple connection (10 ms) with a
//     TTL of T ms, then floors the churn TUPLE's connection N times, M ms
//     apart: a daemon that sets floors more often than the module's sweep
//     runs, which must not keep the TTL from ending. TUPLE is ss's
//     "SADDR:SPORT DADDR:DPORT" (IPv4), one argument. Prints {"sets":N} and
//     exits, which ends the socket's leases
//   --as-uid UID  first drop to UID (and gid UID, no supplementary groups)
//     with setresgid/setresuid: an unprivileged sender or listener
//
// Exit status: 0 all cases refused as expected (or all rules added), 1 some were
// not, 2 usage/setup error.
#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/gappace.h>
#include <linux/pkt_sched.h>
#include <linux/genetlink.h>
#include <linux/rtnetlink.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json.hpp"
#include "netlink.hpp"

namespace {

using gp::RequestBuffer;

// A request larger than gp::RequestBuffer's 4 KiB (the cases about the size of a hint).
using LargeRequest = std::vector<char>;

struct Case {
	const char *name;
	int expected_errno;
	bool unprivileged;	// drop CAP_NET_ADMIN before opening the socket
	bool rtnetlink;		// qdisc request instead of generic netlink
	std::function<void(RequestBuffer &, uint16_t family, uint32_t ifindex, uint32_t plain)> build;
	const char *want_text = nullptr;	// the extack must contain it (nullptr: any text)
	std::function<LargeRequest(uint16_t family)> build_large = {};	// instead of build
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
	int64_t group = -1;		// GAPPACE_A_RULE_GROUP if >= 0
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
	if (r.group >= 0)
		mnl_attr_put_u32(nlh, GAPPACE_A_RULE_GROUP, static_cast<uint32_t>(r.group));
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

// ------------------------------------------------------------------ hints

constexpr uint64_t kProbePhaseId = 0x5eed;

void put_in_addr(nlmsghdr *n, uint16_t type, uint32_t host_order)
{
	const uint32_t addr = htonl(host_order);
	mnl_attr_put(n, type, sizeof(addr), &addr);
}

// fd00::<last>
void put_in6_addr(nlmsghdr *n, uint16_t type, uint8_t last)
{
	unsigned char addr[16] = {0xfd};
	addr[15] = last;
	mnl_attr_put(n, type, sizeof(addr), addr);
}

// {EVENT, PHASE_ID[, KIND]}: the attributes a valid hint starts with.
void put_hint_basics(nlmsghdr *n, uint32_t event = GAPPACE_HINT_EVENT_BEGIN, bool kind = true)
{
	mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, event);
	mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, kProbePhaseId);
	if (kind)
		mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_ALLTOALL);
}

// One PEER nest; fill puts its attributes.
void put_hint_peer(nlmsghdr *n, const std::function<void(nlmsghdr *)> &fill)
{
	nlattr *peer = mnl_attr_nest_start(n, GAPPACE_A_HINT_PEER);
	fill(n);
	mnl_attr_nest_end(n, peer);
}

void put_host_peer(nlmsghdr *n, uint32_t host_order_addr, uint32_t rank)
{
	put_hint_peer(n, [&](nlmsghdr *p) {
		put_in_addr(p, GAPPACE_A_PEER_DADDR_IPV4, host_order_addr);
		mnl_attr_put_u32(p, GAPPACE_A_PEER_RANK, rank);
	});
}

// 10.0.0.1:40000 -> 10.0.0.2:6000, as ss shows it at the sender
void put_v4_connection_peer(nlmsghdr *n, uint32_t rank)
{
	put_hint_peer(n, [&](nlmsghdr *p) {
		put_in_addr(p, GAPPACE_A_PEER_SADDR_IPV4, 0x0a000001);
		mnl_attr_put_u16(p, GAPPACE_A_PEER_SPORT, htons(40000));
		put_in_addr(p, GAPPACE_A_PEER_DADDR_IPV4, 0x0a000002);
		mnl_attr_put_u16(p, GAPPACE_A_PEER_DPORT, htons(6000));
		mnl_attr_put_u32(p, GAPPACE_A_PEER_RANK, rank);
	});
}

// [fd00::1]:40000 -> [fd00::<last>]:6000
void put_v6_connection_peer(nlmsghdr *n, uint8_t last, uint32_t rank)
{
	put_hint_peer(n, [&](nlmsghdr *p) {
		put_in6_addr(p, GAPPACE_A_PEER_SADDR_IPV6, 1);
		mnl_attr_put_u16(p, GAPPACE_A_PEER_SPORT, htons(40000));
		put_in6_addr(p, GAPPACE_A_PEER_DADDR_IPV6, last);
		mnl_attr_put_u16(p, GAPPACE_A_PEER_DPORT, htons(6000));
		mnl_attr_put_u32(p, GAPPACE_A_PEER_RANK, rank);
	});
}

// {HINT{...}}: fill puts the content of the nest.
void put_hint(nlmsghdr *n, const std::function<void(nlmsghdr *)> &fill)
{
	nlattr *hint = mnl_attr_nest_start(n, GAPPACE_A_HINT);
	fill(n);
	mnl_attr_nest_end(n, hint);
}

Case hint_case(const char *name, int err, const char *want_text, std::function<void(nlmsghdr *)> fill,
	       bool unprivileged = false)
{
	return {name, err, unprivileged, false,
		[fill](RequestBuffer &buf, uint16_t family, uint32_t, uint32_t) {
			genl_header(buf, family, GAPPACE_CMD_HINT);
			put_hint(buf.nlh(), fill);
		},
		want_text};
}

// A hint of peer_count peers that needs more than RequestBuffer's 4 KiB.
Case large_hint_case(const char *name, int err, const char *want_text, unsigned peer_count, bool v6_tuples)
{
	Case c{name, err, false, false, nullptr, want_text};
	c.build_large = [=](uint16_t family) {
		LargeRequest request(128 * 1024);
		nlmsghdr *n = mnl_nlmsg_put_header(request.data());
		n->nlmsg_type = family;
		n->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
		auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(n, sizeof(genlmsghdr)));
		genl->cmd = GAPPACE_CMD_HINT;
		genl->version = GAPPACE_GENL_VERSION;
		put_hint(n, [&](nlmsghdr *h) {
			put_hint_basics(h);
			for (unsigned i = 0; i < peer_count; ++i) {
				if (v6_tuples)
					put_v6_connection_peer(h, static_cast<uint8_t>(2 + i % 250), i);
				else
					put_host_peer(h, 0x0a800000u + i, i);
			}
		});
		request.resize(n->nlmsg_len);
		return request;
	};
	return c;
}

void add_hint_cases(std::vector<Case> &cases)
{
	// What the policies refuse (the core's own messages).
	cases.push_back({"hint_missing_nest", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_HINT);
			 },
			 "needs a hint nest"});
	cases.push_back(hint_case("hint_event_out_of_range", ERANGE, "out of range", [](nlmsghdr *n) {
		put_hint_basics(n, GAPPACE_HINT_EVENT_END + 1);
	}));
	cases.push_back(hint_case("hint_kind_unspec", ERANGE, "out of range", [](nlmsghdr *n) {
		put_hint_basics(n, GAPPACE_HINT_EVENT_BEGIN, false);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_UNSPEC);
	}));
	cases.push_back(hint_case("hint_kind_unknown", ERANGE, "out of range", [](nlmsghdr *n) {
		put_hint_basics(n, GAPPACE_HINT_EVENT_BEGIN, false);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_MAX + 1);
	}));
	cases.push_back(hint_case("hint_algorithm_unknown", ERANGE, "out of range", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_ALGORITHM, GAPPACE_HINT_ALGORITHM_MAX + 1);
	}));
	cases.push_back(hint_case("hint_bad_flags", EINVAL, "reserved bit", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_FLAGS, GAPPACE_HINT_F_ALL + 1);
	}));
	cases.push_back(hint_case("hint_phase_id_wrong_size", EINVAL, nullptr, [](nlmsghdr *n) {
		mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, GAPPACE_HINT_EVENT_END);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_PHASE_ID, 1);
	}));
	cases.push_back(hint_case("hint_unknown_attribute", EINVAL, "Unknown attribute", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_MAX + 1, 1);
	}));
	cases.push_back(hint_case("hint_sender_pid_supplied", EINVAL, "set by the kernel", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_SENDER_PID, 1);
	}));
	cases.push_back(hint_case("hint_sender_uid_supplied", EINVAL, "set by the kernel", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_SENDER_UID, 0);
	}));
	cases.push_back(hint_case("hint_sender_netns_supplied", EINVAL, "set by the kernel", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_SENDER_NETNS, 4026531840U);
	}));
	cases.push_back(hint_case("hint_peer_address_wrong_length", ERANGE, nullptr, [](nlmsghdr *n) {
		put_hint_basics(n);
		put_hint_peer(n, [](nlmsghdr *p) {
			const unsigned char five[5] = {10, 0, 0, 2, 0};
			mnl_attr_put(p, GAPPACE_A_PEER_DADDR_IPV4, sizeof(five), five);
		});
	}));
	// What the handler refuses.
	cases.push_back(hint_case("hint_missing_event", EINVAL, "needs an event", [](nlmsghdr *n) {
		mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, kProbePhaseId);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_ALLTOALL);
	}));
	cases.push_back(hint_case("hint_missing_phase_id", EINVAL, "needs a phase-id", [](nlmsghdr *n) {
		mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, GAPPACE_HINT_EVENT_BEGIN);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_ALLTOALL);
	}));
	cases.push_back(hint_case("hint_begin_without_kind", EINVAL, "needs the kind", [](nlmsghdr *n) {
		put_hint_basics(n, GAPPACE_HINT_EVENT_BEGIN, false);
	}));
	cases.push_back(hint_case("hint_peer_without_address", EINVAL, "a peer needs an address", [](nlmsghdr *n) {
		put_hint_basics(n);
		put_hint_peer(n, [](nlmsghdr *p) { mnl_attr_put_u32(p, GAPPACE_A_PEER_RANK, 1); });
	}));
	cases.push_back(hint_case("hint_peer_two_addresses", EINVAL, "one address, not two", [](nlmsghdr *n) {
		put_hint_basics(n);
		put_hint_peer(n, [](nlmsghdr *p) {
			put_in_addr(p, GAPPACE_A_PEER_DADDR_IPV4, 0x0a000002);
			put_in6_addr(p, GAPPACE_A_PEER_DADDR_IPV6, 2);
		});
	}));
	cases.push_back(hint_case("hint_peer_partial_tuple", EINVAL, "a connection needs", [](nlmsghdr *n) {
		put_hint_basics(n);
		put_hint_peer(n, [](nlmsghdr *p) {
			put_in_addr(p, GAPPACE_A_PEER_DADDR_IPV4, 0x0a000002);
			mnl_attr_put_u16(p, GAPPACE_A_PEER_DPORT, htons(6000));
		});
	}));
	cases.push_back(hint_case("hint_peer_mixed_families", EINVAL, "different families", [](nlmsghdr *n) {
		put_hint_basics(n);
		put_hint_peer(n, [](nlmsghdr *p) {
			put_in6_addr(p, GAPPACE_A_PEER_SADDR_IPV6, 1);
			mnl_attr_put_u16(p, GAPPACE_A_PEER_SPORT, htons(40000));
			put_in_addr(p, GAPPACE_A_PEER_DADDR_IPV4, 0x0a000002);
			mnl_attr_put_u16(p, GAPPACE_A_PEER_DPORT, htons(6000));
		});
	}));
	cases.push_back(hint_case("hint_peer_port_zero", EINVAL, "port 0", [](nlmsghdr *n) {
		put_hint_basics(n);
		put_hint_peer(n, [](nlmsghdr *p) {
			put_in_addr(p, GAPPACE_A_PEER_SADDR_IPV4, 0x0a000001);
			mnl_attr_put_u16(p, GAPPACE_A_PEER_SPORT, 0);
			put_in_addr(p, GAPPACE_A_PEER_DADDR_IPV4, 0x0a000002);
			mnl_attr_put_u16(p, GAPPACE_A_PEER_DPORT, htons(6000));
		});
	}));
	cases.push_back(large_hint_case("hint_too_many_peers", EINVAL, "at most 1024 peers",
					GAPPACE_HINT_MAX_PEERS + 1, false));
	// 963 IPv6 tuples fit one attribute (65516 bytes) but not with the 24-byte stamp
	cases.push_back(large_hint_case("hint_no_room_for_stamp", EMSGSIZE, "no room for the sender's stamp",
					963, true));
	// A quiet summary is both attributes (the check after the policies), of at least one phase.
	cases.push_back(hint_case("hint_quiet_phases_without_time", EINVAL, "needs both quiet-phases and quiet-ns",
				  [](nlmsghdr *n) {
					  put_hint_basics(n);
					  mnl_attr_put_u32(n, GAPPACE_A_HINT_QUIET_PHASES, 4);
				  }));
	cases.push_back(hint_case("hint_quiet_time_without_phases", EINVAL, "needs both quiet-phases and quiet-ns",
				  [](nlmsghdr *n) {
					  put_hint_basics(n);
					  mnl_attr_put_u64(n, GAPPACE_A_HINT_QUIET_NS, 4000);
				  }));
	cases.push_back(hint_case("hint_quiet_zero_phases", ERANGE, "out of range", [](nlmsghdr *n) {
		put_hint_basics(n);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_QUIET_PHASES, 0);
		mnl_attr_put_u64(n, GAPPACE_A_HINT_QUIET_NS, 4000);
	}));
	// Valid hints with nobody listening: refused with ESRCH, never with EPERM, even
	// from a sender without CAP_NET_ADMIN. Run these where no listener is subscribed.
	cases.push_back(hint_case("hint_no_listener", ESRCH, "no daemon listens for hints", [](nlmsghdr *n) {
		put_hint_basics(n, GAPPACE_HINT_EVENT_END, false);	// END needs no kind
		mnl_attr_put_u64(n, GAPPACE_A_HINT_DURATION_NS, 1500000);
	}));
	cases.push_back(hint_case("hint_unprivileged_no_listener", ESRCH, "no daemon listens for hints",
				  [](nlmsghdr *n) {
					  put_hint_basics(n);
					  put_v4_connection_peer(n, 1);
				  },
				  true));
	cases.push_back(hint_case("hint_quiet_summary_no_listener", ESRCH, "no daemon listens for hints",
				  [](nlmsghdr *n) {
					  put_hint_basics(n);
					  mnl_attr_put_u32(n, GAPPACE_A_HINT_QUIET_PHASES, 12);
					  mnl_attr_put_u64(n, GAPPACE_A_HINT_QUIET_NS, 36000000);
				  },
				  true));
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
	cases.push_back(rule_new_case("rule_group_zero", ERANGE, 1, {.group = 0}));
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
	cases.push_back({"rule_del_with_group", EINVAL, false, false,
			 [](RequestBuffer &buf, uint16_t family, uint32_t ifindex, uint32_t) {
				 genl_header(buf, family, GAPPACE_CMD_RULE_DEL);
				 mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
				 put_rule(buf, {.rate = false, .group = 1});
			 },
			 "by its prefix alone"});
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
	cases.push_back(qdisc_case("qdisc_lookahead_too_long", ERANGE, [](nlmsghdr *n) {
		mnl_attr_put_u32(n, TCA_GAPPACE_LOOKAHEAD, GAPPACE_LOOKAHEAD_MAX + 1);
	}));
	cases.push_back(qdisc_case("qdisc_ifg_wrong_size", EINVAL,
				   [](nlmsghdr *n) { mnl_attr_put_u16(n, TCA_GAPPACE_IFG, 100); }));
	cases.push_back(qdisc_case("qdisc_unknown_option", EINVAL,
				   [](nlmsghdr *n) { mnl_attr_put_u32(n, 42, 1); }));
	add_hint_cases(cases);
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
	std::fprintf(stderr, "usage: gp-nlprobe [-j] --dev DEV --plain-dev DEV [--only PREFIX]\n"
			     "       gp-nlprobe --dev DEV --add-rules N [--hold]\n"
			     "       gp-nlprobe --rto-churn TUPLE --count N --interval-ms M [--ttl-tuple TUPLE --ttl-ms T]\n"
			     "       gp-nlprobe --send-hint [--phase-id N] [--as-uid UID]\n"
			     "       gp-nlprobe --listen-hints COUNT --timeout-ms T [--as-uid UID]\n");
	return 2;
}

// Sends a request too large for gp::RequestBuffer and waits for its ACK.
gp::Expected<void> transact_large(gp::NetlinkSocket &sock, LargeRequest &request)
{
	auto *nlh = reinterpret_cast<nlmsghdr *>(request.data());
	nlh->nlmsg_seq = 0x4c41u;	// this socket sends nothing else
	if (mnl_socket_sendto(sock.raw(), request.data(), nlh->nlmsg_len) < 0)
		return gp::make_error(errno, std::string("send: ") + std::strerror(errno));
	std::vector<char> reply(64 * 1024);
	for (int i = 0; i < 16; ++i) {	// an ACK comes first: nothing else is asked for
		ssize_t received = mnl_socket_recvfrom(sock.raw(), reply.data(), reply.size());
		if (received < 0)
			return gp::make_error(errno, std::string("receive: ") + std::strerror(errno));
		int left = static_cast<int>(received);
		for (auto *m = reinterpret_cast<const nlmsghdr *>(reply.data()); mnl_nlmsg_ok(m, left);
		     m = mnl_nlmsg_next(m, &left)) {
			if (m->nlmsg_seq != nlh->nlmsg_seq || m->nlmsg_type != NLMSG_ERROR)
				continue;
			if (auto failure = gp::decode_ack(m, request))
				return std::move(*failure);
			return {};
		}
	}
	return gp::make_error(EPROTO, "no acknowledgement of the request");
}

// --as-uid: the groups first, while we may still change them.
bool become_user(uid_t uid)
{
	if (setgroups(0, nullptr) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid)) {
		std::fprintf(stderr, "gp-nlprobe: cannot become uid %u: %s\n", uid, std::strerror(errno));
		return false;
	}
	return true;
}

// The inode of this process's network namespace, as the kernel stamps it.
uint64_t own_netns_inode()
{
	struct stat st {};
	return stat("/proc/self/ns/net", &st) == 0 ? st.st_ino : 0;
}

// A generic netlink socket and the gappace family's id; nullopt once it said why not.
struct GappaceSocket {
	gp::NetlinkSocket sock;
	uint16_t family;
};
std::optional<GappaceSocket> open_gappace()
{
	auto sock = gp::NetlinkSocket::open(NETLINK_GENERIC);
	if (!sock) {
		std::fprintf(stderr, "gp-nlprobe: %s\n", sock.error().message.c_str());
		return std::nullopt;
	}
	auto family = sock->genl_family_id(GAPPACE_GENL_NAME);
	if (!family) {
		std::fprintf(stderr, "gp-nlprobe: %s\n", family.error().message.c_str());
		return std::nullopt;
	}
	return GappaceSocket{std::move(*sock), *family};
}

int send_hint(uint64_t phase_id)
{
	auto opened = open_gappace();
	if (!opened)
		return 2;
	auto &[sock, family] = *opened;
	RequestBuffer buf;
	genl_header(buf, family, GAPPACE_CMD_HINT);
	put_hint(buf.nlh(), [&](nlmsghdr *n) {
		mnl_attr_put_u32(n, GAPPACE_A_HINT_EVENT, GAPPACE_HINT_EVENT_BEGIN);
		mnl_attr_put_u64(n, GAPPACE_A_HINT_PHASE_ID, phase_id);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_KIND, GAPPACE_HINT_KIND_ALLTOALL);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_ALGORITHM, GAPPACE_HINT_ALGORITHM_PAIRWISE);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_FLAGS, GAPPACE_HINT_F_VECTOR | GAPPACE_HINT_F_NONBLOCKING);
		mnl_attr_put_u64(n, GAPPACE_A_HINT_BYTES_PER_PEER, 1U << 20);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_COMM_SIZE, 4);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_RANK, 0);
		mnl_attr_put_u32(n, GAPPACE_A_HINT_REPETITIONS, 10);
		put_host_peer(n, 0x0a000002, 1);	// 10.0.0.2
		put_v4_connection_peer(n, 2);		// 10.0.0.1:40000 -> 10.0.0.2:6000
		put_hint_peer(n, [](nlmsghdr *p) {		// fd00::3
			put_in6_addr(p, GAPPACE_A_PEER_DADDR_IPV6, 3);
			mnl_attr_put_u32(p, GAPPACE_A_PEER_RANK, 3);
		});
	});
	const auto sent = sock.transact(buf);
	gp::JsonWriter out;
	out.begin_object().field("sent", sent.has_value()).field("phase_id", phase_id);
	if (!sent)
		out.field("errno", sent.error().err).field("message", sent.error().message);
	out.field("pid", static_cast<int64_t>(getpid()))
		.field("uid", static_cast<uint32_t>(getuid()))
		.field("netns", own_netns_inode())
		.end_object();
	std::printf("%s\n", out.str().c_str());
	return sent ? 0 : 1;
}

const char *const kKindNames[] = {"unspec", "alltoall", "allgather", "bcast", "reduce_scatter", "allreduce",
				  "gather", "scatter", "barrier", "p2p_burst", "reduce"};
const char *const kAlgorithmNames[] = {"unknown", "linear", "pairwise", "ring", "binomial",
				       "scatter_allgather", "recursive_doubling"};
static_assert(std::size(kKindNames) == GAPPACE_HINT_KIND_MAX + 1);
static_assert(std::size(kAlgorithmNames) == GAPPACE_HINT_ALGORITHM_MAX + 1);

// A name if the value has one, else the number: a newer kernel may know more.
template <size_t N> void put_named(gp::JsonWriter &out, const char *key, uint32_t value, const char *const (&names)[N])
{
	if (value < N)
		out.field(key, names[value]);
	else
		out.field(key, value);
}

std::string format_address(const nlattr *attr)
{
	char text[INET6_ADDRSTRLEN] = "";
	const int family = mnl_attr_get_payload_len(attr) == 4 ? AF_INET : AF_INET6;
	inet_ntop(family, mnl_attr_get_payload(attr), text, sizeof(text));
	return text;
}

// One peer nest as a JSON object; an error for a malformed one.
gp::Expected<void> put_peer_json(gp::JsonWriter &out, const nlattr *peer)
{
	if (mnl_attr_validate(peer, MNL_TYPE_NESTED) < 0)
		return gp::make_error(EBADMSG, "malformed peer nest");
	const auto fields = gp::AttrIndex::of_nest(peer, GAPPACE_A_PEER_MAX);
	out.begin_object();
	const struct {
		uint16_t type;
		size_t len;
		const char *key;
	} addresses[] = {
		{GAPPACE_A_PEER_SADDR_IPV4, 4, "saddr"}, {GAPPACE_A_PEER_SADDR_IPV6, 16, "saddr"},
		{GAPPACE_A_PEER_DADDR_IPV4, 4, "daddr"}, {GAPPACE_A_PEER_DADDR_IPV6, 16, "daddr"},
	};
	for (const auto &a : addresses) {
		auto attr = gp::checked_binary_attr(fields, a.type, a.len, a.key);
		if (!attr)
			return attr.error();
		if (*attr)
			out.field(a.key, format_address(*attr));
	}
	for (const auto &[type, key] : {std::pair{GAPPACE_A_PEER_SPORT, "sport"}, std::pair{GAPPACE_A_PEER_DPORT, "dport"}}) {
		auto attr = gp::checked_attr(fields, type, MNL_TYPE_U16, key);
		if (!attr)
			return attr.error();
		if (*attr)
			out.field(key, static_cast<uint32_t>(ntohs(mnl_attr_get_u16(*attr))));
	}
	auto rank = gp::checked_attr(fields, GAPPACE_A_PEER_RANK, MNL_TYPE_U32, "peer rank");
	if (!rank)
		return rank.error();
	if (*rank)
		out.field("rank", mnl_attr_get_u32(*rank));
	out.end_object();
	return {};
}

// One multicast hint as one JSON line. Every attribute the kernel sent is printed.
gp::Expected<std::string> hint_json(const nlmsghdr *nlh)
{
	const auto top = gp::AttrIndex::of_message(nlh, sizeof(genlmsghdr), GAPPACE_A_MAX);
	auto nest = gp::checked_attr(top, GAPPACE_A_HINT, MNL_TYPE_NESTED, "hint nest");
	if (!nest)
		return nest.error();
	if (!*nest)
		return gp::make_error(EBADMSG, "a hint message without a hint nest");
	const auto fields = gp::AttrIndex::of_nest(*nest, GAPPACE_A_HINT_MAX);
	gp::JsonWriter out;
	out.begin_object();
	const struct {
		uint16_t type;
		mnl_attr_data_type data;
		const char *key;
	} scalars[] = {
		{GAPPACE_A_HINT_EVENT, MNL_TYPE_U32, "event"},
		{GAPPACE_A_HINT_PHASE_ID, MNL_TYPE_U64, "phase_id"},
		{GAPPACE_A_HINT_KIND, MNL_TYPE_U32, "kind"},
		{GAPPACE_A_HINT_ALGORITHM, MNL_TYPE_U32, "algorithm"},
		{GAPPACE_A_HINT_FLAGS, MNL_TYPE_U32, "flags"},
		{GAPPACE_A_HINT_BYTES_PER_PEER, MNL_TYPE_U64, "bytes_per_peer"},
		{GAPPACE_A_HINT_COMM_SIZE, MNL_TYPE_U32, "comm_size"},
		{GAPPACE_A_HINT_RANK, MNL_TYPE_U32, "rank"},
		{GAPPACE_A_HINT_REPETITIONS, MNL_TYPE_U32, "repetitions"},
		{GAPPACE_A_HINT_DURATION_NS, MNL_TYPE_U64, "duration_ns"},
		{GAPPACE_A_HINT_SENDER_PID, MNL_TYPE_U32, "sender_pid"},
		{GAPPACE_A_HINT_SENDER_UID, MNL_TYPE_U32, "sender_uid"},
		{GAPPACE_A_HINT_SENDER_NETNS, MNL_TYPE_U32, "sender_netns"},
	};
	for (const auto &f : scalars) {
		auto attr = gp::checked_attr(fields, f.type, f.data, f.key);
		if (!attr)
			return attr.error();
		if (!*attr)
			continue;
		const uint64_t value = f.data == MNL_TYPE_U64 ? mnl_attr_get_u64(*attr) : mnl_attr_get_u32(*attr);
		if (f.type == GAPPACE_A_HINT_EVENT)
			out.field(f.key, value == GAPPACE_HINT_EVENT_BEGIN ? "begin"
					 : value == GAPPACE_HINT_EVENT_END ? "end" : "?");
		else if (f.type == GAPPACE_A_HINT_KIND)
			put_named(out, f.key, static_cast<uint32_t>(value), kKindNames);
		else if (f.type == GAPPACE_A_HINT_ALGORITHM)
			put_named(out, f.key, static_cast<uint32_t>(value), kAlgorithmNames);
		else
			out.field(f.key, value);
	}
	for (auto type : {GAPPACE_A_HINT_SENDER_PID, GAPPACE_A_HINT_SENDER_UID, GAPPACE_A_HINT_SENDER_NETNS})
		if (!fields[type])
			return gp::make_error(EBADMSG, "a hint from the kernel without its sender stamp");
	// PEER repeats: AttrIndex keeps one per type, so walk the nest.
	struct Walk {
		gp::JsonWriter *out;
		std::optional<gp::Error> failure;
	} walk{&out, std::nullopt};
	out.key("peers").begin_array();
	mnl_attr_parse_nested(*nest, [](const nlattr *attr, void *data) -> int {
		auto &w = *static_cast<Walk *>(data);
		if (mnl_attr_get_type(attr) != GAPPACE_A_HINT_PEER)
			return MNL_CB_OK;
		if (auto ok = put_peer_json(*w.out, attr); !ok) {
			w.failure = ok.error();
			return MNL_CB_ERROR;
		}
		return MNL_CB_OK;
	}, &walk);
	if (walk.failure)
		return std::move(*walk.failure);
	out.end_array().end_object();
	return out.str();
}

// Exit status of --listen-hints when the kernel refuses the subscription.
constexpr int kSubscriptionRefused = 3;

int listen_hints(long count, long timeout_ms)
{
	auto sock = gp::NetlinkSocket::open(NETLINK_GENERIC);
	if (!sock) {
		std::fprintf(stderr, "gp-nlprobe: %s\n", sock.error().message.c_str());
		return 2;
	}
	auto family = sock->genl_family_id(GAPPACE_GENL_NAME);
	auto group = sock->genl_mcast_group_id(GAPPACE_GENL_NAME, GAPPACE_MCGRP_HINTS);
	if (!family || !group) {
		std::fprintf(stderr, "gp-nlprobe: %s\n", (family ? group.error() : family.error()).message.c_str());
		return 2;
	}
	uint32_t group_id = *group;
	if (mnl_socket_setsockopt(sock->raw(), NETLINK_ADD_MEMBERSHIP, &group_id, sizeof(group_id)) < 0) {
		const int err = errno;
		std::fprintf(stderr, "gp-nlprobe: cannot join the hints group (%u): %s (errno %d)\n", group_id,
			     std::strerror(err), err);
		return err == EPERM ? kSubscriptionRefused : 2;
	}
	std::fprintf(stderr, "gp-nlprobe: listening for hints (group %u, uid %u)\n", group_id, getuid());

	// A hint nest reaches 64 KiB: read whole datagrams, and say so if one did not fit.
	std::vector<char> buffer(128 * 1024);
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	long received = 0;
	while (received < count) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
			deadline - std::chrono::steady_clock::now()).count();
		if (left <= 0)
			break;
		pollfd pfd{sock->fd(), POLLIN, 0};
		const int ready = poll(&pfd, 1, static_cast<int>(left));
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			break;
		sockaddr_nl from{};
		iovec iov{buffer.data(), buffer.size()};
		msghdr msg{};
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		const ssize_t length = recvmsg(sock->fd(), &msg, 0);
		if (length < 0) {
			std::fprintf(stderr, "gp-nlprobe: receive: %s\n", std::strerror(errno));	// ENOBUFS: overrun
			return 1;
		}
		if (msg.msg_flags & MSG_TRUNC) {
			std::fprintf(stderr, "gp-nlprobe: a hint message was larger than %zu bytes\n", buffer.size());
			return 1;
		}
		if (from.nl_pid != 0) {
			std::fprintf(stderr, "gp-nlprobe: a message from port %u, not from the kernel\n", from.nl_pid);
			return 1;
		}
		int left_bytes = static_cast<int>(length);
		for (auto *nlh = reinterpret_cast<const nlmsghdr *>(buffer.data()); mnl_nlmsg_ok(nlh, left_bytes);
		     nlh = mnl_nlmsg_next(nlh, &left_bytes)) {
			const auto *genl = static_cast<const genlmsghdr *>(mnl_nlmsg_get_payload(nlh));
			if (nlh->nlmsg_type != *family || nlh->nlmsg_pid != 0 ||
			    mnl_nlmsg_get_payload_len(nlh) < sizeof(*genl) || genl->cmd != GAPPACE_CMD_HINT) {
				std::fprintf(stderr, "gp-nlprobe: unexpected message (type %u, port %u) in the hints group\n",
					     nlh->nlmsg_type, nlh->nlmsg_pid);
				return 1;
			}
			auto line = hint_json(nlh);
			if (!line) {
				std::fprintf(stderr, "gp-nlprobe: %s\n", line.error().message.c_str());
				return 1;
			}
			std::printf("%s\n", line->c_str());
			std::fflush(stdout);
			++received;
		}
	}
	if (received < count) {
		std::fprintf(stderr, "gp-nlprobe: %ld of %ld hints within %ld ms\n", received, count, timeout_ms);
		return 1;
	}
	return 0;
}

int add_rules(uint32_t ifindex, uint32_t count, bool hold)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if (hold)
		sigprocmask(SIG_BLOCK, &stop, nullptr);	// from now on a signal ends the hold
	auto opened = open_gappace();
	if (!opened)
		return 2;
	auto &[sock, family] = *opened;
	for (uint32_t i = 0; i < count; ++i) {
		RequestBuffer buf;
		genl_header(buf, family, GAPPACE_CMD_RULE_NEW);
		mnl_attr_put_u32(buf.nlh(), GAPPACE_A_IFINDEX, ifindex);
		put_rule(buf, {.v4_addr = htonl(0x0a800000u + i), .rate_value = 10000});
		if (auto ok = sock.transact(buf); !ok) {
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

// "SADDR:SPORT DADDR:DPORT" (IPv4, as ss prints a connection).
struct Ipv4Tuple {
	in_addr saddr{}, daddr{};
	uint16_t sport = 0, dport = 0;
};
std::optional<Ipv4Tuple> parse_ipv4_tuple(const std::string &text)
{
	auto endpoint = [](const std::string &part, in_addr &addr, uint16_t &port) {
		const auto colon = part.rfind(':');
		if (colon == std::string::npos || inet_pton(AF_INET, part.substr(0, colon).c_str(), &addr) != 1)
			return false;
		char *end = nullptr;
		const long value = std::strtol(part.c_str() + colon + 1, &end, 10);
		port = static_cast<uint16_t>(value);
		return *end == '\0' && value > 0 && value <= 65535;
	};
	const auto space = text.find(' ');
	Ipv4Tuple t;
	if (space == std::string::npos || !endpoint(text.substr(0, space), t.saddr, t.sport) ||
	    !endpoint(text.substr(space + 1), t.daddr, t.dport))
		return std::nullopt;
	return t;
}

// RTO_SET of a 10 ms floor on one connection, with a TTL unless 0.
gp::Expected<void> set_rto(gp::NetlinkSocket &sock, uint16_t family, const Ipv4Tuple &t, uint32_t ttl_ms)
{
	RequestBuffer buf;
	genl_header(buf, family, GAPPACE_CMD_RTO_SET);
	nlattr *nest = mnl_attr_nest_start(buf.nlh(), GAPPACE_A_RTO);
	mnl_attr_put(buf.nlh(), GAPPACE_A_RTO_SADDR_IPV4, 4, &t.saddr);
	mnl_attr_put_u16(buf.nlh(), GAPPACE_A_RTO_SPORT, htons(t.sport));
	mnl_attr_put(buf.nlh(), GAPPACE_A_RTO_DADDR_IPV4, 4, &t.daddr);
	mnl_attr_put_u16(buf.nlh(), GAPPACE_A_RTO_DPORT, htons(t.dport));
	mnl_attr_put_u32(buf.nlh(), GAPPACE_A_RTO_RTO_MIN_US, 10000);
	if (ttl_ms)
		mnl_attr_put_u32(buf.nlh(), GAPPACE_A_RTO_TTL_MS, ttl_ms);
	mnl_attr_nest_end(buf.nlh(), nest);
	return sock.transact(buf);
}

int rto_churn(const Ipv4Tuple &churn, long count, long interval_ms, const std::optional<Ipv4Tuple> &ttl_tuple,
	      long ttl_ms)
{
	auto opened = open_gappace();
	if (!opened)
		return 2;
	auto &[sock, family] = *opened;
	if (ttl_tuple) {
		if (auto ok = set_rto(sock, family, *ttl_tuple, static_cast<uint32_t>(ttl_ms)); !ok) {
			std::fprintf(stderr, "gp-nlprobe: the TTL's floor: %s\n", ok.error().message.c_str());
			return 1;
		}
	}
	for (long i = 0; i < count; ++i) {
		if (i)
			poll(nullptr, 0, static_cast<int>(interval_ms));
		if (auto ok = set_rto(sock, family, churn, 0); !ok) {
			std::fprintf(stderr, "gp-nlprobe: set %ld: %s\n", i, ok.error().message.c_str());
			return 1;
		}
	}
	std::printf("{\"sets\":%ld}\n", count);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	bool json = false;
	std::string dev, plain_dev, only;
	long rules = -1;
	bool hold = false;
	bool send = false;
	long listen_count = -1, timeout_ms = -1, as_uid = -1;
	uint64_t phase_id = 1;
	std::string churn_text, ttl_tuple_text;
	long churn_count = -1, interval_ms = -1, ttl_ms = -1;
	// a number option: all digits, within [0, max]
	auto number = [](const char *text, long max, long &out) {
		char *end = nullptr;
		errno = 0;
		out = std::strtol(text, &end, 10);
		return errno == 0 && end != text && *end == '\0' && out >= 0 && out <= max;
	};
	for (int i = 1; i < argc; ++i) {
		const std::string arg = argv[i];
		const bool has_value = i + 1 < argc;
		long value = 0;
		if (arg == "-j")
			json = true;
		else if (arg == "--dev" && has_value)
			dev = argv[++i];
		else if (arg == "--plain-dev" && has_value)
			plain_dev = argv[++i];
		else if (arg == "--only" && has_value)
			only = argv[++i];
		else if (arg == "--add-rules" && has_value)
			rules = std::strtol(argv[++i], nullptr, 10);
		else if (arg == "--hold")
			hold = true;
		else if (arg == "--send-hint")
			send = true;
		else if (arg == "--phase-id" && has_value && number(argv[++i], LONG_MAX, value))
			phase_id = static_cast<uint64_t>(value);
		else if (arg == "--listen-hints" && has_value && number(argv[++i], 1000000, listen_count))
			continue;
		else if (arg == "--timeout-ms" && has_value && number(argv[++i], 3600 * 1000, timeout_ms))
			continue;
		else if (arg == "--as-uid" && has_value && number(argv[++i], 0xfffffffeL, as_uid))
			continue;
		else if (arg == "--rto-churn" && has_value)
			churn_text = argv[++i];
		else if (arg == "--ttl-tuple" && has_value)
			ttl_tuple_text = argv[++i];
		else if (arg == "--count" && has_value && number(argv[++i], 1000000, churn_count))
			continue;
		else if (arg == "--interval-ms" && has_value && number(argv[++i], 60 * 1000, interval_ms))
			continue;
		else if (arg == "--ttl-ms" && has_value && number(argv[++i], 3600 * 1000, ttl_ms) && ttl_ms > 0)
			continue;
		else
			return usage();
	}
	if (!churn_text.empty()) {
		const auto churn = parse_ipv4_tuple(churn_text);
		std::optional<Ipv4Tuple> ttl_tuple;
		if (!ttl_tuple_text.empty())
			ttl_tuple = parse_ipv4_tuple(ttl_tuple_text);
		if (!churn || churn_count < 1 || interval_ms < 0 || ttl_tuple_text.empty() != (ttl_ms < 0) ||
		    (!ttl_tuple_text.empty() && !ttl_tuple)) {
			std::fprintf(stderr, "gp-nlprobe: --rto-churn needs \"SADDR:SPORT DADDR:DPORT\" (IPv4), "
					     "--count N >= 1 and --interval-ms M; --ttl-tuple goes with --ttl-ms\n");
			return 2;
		}
		return rto_churn(*churn, churn_count, interval_ms, ttl_tuple, ttl_ms);
	}
	if (send || listen_count >= 0) {
		if (send == (listen_count >= 0) || (listen_count >= 0 && timeout_ms < 0))
			return usage();
		if (as_uid >= 0 && !become_user(static_cast<uid_t>(as_uid)))
			return 2;
		return send ? send_hint(phase_id) : listen_hints(listen_count, timeout_ms);
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
		if (!std::string_view(c.name).starts_with(only))
			continue;
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
		LargeRequest large;
		if (c.build_large)
			large = c.build_large(family);
		else
			c.build(buf, family, ifindex, plain);
		if (c.unprivileged)
			drop_net_admin();	// the sender's capabilities count too
		const auto result = c.build_large ? transact_large(*sock, large) : sock->transact(buf);
		if (c.unprivileged)
			restore_net_admin();

		const int err = result ? 0 : result.error().err;
		const std::string message = result ? "" : result.error().message;
		// describe_failure falls back to strerror when the kernel sent no text: detect that
		const bool has_extack = !result && message != std::strerror(err);
		const bool right_text = !c.want_text || message.find(c.want_text) != std::string::npos;
		const bool ok = err == c.expected_errno && has_extack && right_text;
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
