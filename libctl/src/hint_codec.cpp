#include "hint_codec.hpp"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "netlink.hpp"

namespace gp::hint {
namespace {

constexpr std::array<const char *, GAPPACE_HINT_KIND_MAX + 1> kKindNames = {
	nullptr, "alltoall", "allgather", "bcast", "reduce_scatter", "allreduce",
	"gather", "scatter", "barrier", "p2p_burst", "reduce",
};
constexpr std::array<const char *, GAPPACE_HINT_ALGORITHM_MAX + 1> kAlgorithmNames = {
	"unknown", "linear", "pairwise", "ring", "binomial", "scatter_allgather", "recursive_doubling",
};

// Attribute sizes: every attribute is 4 bytes of header plus its padded payload.
constexpr size_t kAttrU32 = 8, kAttrU64 = 12, kAttrV6 = 20, kAttrNest = 4;
constexpr size_t kPeerMax = kAttrNest + 2 * kAttrV6 + 2 * 8 /* be16 */ + kAttrU32;
constexpr size_t kHeaderMax = MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(genlmsghdr)) + kAttrNest +
			      8 * kAttrU32 + 5 * kAttrU64 + 3 * kAttrU32 /* sender stamp */;

void put_address(nlmsghdr *nlh, uint16_t v4_type, uint16_t v6_type, const Endpoint &endpoint)
{
	if (endpoint.family == AF_INET6)
		mnl_attr_put(nlh, v6_type, 16, endpoint.address.data());
	else
		mnl_attr_put(nlh, v4_type, 4, endpoint.address.data());
}

Error invalid(int err, const std::string &what) { return make_error(err, "invalid hint: " + what); }

// Typed access with the length checks the kernel policy makes.
struct Fields {
	AttrIndex attrs;
	std::optional<Error> failure;

	const nlattr *get(uint16_t type, mnl_attr_data_type data_type, const char *name)
	{
		const nlattr *attr = attrs[type];
		if (attr && mnl_attr_validate(attr, data_type) < 0) {
			if (!failure)
				failure = invalid(EINVAL, std::string(name) + " has the wrong length");
			return nullptr;
		}
		return attr;
	}
	const nlattr *binary(uint16_t type, size_t len, const char *name)
	{
		const nlattr *attr = attrs[type];
		if (attr && mnl_attr_get_payload_len(attr) != len) {
			if (!failure)
				failure = invalid(EINVAL, std::string(name) + " must be " + std::to_string(len) + " bytes");
			return nullptr;
		}
		return attr;
	}
};

Expected<Peer> decode_peer(const nlattr *nest)
{
	Fields f{AttrIndex::of_nest(nest, GAPPACE_A_PEER_MAX), std::nullopt};
	const nlattr *d4 = f.binary(GAPPACE_A_PEER_DADDR_IPV4, 4, "peer DADDR_IPV4");
	const nlattr *d6 = f.binary(GAPPACE_A_PEER_DADDR_IPV6, 16, "peer DADDR_IPV6");
	const nlattr *s4 = f.binary(GAPPACE_A_PEER_SADDR_IPV4, 4, "peer SADDR_IPV4");
	const nlattr *s6 = f.binary(GAPPACE_A_PEER_SADDR_IPV6, 16, "peer SADDR_IPV6");
	const nlattr *sport = f.get(GAPPACE_A_PEER_SPORT, MNL_TYPE_U16, "peer SPORT");
	const nlattr *dport = f.get(GAPPACE_A_PEER_DPORT, MNL_TYPE_U16, "peer DPORT");
	const nlattr *rank = f.get(GAPPACE_A_PEER_RANK, MNL_TYPE_U32, "peer RANK");
	if (f.failure)
		return *f.failure;
	if (!d4 == !d6)
		return invalid(EINVAL, "a peer needs exactly one of DADDR_IPV4 and DADDR_IPV6");
	const int family = d4 ? AF_INET : AF_INET6;
	Peer peer;
	const bool any_tuple = s4 || s6 || sport || dport;
	uint16_t remote_port = 0;
	if (any_tuple) {
		if (!(s4 || s6) || !sport || !dport)
			return invalid(EINVAL, "a peer tuple needs SADDR, SPORT and DPORT together");
		if (s4 && s6)
			return invalid(EINVAL, "a peer tuple has one SADDR");
		if ((s4 ? AF_INET : AF_INET6) != family)
			return invalid(EINVAL, "a peer tuple mixes IPv4 and IPv6");
		const uint16_t local_port = ntohs(mnl_attr_get_u16(sport));
		remote_port = ntohs(mnl_attr_get_u16(dport));
		if (!local_port || !remote_port)
			return invalid(EINVAL, "a peer tuple has port 0");
		peer.local = unmapped(make_endpoint(family, mnl_attr_get_payload(s4 ? s4 : s6), local_port));
	}
	// A dual-stack socket's IPv4 connection named by its IPv4-mapped addresses is that IPv4
	// connection, as the kernel files it and the daemon's socket lookups report it.
	peer.remote = unmapped(make_endpoint(family, mnl_attr_get_payload(d4 ? d4 : d6), remote_port));
	if (peer.is_tuple() && peer.local.family != peer.remote.family)
		return invalid(EINVAL, "a peer tuple mixes IPv4 and IPv6");
	if (rank) {
		const uint32_t value = mnl_attr_get_u32(rank);
		if (value > INT32_MAX)
			return invalid(ERANGE, "peer RANK out of range");
		peer.rank = static_cast<int32_t>(value);
	}
	return peer;
}

} // namespace

size_t max_encoded_size(size_t n_peers) { return kHeaderMax + n_peers * kPeerMax; }

size_t encoded_peer_size(const Peer &peer)
{
	const size_t address = peer.remote.family == AF_INET6 ? kAttrV6 : 8;
	size_t size = kAttrNest + address + (peer.rank >= 0 ? kAttrU32 : 0);
	if (peer.is_tuple())
		size += address + 2 * 8;
	return size;
}

size_t encode(std::span<uint8_t> buf, uint16_t family_id, uint32_t seq, const Header &h, std::span<const Peer> peers)
{
	nlmsghdr *nlh = mnl_nlmsg_put_header(buf.data());
	nlh->nlmsg_type = family_id;
	nlh->nlmsg_flags = NLM_F_REQUEST; // no ACK: errors still come back, and are counted
	nlh->nlmsg_seq = seq;
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = GAPPACE_CMD_HINT;
	genl->version = GAPPACE_GENL_VERSION;
	nlattr *nest = mnl_attr_nest_start(nlh, GAPPACE_A_HINT);
	mnl_attr_put_u32(nlh, GAPPACE_A_HINT_EVENT, static_cast<uint32_t>(h.event));
	mnl_attr_put_u64(nlh, GAPPACE_A_HINT_PHASE_ID, h.phase_id);
	if (h.event == Event::Begin) {
		mnl_attr_put_u32(nlh, GAPPACE_A_HINT_KIND, h.kind);
		if (h.algorithm)
			mnl_attr_put_u32(nlh, GAPPACE_A_HINT_ALGORITHM, h.algorithm);
		if (h.flags)
			mnl_attr_put_u32(nlh, GAPPACE_A_HINT_FLAGS, h.flags);
		mnl_attr_put_u64(nlh, GAPPACE_A_HINT_BYTES_PER_PEER, h.bytes_per_peer);
		if (h.comm_size)
			mnl_attr_put_u32(nlh, GAPPACE_A_HINT_COMM_SIZE, h.comm_size);
		if (h.rank >= 0)
			mnl_attr_put_u32(nlh, GAPPACE_A_HINT_RANK, static_cast<uint32_t>(h.rank));
		if (h.repetitions)
			mnl_attr_put_u32(nlh, GAPPACE_A_HINT_REPETITIONS, h.repetitions);
		if (h.signature)
			mnl_attr_put_u64(nlh, GAPPACE_A_HINT_SIGNATURE, h.signature);
		if (h.quiet_phases) {
			mnl_attr_put_u32(nlh, GAPPACE_A_HINT_QUIET_PHASES, h.quiet_phases);
			mnl_attr_put_u64(nlh, GAPPACE_A_HINT_QUIET_NS, h.quiet_ns);
		}
	} else if (h.duration_ns) {
		mnl_attr_put_u64(nlh, GAPPACE_A_HINT_DURATION_NS, h.duration_ns);
	}
	for (const Peer &peer : peers) {
		nlattr *p = mnl_attr_nest_start(nlh, GAPPACE_A_HINT_PEER);
		put_address(nlh, GAPPACE_A_PEER_DADDR_IPV4, GAPPACE_A_PEER_DADDR_IPV6, peer.remote);
		if (peer.is_tuple()) {
			put_address(nlh, GAPPACE_A_PEER_SADDR_IPV4, GAPPACE_A_PEER_SADDR_IPV6, peer.local);
			mnl_attr_put_u16(nlh, GAPPACE_A_PEER_SPORT, htons(peer.local.port));
			mnl_attr_put_u16(nlh, GAPPACE_A_PEER_DPORT, htons(peer.remote.port));
		}
		if (peer.rank >= 0)
			mnl_attr_put_u32(nlh, GAPPACE_A_PEER_RANK, static_cast<uint32_t>(peer.rank));
		mnl_attr_nest_end(nlh, p);
	}
	mnl_attr_nest_end(nlh, nest);
	return nlh->nlmsg_len;
}

Expected<Hint> decode(const nlmsghdr *nlh, SenderStamp stamp)
{
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(genlmsghdr))
		return invalid(EINVAL, "message too short for a generic netlink header");
	const auto *genl = static_cast<const genlmsghdr *>(mnl_nlmsg_get_payload(nlh));
	if (genl->cmd != GAPPACE_CMD_HINT)
		return invalid(EOPNOTSUPP, "command " + std::to_string(genl->cmd) + " is not GAPPACE_CMD_HINT");
	// Every top-level attribute must be a valid TLV and known; the hint nest is required.
	bool malformed = mnl_attr_parse(nlh, sizeof(genlmsghdr), [](const nlattr *, void *) { return MNL_CB_OK; },
					nullptr) < 0;
	if (malformed)
		return invalid(EINVAL, "malformed attributes");
	const auto top = AttrIndex::of_message(nlh, sizeof(genlmsghdr), GAPPACE_A_MAX);
	const nlattr *nest = top[GAPPACE_A_HINT];
	if (!nest)
		return invalid(EINVAL, "missing the HINT attribute");
	if (mnl_attr_validate(nest, MNL_TYPE_NESTED) < 0)
		return invalid(EINVAL, "HINT is not a nest");
	if (mnl_attr_parse_nested(nest, [](const nlattr *, void *) { return MNL_CB_OK; }, nullptr) < 0)
		return invalid(EINVAL, "malformed attributes in HINT");

	Fields f{AttrIndex::of_nest(nest, GAPPACE_A_HINT_MAX), std::nullopt};
	const nlattr *event = f.get(GAPPACE_A_HINT_EVENT, MNL_TYPE_U32, "EVENT");
	const nlattr *phase = f.get(GAPPACE_A_HINT_PHASE_ID, MNL_TYPE_U64, "PHASE_ID");
	const nlattr *kind = f.get(GAPPACE_A_HINT_KIND, MNL_TYPE_U32, "KIND");
	const nlattr *algorithm = f.get(GAPPACE_A_HINT_ALGORITHM, MNL_TYPE_U32, "ALGORITHM");
	const nlattr *flags = f.get(GAPPACE_A_HINT_FLAGS, MNL_TYPE_U32, "FLAGS");
	const nlattr *bytes = f.get(GAPPACE_A_HINT_BYTES_PER_PEER, MNL_TYPE_U64, "BYTES_PER_PEER");
	const nlattr *comm_size = f.get(GAPPACE_A_HINT_COMM_SIZE, MNL_TYPE_U32, "COMM_SIZE");
	const nlattr *rank = f.get(GAPPACE_A_HINT_RANK, MNL_TYPE_U32, "RANK");
	const nlattr *repetitions = f.get(GAPPACE_A_HINT_REPETITIONS, MNL_TYPE_U32, "REPETITIONS");
	const nlattr *duration = f.get(GAPPACE_A_HINT_DURATION_NS, MNL_TYPE_U64, "DURATION_NS");
	const nlattr *pid = f.get(GAPPACE_A_HINT_SENDER_PID, MNL_TYPE_U32, "SENDER_PID");
	const nlattr *uid = f.get(GAPPACE_A_HINT_SENDER_UID, MNL_TYPE_U32, "SENDER_UID");
	const nlattr *netns = f.get(GAPPACE_A_HINT_SENDER_NETNS, MNL_TYPE_U32, "SENDER_NETNS");
	const nlattr *signature = f.get(GAPPACE_A_HINT_SIGNATURE, MNL_TYPE_U64, "SIGNATURE");
	const nlattr *quiet_phases = f.get(GAPPACE_A_HINT_QUIET_PHASES, MNL_TYPE_U32, "QUIET_PHASES");
	const nlattr *quiet_ns = f.get(GAPPACE_A_HINT_QUIET_NS, MNL_TYPE_U64, "QUIET_NS");
	if (f.failure)
		return *f.failure;

	Hint hint;
	Header &h = hint.header;
	if (!event)
		return invalid(EINVAL, "missing EVENT");
	const uint32_t event_value = mnl_attr_get_u32(event);
	if (event_value != GAPPACE_HINT_EVENT_BEGIN && event_value != GAPPACE_HINT_EVENT_END)
		return invalid(ERANGE, "EVENT " + std::to_string(event_value) + " is neither BEGIN (1) nor END (2)");
	h.event = static_cast<Event>(event_value);
	if (!phase)
		return invalid(EINVAL, "missing PHASE_ID");
	h.phase_id = mnl_attr_get_u64(phase);
	if (kind) {
		h.kind = mnl_attr_get_u32(kind);
		if (h.kind < 1 || h.kind > GAPPACE_HINT_KIND_MAX)
			return invalid(ERANGE, "KIND " + std::to_string(h.kind) + " is unknown");
	} else if (h.event == Event::Begin) {
		return invalid(EINVAL, "a BEGIN hint needs KIND");
	}
	if (algorithm) {
		h.algorithm = mnl_attr_get_u32(algorithm);
		if (h.algorithm > GAPPACE_HINT_ALGORITHM_MAX)
			return invalid(ERANGE, "ALGORITHM " + std::to_string(h.algorithm) + " is unknown");
	}
	if (flags) {
		h.flags = mnl_attr_get_u32(flags);
		if (h.flags & ~GAPPACE_HINT_F_ALL)
			return invalid(EINVAL, "unknown bits in FLAGS");
	}
	if (bytes)
		h.bytes_per_peer = mnl_attr_get_u64(bytes);
	if (comm_size)
		h.comm_size = mnl_attr_get_u32(comm_size);
	if (rank) {
		const uint32_t value = mnl_attr_get_u32(rank);
		if (value > INT32_MAX)
			return invalid(ERANGE, "RANK out of range");
		h.rank = static_cast<int32_t>(value);
	}
	if (repetitions)
		h.repetitions = mnl_attr_get_u32(repetitions);
	if (duration)
		h.duration_ns = mnl_attr_get_u64(duration);
	if (signature)
		h.signature = mnl_attr_get_u64(signature);
	if (!quiet_phases != !quiet_ns)
		return invalid(EINVAL, "a quiet summary needs both QUIET_PHASES and QUIET_NS");
	if (quiet_phases) {
		h.quiet_phases = mnl_attr_get_u32(quiet_phases);
		if (!h.quiet_phases)
			return invalid(ERANGE, "QUIET_PHASES must be at least 1");
		h.quiet_ns = mnl_attr_get_u64(quiet_ns);
	}

	const bool stamped = pid || uid || netns;
	if (stamp == SenderStamp::Forbidden && stamped)
		return invalid(EINVAL, "the sender stamp (SENDER_PID/UID/NETNS) is set by the carrier, not the sender");
	if (stamp == SenderStamp::Required) {
		if (!pid || !uid || !netns)
			return invalid(EINVAL, "a hint from the kernel lacks the sender stamp");
		hint.sender = Sender{mnl_attr_get_u32(pid), mnl_attr_get_u32(uid), mnl_attr_get_u32(netns)};
	}

	// Peers: a repeated attribute, so walk the nest rather than index it.
	struct Walk {
		std::vector<Peer> *peers;
		std::optional<Error> failure;
	} walk{&hint.peers, std::nullopt};
	mnl_attr_parse_nested(nest, [](const nlattr *attr, void *data) -> int {
		auto &w = *static_cast<Walk *>(data);
		if (mnl_attr_get_type(attr) != GAPPACE_A_HINT_PEER)
			return MNL_CB_OK;
		if (w.peers->size() >= GAPPACE_HINT_MAX_PEERS) {
			w.failure = invalid(E2BIG, "more than " + std::to_string(GAPPACE_HINT_MAX_PEERS) + " peers");
			return MNL_CB_ERROR;
		}
		if (mnl_attr_validate(attr, MNL_TYPE_NESTED) < 0) {
			w.failure = invalid(EINVAL, "PEER is not a nest");
			return MNL_CB_ERROR;
		}
		auto peer = decode_peer(attr);
		if (!peer) {
			w.failure = peer.error();
			return MNL_CB_ERROR;
		}
		w.peers->push_back(*peer);
		return MNL_CB_OK;
	}, &walk);
	if (walk.failure)
		return *walk.failure;
	return hint;
}

size_t encode_advice(std::span<uint8_t> buf, uint32_t seq, const Advice &advice)
{
	nlmsghdr *nlh = mnl_nlmsg_put_header(buf.data());
	nlh->nlmsg_type = 0; // the socket carrier has no family id
	nlh->nlmsg_seq = seq;
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = GAPPACE_CMD_HINT_ADVICE;
	genl->version = GAPPACE_GENL_VERSION;
	nlattr *nest = mnl_attr_nest_start(nlh, GAPPACE_A_ADVICE);
	mnl_attr_put_u64(nlh, GAPPACE_A_ADVICE_SIGNATURE, advice.signature);
	mnl_attr_put_u32(nlh, GAPPACE_A_ADVICE_QUIET_MS, advice.quiet_ms);
	if (advice.quiet_summary)
		mnl_attr_put(nlh, GAPPACE_A_ADVICE_QUIET_SUMMARY, 0, nullptr);
	mnl_attr_nest_end(nlh, nest);
	return nlh->nlmsg_len;
}

Expected<Advice> decode_advice(const nlmsghdr *nlh)
{
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(genlmsghdr))
		return invalid(EINVAL, "message too short for a generic netlink header");
	const auto *genl = static_cast<const genlmsghdr *>(mnl_nlmsg_get_payload(nlh));
	if (genl->cmd != GAPPACE_CMD_HINT_ADVICE)
		return invalid(EOPNOTSUPP, "command " + std::to_string(genl->cmd) + " is not GAPPACE_CMD_HINT_ADVICE");
	if (mnl_attr_parse(nlh, sizeof(genlmsghdr), [](const nlattr *, void *) { return MNL_CB_OK; }, nullptr) < 0)
		return invalid(EINVAL, "malformed attributes");
	const nlattr *nest = AttrIndex::of_message(nlh, sizeof(genlmsghdr), GAPPACE_A_MAX)[GAPPACE_A_ADVICE];
	if (!nest)
		return invalid(EINVAL, "missing the ADVICE attribute");
	if (mnl_attr_validate(nest, MNL_TYPE_NESTED) < 0 ||
	    mnl_attr_parse_nested(nest, [](const nlattr *, void *) { return MNL_CB_OK; }, nullptr) < 0)
		return invalid(EINVAL, "malformed attributes in ADVICE");
	Fields f{AttrIndex::of_nest(nest, GAPPACE_A_ADVICE_MAX), std::nullopt};
	const nlattr *signature = f.get(GAPPACE_A_ADVICE_SIGNATURE, MNL_TYPE_U64, "SIGNATURE");
	const nlattr *quiet = f.get(GAPPACE_A_ADVICE_QUIET_MS, MNL_TYPE_U32, "QUIET_MS");
	const nlattr *summary = f.get(GAPPACE_A_ADVICE_QUIET_SUMMARY, MNL_TYPE_FLAG, "QUIET_SUMMARY");
	if (f.failure)
		return *f.failure;
	if (!signature || !quiet)
		return invalid(EINVAL, "ADVICE needs SIGNATURE and QUIET_MS");
	return Advice{mnl_attr_get_u64(signature), mnl_attr_get_u32(quiet), summary != nullptr};
}

const char *kind_name(uint32_t kind) { return kind < kKindNames.size() ? kKindNames[kind] : nullptr; }

uint32_t kind_from_name(std::string_view name)
{
	for (uint32_t k = 1; k < kKindNames.size(); ++k)
		if (name == kKindNames[k])
			return k;
	return 0;
}

const char *algorithm_name(uint32_t algorithm)
{
	return algorithm < kAlgorithmNames.size() ? kAlgorithmNames[algorithm] : nullptr;
}

uint32_t algorithm_from_name(std::string_view name)
{
	for (uint32_t a = 0; a < kAlgorithmNames.size(); ++a)
		if (name == kAlgorithmNames[a])
			return a;
	return UINT32_MAX;
}

const char *event_name(Event event) { return event == Event::Begin ? "begin" : "end"; }

} // namespace gp::hint
