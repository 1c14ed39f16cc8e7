#include "messages.hpp"

#include <arpa/inet.h>
#include <linux/gen_stats.h>
#include <linux/genetlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gp {
namespace {

Error missing(std::string_view what)
{
	return make_error(EBADMSG, std::string(what) + " missing in kernel reply");
}

// ------------------------------------------------------------------ qdisc helpers

tcmsg *put_tcmsg(RequestBuffer &buf, uint16_t type, uint16_t flags, uint32_t ifindex)
{
	nlmsghdr *nlh = buf.nlh();
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	auto *tcm = static_cast<tcmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg)));
	tcm->tcm_family = AF_UNSPEC;
	tcm->tcm_ifindex = static_cast<int>(ifindex);
	tcm->tcm_parent = TC_H_ROOT;
	return tcm;
}

void put_qdisc_options(RequestBuffer &buf, const QdiscOptions &options)
{
	nlmsghdr *nlh = buf.nlh();
	mnl_attr_put_strz(nlh, TCA_KIND, GAPPACE_QDISC_KIND);
	// NLA_F_NESTED as tc sets it for modern qdiscs: a strict parser insists on it.
	nlattr *nest = mnl_attr_nest_start(nlh, TCA_OPTIONS | NLA_F_NESTED);
	if (options.linkrate)
		mnl_attr_put_u64(nlh, TCA_GAPPACE_LINKRATE, *options.linkrate);
	if (options.ifg)
		mnl_attr_put_u32(nlh, TCA_GAPPACE_IFG, *options.ifg);
	if (options.limit)
		mnl_attr_put_u32(nlh, TCA_GAPPACE_LIMIT, *options.limit);
	if (options.lookahead_ns)
		mnl_attr_put_u32(nlh, TCA_GAPPACE_LOOKAHEAD, *options.lookahead_ns);
	mnl_attr_nest_end(nlh, nest);
}

Expected<void> decode_qdisc_options(const nlattr *nest, QdiscOptions &options)
{
	const auto attrs = AttrIndex::of_nest(nest, TCA_GAPPACE_MAX);
	auto linkrate = checked_attr(attrs, TCA_GAPPACE_LINKRATE, MNL_TYPE_U64, "TCA_GAPPACE_LINKRATE");
	auto ifg = checked_attr(attrs, TCA_GAPPACE_IFG, MNL_TYPE_U32, "TCA_GAPPACE_IFG");
	auto limit = checked_attr(attrs, TCA_GAPPACE_LIMIT, MNL_TYPE_U32, "TCA_GAPPACE_LIMIT");
	// Absent from modules older than the option: left unset.
	auto lookahead = checked_attr(attrs, TCA_GAPPACE_LOOKAHEAD, MNL_TYPE_U32, "TCA_GAPPACE_LOOKAHEAD");
	for (const auto *checked : {&linkrate, &ifg, &limit, &lookahead})
		if (!*checked)
			return checked->error();
	if (*linkrate)
		options.linkrate = mnl_attr_get_u64(*linkrate);
	if (*ifg)
		options.ifg = mnl_attr_get_u32(*ifg);
	if (*limit)
		options.limit = mnl_attr_get_u32(*limit);
	if (*lookahead)
		options.lookahead_ns = mnl_attr_get_u32(*lookahead);
	return {};
}

QdiscXstats copy_xstats(const nlattr *attr)
{
	QdiscXstats xstats;
	xstats.received_len = std::min<size_t>(mnl_attr_get_payload_len(attr), sizeof(xstats.values));
	std::memcpy(&xstats.values, mnl_attr_get_payload(attr), xstats.received_len);
	return xstats;
}

// The application statistics: TCA_STATS2/TCA_STATS_APP, or the legacy TCA_XSTATS copy.
std::optional<QdiscXstats> find_xstats(const AttrIndex &attrs)
{
	if (const nlattr *stats2 = attrs[TCA_STATS2]; stats2 && mnl_attr_validate(stats2, MNL_TYPE_NESTED) == 0) {
		const auto stats = AttrIndex::of_nest(stats2, TCA_STATS_MAX);
		if (const nlattr *app = stats[TCA_STATS_APP])
			return copy_xstats(app);
	}
	if (const nlattr *xstats = attrs[TCA_XSTATS])
		return copy_xstats(xstats);
	return std::nullopt;
}

// ------------------------------------------------------------------ genl helpers

nlmsghdr *put_genl_header(RequestBuffer &buf, uint16_t family_id, uint8_t cmd, uint16_t flags)
{
	nlmsghdr *nlh = buf.nlh();
	nlh->nlmsg_type = family_id;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = cmd;
	genl->version = GAPPACE_GENL_VERSION;
	return nlh;
}

// {IFINDEX, RULE{DST_IPVx, PREFIX_LEN[, RATE]}}
void put_rule(nlmsghdr *nlh, uint32_t ifindex, const Prefix &dst, std::optional<uint64_t> rate,
	      std::optional<uint32_t> group = std::nullopt)
{
	mnl_attr_put_u32(nlh, GAPPACE_A_IFINDEX, ifindex);
	// Generic netlink validates strictly: a nest without NLA_F_NESTED is rejected.
	nlattr *rule = mnl_attr_nest_start(nlh, GAPPACE_A_RULE | NLA_F_NESTED);
	const uint16_t dst_type = dst.family == AF_INET6 ? GAPPACE_A_RULE_DST_IPV6 : GAPPACE_A_RULE_DST_IPV4;
	mnl_attr_put(nlh, dst_type, dst.address_size(), dst.address.data());
	mnl_attr_put_u8(nlh, GAPPACE_A_RULE_PREFIX_LEN, dst.length);
	if (rate)
		mnl_attr_put_u64(nlh, GAPPACE_A_RULE_RATE, *rate);
	if (group)
		mnl_attr_put_u32(nlh, GAPPACE_A_RULE_GROUP, *group);
	mnl_attr_nest_end(nlh, rule);
}

Expected<Counters> decode_counters(const nlattr *nest)
{
	if (mnl_attr_validate(nest, MNL_TYPE_NESTED) < 0)
		return make_error(EBADMSG, "malformed statistics nest in kernel reply");
	const auto attrs = AttrIndex::of_nest(nest, GAPPACE_A_STATS_MAX);
	Counters counters;
	for (const auto &field : kCounterFields) {
		auto attr = checked_attr(attrs, field.attr, field.type, field.key);
		if (!attr)
			return attr.error();
		if (*attr)
			counters.by_attr[field.attr] =
				field.type == MNL_TYPE_U64 ? mnl_attr_get_u64(*attr) : mnl_attr_get_u32(*attr);
	}
	return counters;
}

Expected<uint32_t> decode_ifindex(const AttrIndex &attrs)
{
	auto ifindex = checked_attr(attrs, GAPPACE_A_IFINDEX, MNL_TYPE_U32, "GAPPACE_A_IFINDEX");
	if (!ifindex)
		return ifindex.error();
	if (!*ifindex)
		return missing("GAPPACE_A_IFINDEX");
	return mnl_attr_get_u32(*ifindex);
}

Expected<Prefix> decode_rule_dst(const AttrIndex &rule)
{
	auto v4 = checked_binary_attr(rule, GAPPACE_A_RULE_DST_IPV4, 4, "GAPPACE_A_RULE_DST_IPV4");
	auto v6 = checked_binary_attr(rule, GAPPACE_A_RULE_DST_IPV6, 16, "GAPPACE_A_RULE_DST_IPV6");
	auto len = checked_attr(rule, GAPPACE_A_RULE_PREFIX_LEN, MNL_TYPE_U8, "GAPPACE_A_RULE_PREFIX_LEN");
	for (const auto *checked : {&v4, &v6, &len})
		if (!*checked)
			return checked->error();
	if (!*v4 && !*v6)
		return missing("GAPPACE_A_RULE_DST_IPV4/IPV6");
	const int family = *v6 ? AF_INET6 : AF_INET;
	const nlattr *address = *v6 ? *v6 : *v4;
	Prefix dst = make_prefix(family, mnl_attr_get_payload(address), 0);
	dst.length = *len ? mnl_attr_get_u8(*len) : dst.max_length();
	if (dst.length > dst.max_length())
		return make_error(EBADMSG, "malformed GAPPACE_A_RULE_PREFIX_LEN in kernel reply");
	return dst;
}

// The address (and port) attributes of one end of a connection.
struct EndpointAttrs {
	uint16_t ipv4, ipv6, port;
	std::string_view ipv4_name, ipv6_name, port_name;
};
constexpr EndpointAttrs kLocalAttrs{GAPPACE_A_RTO_SADDR_IPV4, GAPPACE_A_RTO_SADDR_IPV6, GAPPACE_A_RTO_SPORT,
				    "GAPPACE_A_RTO_SADDR_IPV4", "GAPPACE_A_RTO_SADDR_IPV6", "GAPPACE_A_RTO_SPORT"};
constexpr EndpointAttrs kPeerAttrs{GAPPACE_A_RTO_DADDR_IPV4, GAPPACE_A_RTO_DADDR_IPV6, GAPPACE_A_RTO_DPORT,
				   "GAPPACE_A_RTO_DADDR_IPV4", "GAPPACE_A_RTO_DADDR_IPV6", "GAPPACE_A_RTO_DPORT"};

// ADDR_IPVx, and the port (be16) unless it is 0 (a peer address alone).
void put_endpoint(nlmsghdr *nlh, const EndpointAttrs &attrs, const Endpoint &endpoint)
{
	const uint16_t type = endpoint.family == AF_INET6 ? attrs.ipv6 : attrs.ipv4;
	mnl_attr_put(nlh, type, endpoint.address_size(), endpoint.address.data());
	if (endpoint.port != 0)
		mnl_attr_put_u16(nlh, attrs.port, htons(endpoint.port));
}

// Opens the GAPPACE_A_RTO nest and puts the connection (or the peer address) into it.
nlattr *start_rto(nlmsghdr *nlh, const RtoTarget &target)
{
	// Generic netlink validates strictly: a nest without NLA_F_NESTED is rejected.
	nlattr *rto = mnl_attr_nest_start(nlh, GAPPACE_A_RTO | NLA_F_NESTED);
	if (target.local)
		put_endpoint(nlh, kLocalAttrs, *target.local);
	Endpoint peer = target.peer;
	if (!target.local)
		peer.port = 0; // "peer ADDR": every connection to the address, whatever its port
	put_endpoint(nlh, kPeerAttrs, peer);
	return rto;
}

// One end of a connection in a reply: nullopt if the kernel sent no address for it.
Expected<std::optional<Endpoint>> decode_endpoint(const AttrIndex &rto, const EndpointAttrs &attrs)
{
	auto v4 = checked_binary_attr(rto, attrs.ipv4, 4, attrs.ipv4_name);
	auto v6 = checked_binary_attr(rto, attrs.ipv6, 16, attrs.ipv6_name);
	auto port = checked_attr(rto, attrs.port, MNL_TYPE_U16, attrs.port_name);
	for (const auto *checked : {&v4, &v6, &port})
		if (!*checked)
			return checked->error();
	if (!*v4 && !*v6)
		return std::optional<Endpoint>();
	const int family = *v6 ? AF_INET6 : AF_INET;
	const nlattr *address = *v6 ? *v6 : *v4;
	const uint16_t number = *port ? ntohs(mnl_attr_get_u16(*port)) : 0;
	return std::optional<Endpoint>(make_endpoint(family, mnl_attr_get_payload(address), number));
}

} // namespace

// ------------------------------------------------------------------ field tables

#define GP_XSTATS_FIELD(name, is_rate) \
	XstatsField{#name, offsetof(tc_gappace_xstats, name), sizeof(tc_gappace_xstats::name), is_rate}

// In display order: the configuration and state first, then the counters.
const std::array<XstatsField, 17> kXstatsFields{{
	GP_XSTATS_FIELD(linkrate, true),
	GP_XSTATS_FIELD(rules, false),
	GP_XSTATS_FIELD(ifg, false),
	GP_XSTATS_FIELD(limit, false),
	GP_XSTATS_FIELD(qlen, false),
	GP_XSTATS_FIELD(data_packets, false),
	GP_XSTATS_FIELD(data_bytes, false),
	GP_XSTATS_FIELD(data_wire_bytes, false),
	GP_XSTATS_FIELD(gap_frames, false),
	GP_XSTATS_FIELD(gap_bytes, false),
	GP_XSTATS_FIELD(gap_wire_bytes, false),
	GP_XSTATS_FIELD(paced_packets, false),
	GP_XSTATS_FIELD(gso_segmented, false),
	GP_XSTATS_FIELD(drops, false),
	GP_XSTATS_FIELD(idle_resyncs, false),
	GP_XSTATS_FIELD(gap_alloc_failures, false),
	GP_XSTATS_FIELD(lookahead_waits, false),
}};
#undef GP_XSTATS_FIELD

uint64_t xstats_field_value(const QdiscXstats &xstats, const XstatsField &field)
{
	const auto *base = reinterpret_cast<const unsigned char *>(&xstats.values) + field.offset;
	if (field.size == sizeof(uint32_t)) {
		uint32_t value;
		std::memcpy(&value, base, sizeof(value));
		return value;
	}
	uint64_t value;
	std::memcpy(&value, base, sizeof(value));
	return value;
}

const std::array<CounterField, 13> kCounterFields{{
	{GAPPACE_A_STATS_DATA_PACKETS, "data_packets", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_DATA_BYTES, "data_bytes", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_DATA_WIRE_BYTES, "data_wire_bytes", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_GAP_FRAMES, "gap_frames", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_GAP_BYTES, "gap_bytes", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_GAP_WIRE_BYTES, "gap_wire_bytes", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_DROPS, "drops", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_ACHIEVED_RATE, "achieved_rate", MNL_TYPE_U64, true},
	{GAPPACE_A_STATS_BACKLOG, "backlog", MNL_TYPE_U32, false},
	{GAPPACE_A_STATS_PACED_PACKETS, "paced_packets", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_GSO_SEGMENTED, "gso_segmented", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_IDLE_RESYNCS, "idle_resyncs", MNL_TYPE_U64, false},
	{GAPPACE_A_STATS_GAP_ALLOC_FAILURES, "gap_alloc_failures", MNL_TYPE_U64, false},
}};

const std::array<RtoField, 12> kRtoFields{{
	{GAPPACE_A_RTO_RTO_MIN_US, "rto_min_us"},
	{GAPPACE_A_RTO_DELACK_MAX_US, "delack_max_us"},
	{GAPPACE_A_RTO_TTL_MS, "ttl_ms"},
	{GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US, "effective_rto_min_us"},
	{GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US, "effective_delack_max_us"},
	{GAPPACE_A_RTO_ORIG_RTO_MIN_US, "orig_rto_min_us"},
	{GAPPACE_A_RTO_ORIG_DELACK_MAX_US, "orig_delack_max_us"},
	{GAPPACE_A_RTO_RTO_US, "rto_us"},
	{GAPPACE_A_RTO_OWNER_PORTID, "owner_portid"},
	{GAPPACE_A_RTO_OWNER_PID, "owner_pid"},
	{GAPPACE_A_RTO_TTL_LEFT_MS, "ttl_left_ms"},
	{GAPPACE_A_RTO_COUNT, "count"},
}};

// ------------------------------------------------------------------ qdisc encoders

void encode_qdisc_attach(RequestBuffer &buf, uint32_t ifindex, const QdiscOptions &options)
{
	put_tcmsg(buf, RTM_NEWQDISC, NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, ifindex);
	put_qdisc_options(buf, options);
}

void encode_qdisc_change(RequestBuffer &buf, uint32_t ifindex, const QdiscOptions &options)
{
	// Without NLM_F_CREATE the kernel only changes an existing root qdisc, and TCA_KIND
	// makes it refuse ("Invalid qdisc name") if that qdisc is not gappace.
	put_tcmsg(buf, RTM_NEWQDISC, NLM_F_ACK, ifindex);
	put_qdisc_options(buf, options);
}

void encode_root_qdisc_delete(RequestBuffer &buf, uint32_t ifindex, uint32_t handle)
{
	put_tcmsg(buf, RTM_DELQDISC, NLM_F_ACK, ifindex)->tcm_handle = handle;
}

void encode_qdisc_dump(RequestBuffer &buf)
{
	put_tcmsg(buf, RTM_GETQDISC, NLM_F_DUMP, 0)->tcm_parent = 0;
}

// ------------------------------------------------------------------ qdisc decoder

Expected<QdiscInfo> decode_qdisc(const nlmsghdr *nlh)
{
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(tcmsg))
		return make_error(EBADMSG, "truncated qdisc message in kernel reply");
	const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(nlh));
	QdiscInfo info;
	info.ifindex = static_cast<uint32_t>(tcm->tcm_ifindex);
	info.handle = tcm->tcm_handle;
	info.parent = tcm->tcm_parent;

	const auto attrs = AttrIndex::of_message(nlh, sizeof(tcmsg), TCA_MAX);
	auto kind = checked_attr(attrs, TCA_KIND, MNL_TYPE_NUL_STRING, "TCA_KIND");
	if (!kind)
		return kind.error();
	if (*kind)
		info.kind = mnl_attr_get_str(*kind);
	if (!info.is_gappace())
		return info; // someone else's qdisc: its options mean nothing to us

	auto options = checked_attr(attrs, TCA_OPTIONS, MNL_TYPE_NESTED, "TCA_OPTIONS");
	if (!options)
		return options.error();
	if (*options) {
		if (auto decoded = decode_qdisc_options(*options, info.options); !decoded)
			return decoded.error();
	}
	info.xstats = find_xstats(attrs);
	return info;
}

// ------------------------------------------------------------------ genl encoders

void encode_rule_new(RequestBuffer &buf, uint16_t family_id, uint32_t ifindex, const Prefix &dst, uint64_t rate,
		     bool replace, std::optional<uint32_t> group)
{
	// Generic netlink has no create/replace flags (they alias the dump flags and strict
	// families refuse them): adding and replacing are two commands.
	const uint8_t cmd = replace ? GAPPACE_CMD_RULE_SET : GAPPACE_CMD_RULE_NEW;
	put_rule(put_genl_header(buf, family_id, cmd, NLM_F_ACK), ifindex, dst, rate, group);
}

void encode_rule_del(RequestBuffer &buf, uint16_t family_id, uint32_t ifindex, const Prefix &dst)
{
	put_rule(put_genl_header(buf, family_id, GAPPACE_CMD_RULE_DEL, NLM_F_ACK), ifindex, dst, std::nullopt);
}

void encode_rule_dump(RequestBuffer &buf, uint16_t family_id, std::optional<uint32_t> ifindex)
{
	nlmsghdr *nlh = put_genl_header(buf, family_id, GAPPACE_CMD_RULE_GET, NLM_F_DUMP);
	if (ifindex)
		mnl_attr_put_u32(nlh, GAPPACE_A_IFINDEX, *ifindex);
}

void encode_stats_get(RequestBuffer &buf, uint16_t family_id, uint32_t ifindex)
{
	nlmsghdr *nlh = put_genl_header(buf, family_id, GAPPACE_CMD_STATS_GET, NLM_F_ACK);
	mnl_attr_put_u32(nlh, GAPPACE_A_IFINDEX, ifindex);
}

void encode_stats_dump(RequestBuffer &buf, uint16_t family_id)
{
	put_genl_header(buf, family_id, GAPPACE_CMD_STATS_GET, NLM_F_DUMP);
}

// ------------------------------------------------------------------ genl decoders

Expected<RuleInfo> decode_rule(const nlmsghdr *nlh)
{
	const auto attrs = AttrIndex::of_message(nlh, sizeof(genlmsghdr), GAPPACE_A_MAX);
	RuleInfo info;
	auto ifindex = decode_ifindex(attrs);
	if (!ifindex)
		return ifindex.error();
	info.ifindex = *ifindex;

	auto rule_nest = checked_attr(attrs, GAPPACE_A_RULE, MNL_TYPE_NESTED, "GAPPACE_A_RULE");
	if (!rule_nest)
		return rule_nest.error();
	if (!*rule_nest)
		return missing("GAPPACE_A_RULE");
	const auto rule = AttrIndex::of_nest(*rule_nest, GAPPACE_A_RULE_MAX);

	auto dst = decode_rule_dst(rule);
	if (!dst)
		return dst.error();
	info.dst = *dst;

	auto rate = checked_attr(rule, GAPPACE_A_RULE_RATE, MNL_TYPE_U64, "GAPPACE_A_RULE_RATE");
	if (!rate)
		return rate.error();
	if (*rate)
		info.rate = mnl_attr_get_u64(*rate);
	auto group = checked_attr(rule, GAPPACE_A_RULE_GROUP, MNL_TYPE_U32, "GAPPACE_A_RULE_GROUP");
	if (!group)
		return group.error();
	if (*group)
		info.group = mnl_attr_get_u32(*group);

	if (const nlattr *stats = rule[GAPPACE_A_RULE_STATS]) {
		auto counters = decode_counters(stats);
		if (!counters)
			return counters.error();
		info.stats = *counters;
	}
	return info;
}

Expected<DeviceStats> decode_device_stats(const nlmsghdr *nlh)
{
	const auto attrs = AttrIndex::of_message(nlh, sizeof(genlmsghdr), GAPPACE_A_MAX);
	DeviceStats info;
	auto ifindex = decode_ifindex(attrs);
	if (!ifindex)
		return ifindex.error();
	info.ifindex = *ifindex;

	auto qdisc_nest = checked_attr(attrs, GAPPACE_A_QDISC, MNL_TYPE_NESTED, "GAPPACE_A_QDISC");
	if (!qdisc_nest)
		return qdisc_nest.error();
	if (!*qdisc_nest)
		return missing("GAPPACE_A_QDISC");
	const auto qdisc = AttrIndex::of_nest(*qdisc_nest, GAPPACE_A_QDISC_MAX);

	auto linkrate = checked_attr(qdisc, GAPPACE_A_QDISC_LINKRATE, MNL_TYPE_U64, "GAPPACE_A_QDISC_LINKRATE");
	auto linkrate_auto = checked_attr(qdisc, GAPPACE_A_QDISC_LINKRATE_AUTO, MNL_TYPE_FLAG,
					  "GAPPACE_A_QDISC_LINKRATE_AUTO");
	auto ifg = checked_attr(qdisc, GAPPACE_A_QDISC_IFG, MNL_TYPE_U32, "GAPPACE_A_QDISC_IFG");
	auto limit = checked_attr(qdisc, GAPPACE_A_QDISC_LIMIT, MNL_TYPE_U32, "GAPPACE_A_QDISC_LIMIT");
	auto rules = checked_attr(qdisc, GAPPACE_A_QDISC_RULES, MNL_TYPE_U32, "GAPPACE_A_QDISC_RULES");
	for (const auto *checked : {&linkrate, &linkrate_auto, &ifg, &limit, &rules})
		if (!*checked)
			return checked->error();
	if (*linkrate)
		info.linkrate = mnl_attr_get_u64(*linkrate);
	info.linkrate_auto = *linkrate_auto != nullptr;
	if (*ifg)
		info.ifg = mnl_attr_get_u32(*ifg);
	if (*limit)
		info.limit = mnl_attr_get_u32(*limit);
	if (*rules)
		info.rules = mnl_attr_get_u32(*rules);

	if (const nlattr *stats = qdisc[GAPPACE_A_QDISC_STATS]) {
		auto counters = decode_counters(stats);
		if (!counters)
			return counters.error();
		info.stats = *counters;
	}
	return info;
}

// ------------------------------------------------------------------ RTO overrides

void encode_rto_set(RequestBuffer &buf, uint16_t family_id, const RtoTarget &target, const RtoSettings &settings)
{
	// NLM_F_ACK: the kernel answers with its reply (what it applied), then the ACK.
	nlmsghdr *nlh = put_genl_header(buf, family_id, GAPPACE_CMD_RTO_SET, NLM_F_ACK);
	nlattr *rto = start_rto(nlh, target);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_RTO_MIN_US, settings.rto_min_us);
	if (settings.delack_max_us)
		mnl_attr_put_u32(nlh, GAPPACE_A_RTO_DELACK_MAX_US, *settings.delack_max_us);
	if (settings.ttl_ms)
		mnl_attr_put_u32(nlh, GAPPACE_A_RTO_TTL_MS, *settings.ttl_ms);
	mnl_attr_nest_end(nlh, rto);
}

void encode_rto_clear(RequestBuffer &buf, uint16_t family_id, const RtoTarget &target)
{
	nlmsghdr *nlh = put_genl_header(buf, family_id, GAPPACE_CMD_RTO_CLEAR, NLM_F_ACK);
	mnl_attr_nest_end(nlh, start_rto(nlh, target));
}

void encode_rto_dump(RequestBuffer &buf, uint16_t family_id)
{
	put_genl_header(buf, family_id, GAPPACE_CMD_RTO_GET, NLM_F_DUMP);
}

Expected<RtoInfo> decode_rto(const nlmsghdr *nlh)
{
	const auto attrs = AttrIndex::of_message(nlh, sizeof(genlmsghdr), GAPPACE_A_MAX);
	auto rto_nest = checked_attr(attrs, GAPPACE_A_RTO, MNL_TYPE_NESTED, "GAPPACE_A_RTO");
	if (!rto_nest)
		return rto_nest.error();
	if (!*rto_nest)
		return missing("GAPPACE_A_RTO");
	const auto rto = AttrIndex::of_nest(*rto_nest, GAPPACE_A_RTO_MAX);

	RtoInfo info;
	auto local = decode_endpoint(rto, kLocalAttrs);
	if (!local)
		return local.error();
	info.local = *local;
	auto peer = decode_endpoint(rto, kPeerAttrs);
	if (!peer)
		return peer.error();
	info.peer = *peer;

	for (const auto &field : kRtoFields) {
		auto attr = checked_attr(rto, field.attr, MNL_TYPE_U32, field.key);
		if (!attr)
			return attr.error();
		if (*attr)
			info.values[field.attr] = mnl_attr_get_u32(*attr);
	}
	return info;
}

} // namespace gp
