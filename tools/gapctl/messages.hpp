// gappace's messages: the qdisc over rtnetlink and the "gappace" generic netlink family.
// Encoders write a request into a RequestBuffer; decoders turn one reply message into a
// plain struct. No I/O here, so both directions are unit-tested with in-memory messages.
#pragma once

#include <linux/gappace.h>
#include <linux/pkt_sched.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "endpoint.hpp"
#include "expected.hpp"
#include "netlink.hpp"
#include "prefix.hpp"

namespace gp {

// ------------------------------------------------------------------ qdisc (rtnetlink)

// TCA_OPTIONS of the qdisc. Only options that are set are sent: the kernel keeps its
// defaults (or, on change, the current values) for the others.
struct QdiscOptions {
	std::optional<uint64_t> linkrate; // bit/s; 0 = follow the device ("auto")
	std::optional<uint32_t> ifg;	  // bytes
	std::optional<uint32_t> limit;	  // packets
	std::optional<uint32_t> lookahead_ns; // 0 = unbounded (the device pushes back)

	bool empty() const { return !linkrate && !ifg && !limit && !lookahead_ns; }
	bool operator==(const QdiscOptions &) const = default;
};

// RTM_NEWQDISC creating or replacing the root qdisc (tc qdisc replace ... root gappace).
void encode_qdisc_attach(RequestBuffer &buf, uint32_t ifindex, const QdiscOptions &options);
// RTM_NEWQDISC changing the options of the root gappace qdisc; fails if it is something else.
void encode_qdisc_change(RequestBuffer &buf, uint32_t ifindex, const QdiscOptions &options);
// RTM_DELQDISC of the root qdisc; `handle` makes the kernel refuse if the root changed meanwhile.
void encode_root_qdisc_delete(RequestBuffer &buf, uint32_t ifindex, uint32_t handle);
// RTM_GETQDISC dump of every qdisc of the netns.
void encode_qdisc_dump(RequestBuffer &buf);

// tc_gappace_xstats as received. The kernel may send a shorter (older) or longer (newer)
// struct: we keep min(len, sizeof) bytes and remember how many, so that fields the kernel
// did not send are not shown as zeros.
struct QdiscXstats {
	tc_gappace_xstats values{};
	size_t received_len = 0;

	bool has_field(size_t offset, size_t size) const { return offset + size <= received_len; }
};

// Describes one field of tc_gappace_xstats for printing; `key` is the field name.
struct XstatsField {
	std::string_view key;
	size_t offset;
	size_t size; // 4 or 8
	bool is_rate;
};
extern const std::array<XstatsField, 17> kXstatsFields;
uint64_t xstats_field_value(const QdiscXstats &xstats, const XstatsField &field);

struct QdiscInfo {
	uint32_t ifindex = 0;
	uint32_t handle = 0;
	uint32_t parent = 0;
	std::string kind;
	QdiscOptions options;		   // as the kernel reports them (gappace only)
	std::optional<QdiscXstats> xstats; // gappace only

	bool is_root() const { return parent == TC_H_ROOT; }
	bool is_gappace() const { return kind == GAPPACE_QDISC_KIND; }
};

Expected<QdiscInfo> decode_qdisc(const nlmsghdr *nlh);

// ------------------------------------------------------------------ generic netlink

// `group`: the rule shares the schedule of the other rules of that group (GAPPACE_A_RULE_GROUP).
void encode_rule_new(RequestBuffer &buf, uint16_t family_id, uint32_t ifindex, const Prefix &dst, uint64_t rate,
		     bool replace, std::optional<uint32_t> group = std::nullopt);
void encode_rule_del(RequestBuffer &buf, uint16_t family_id, uint32_t ifindex, const Prefix &dst);
// Dump of the rules of one device, or of every device when ifindex is nullopt.
void encode_rule_dump(RequestBuffer &buf, uint16_t family_id, std::optional<uint32_t> ifindex);
void encode_stats_get(RequestBuffer &buf, uint16_t family_id, uint32_t ifindex);
void encode_stats_dump(RequestBuffer &buf, uint16_t family_id);

// Describes one GAPPACE_A_STATS_* counter; `key` is the attribute name, lowercased, without prefix.
struct CounterField {
	uint16_t attr;
	std::string_view key;
	mnl_attr_data_type type; // MNL_TYPE_U64 or MNL_TYPE_U32
	bool is_rate;		 // bit/s: printed with units in text output
};
extern const std::array<CounterField, 13> kCounterFields;

// The counters of a GAPPACE_A_*_STATS nest, indexed by attribute type; absent ones are nullopt.
struct Counters {
	std::array<std::optional<uint64_t>, GAPPACE_A_STATS_MAX + 1> by_attr{};

	const std::optional<uint64_t> &operator[](uint16_t attr) const { return by_attr.at(attr); }
};

// One reply message of GAPPACE_CMD_RULE_GET.
struct RuleInfo {
	uint32_t ifindex = 0;
	Prefix dst;
	std::optional<uint64_t> rate;
	std::optional<uint32_t> group; // shares its group's schedule (and counters)
	std::optional<Counters> stats;
};

// One reply message of GAPPACE_CMD_STATS_GET: {IFINDEX, QDISC{...}}.
struct DeviceStats {
	uint32_t ifindex = 0;
	std::optional<uint64_t> linkrate;
	bool linkrate_auto = false;
	std::optional<uint32_t> ifg;
	std::optional<uint32_t> limit;
	std::optional<uint32_t> rules;
	std::optional<Counters> stats;
};

Expected<RuleInfo> decode_rule(const nlmsghdr *nlh);
Expected<DeviceStats> decode_device_stats(const nlmsghdr *nlh);

// ------------------------------------------------------------------ RTO overrides (generic netlink)

// What RTO_SET / RTO_CLEAR act on: one connection (local and peer end, as ss shows it), or
// every established connection to a peer address (local absent, peer.port 0).
struct RtoTarget {
	std::optional<Endpoint> local;
	Endpoint peer;

	bool is_peer_only() const { return !local; }
	bool operator==(const RtoTarget &) const = default;
};

// The values RTO_SET asks for; the kernel rounds them up to jiffies and range-checks them.
struct RtoSettings {
	uint32_t rto_min_us = 0;
	std::optional<uint32_t> delack_max_us;
	std::optional<uint32_t> ttl_ms;

	bool operator==(const RtoSettings &) const = default;
};

// RTO_SET {RTO{tuple | DADDR, RTO_MIN_US, [DELACK_MAX_US], [TTL_MS]}} with NLM_F_ACK. The
// override is a lease of the socket the request is sent on: keep it open while it should last.
void encode_rto_set(RequestBuffer &buf, uint16_t family_id, const RtoTarget &target, const RtoSettings &settings);
// RTO_CLEAR {RTO{tuple | DADDR}} with NLM_F_ACK.
void encode_rto_clear(RequestBuffer &buf, uint16_t family_id, const RtoTarget &target);
// RTO_GET dump of every override of the netns.
void encode_rto_dump(RequestBuffer &buf, uint16_t family_id);

// Describes one u32 GAPPACE_A_RTO_* value; `key` is the attribute name, lowercased, without
// prefix. In the order of the uapi enum, which is also the order of the JSON keys.
struct RtoField {
	uint16_t attr;
	std::string_view key;
};
extern const std::array<RtoField, 12> kRtoFields;

// The u32 values of a GAPPACE_A_RTO nest, indexed by attribute type; absent ones are nullopt.
struct RtoValues {
	std::array<std::optional<uint32_t>, GAPPACE_A_RTO_MAX + 1> by_attr{};

	const std::optional<uint32_t> &operator[](uint16_t attr) const { return by_attr.at(attr); }
	std::optional<uint32_t> &operator[](uint16_t attr) { return by_attr.at(attr); }
};

// One reply message of RTO_SET, RTO_CLEAR or RTO_GET: {RTO{[tuple], values...}}. The ends
// are present when the kernel sent them (always in RTO_GET); a port the kernel did not
// send is 0.
struct RtoInfo {
	std::optional<Endpoint> local;
	std::optional<Endpoint> peer;
	RtoValues values;
};

Expected<RtoInfo> decode_rto(const nlmsghdr *nlh);

} // namespace gp
