// The route-metric actuator: a host route to the peer with a locked rto_min, and quickack if asked.
//
// Why a route: tcp_rto_min() takes RTAX_RTO_MIN from the socket's cached dst, and only if the
// metric is locked (dst_metric_locked, bit 1 << RTAX_RTO_MIN of RTAX_LOCK); the value is in
// milliseconds (dst_metric_rtt converts it with msecs_to_jiffies). tcp_in_quickack_mode()
// reads RTAX_QUICKACK the same way. A connection that exists already sees the new route
// because adding a route invalidates the cached dsts (IPv4: the netns' route genid is
// bumped; IPv6: the fib6 serial number changes), so its next transmit looks the route up
// again.
//
// What the kernel does not give back: the RTO estimator lowers rttvar towards rto_min one
// round trip at a time, but nothing raises it again when rto_min goes back up. After a
// revert, a connection that lived through the low rto_min keeps an RTO of about
// srtt + old rto_min (rounded up to jiffies) until its RTT variance grows by itself; new
// connections get the kernel's default again.
#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <array>

#include "internal.hpp"
#include "netlink.hpp"

namespace gp::stock {
namespace {

using detail::address_only;
using detail::with_context;

// TCP_RTO_MAX in ms: a larger rto_min would be no minimum at all.
constexpr uint32_t kMaxRtoMinMs = 120000;

uint8_t host_prefix_len(int family)
{
	return family == AF_INET6 ? 128 : 32;
}

// One RTM_NEWROUTE message from the kernel (a lookup reply or a dump entry).
struct RouteMessage {
	rtmsg header{};
	uint32_t table = 0;
	uint32_t oif = 0;
	uint32_t priority = 0;
	std::optional<Endpoint> dst;
	std::optional<Endpoint> gateway;
	std::optional<Endpoint> prefsrc;
	bool has_via = false;
	std::vector<uint32_t> metrics = std::vector<uint32_t>(RTAX_MAX + 1, 0);
	std::string congestion_control;
};

Expected<std::optional<Endpoint>> address_attr(const AttrIndex &attrs, uint16_t type, int family, const char *what)
{
	auto attr = checked_binary_attr(attrs, type, family == AF_INET6 ? 16 : 4, what);
	if (!attr)
		return attr.error();
	if (!*attr)
		return std::optional<Endpoint>();
	return std::optional<Endpoint>(make_endpoint(family, mnl_attr_get_payload(*attr), 0));
}

Expected<void> decode_metrics(const nlattr *nest, RouteMessage &route)
{
	const AttrIndex metrics = AttrIndex::of_nest(nest, RTAX_MAX);
	for (uint16_t type = 1; type <= RTAX_MAX; ++type) {
		if (type == RTAX_CC_ALGO) {
			auto name = checked_attr(metrics, type, MNL_TYPE_NUL_STRING, "RTAX_CC_ALGO");
			if (!name)
				return name.error();
			if (*name)
				route.congestion_control = mnl_attr_get_str(*name);
			continue;
		}
		auto value = checked_attr(metrics, type, MNL_TYPE_U32, "route metric");
		if (!value)
			return value.error();
		if (*value)
			route.metrics[type] = mnl_attr_get_u32(*value);
	}
	return {};
}

Expected<RouteMessage> decode_route(const nlmsghdr *nlh)
{
	if (nlh->nlmsg_type != RTM_NEWROUTE || mnl_nlmsg_get_payload_len(nlh) < sizeof(rtmsg))
		return make_error(EBADMSG, "malformed route message in kernel reply");
	RouteMessage route;
	std::memcpy(&route.header, mnl_nlmsg_get_payload(nlh), sizeof(rtmsg));
	const int family = route.header.rtm_family;
	if (family != AF_INET && family != AF_INET6)
		return route; // not ours to read (the caller filters by family)
	const AttrIndex attrs = AttrIndex::of_message(nlh, sizeof(rtmsg), RTA_MAX);
	route.table = route.header.rtm_table;
	if (auto table = checked_attr(attrs, RTA_TABLE, MNL_TYPE_U32, "RTA_TABLE"); !table)
		return table.error();
	else if (*table)
		route.table = mnl_attr_get_u32(*table);
	if (auto oif = checked_attr(attrs, RTA_OIF, MNL_TYPE_U32, "RTA_OIF"); !oif)
		return oif.error();
	else if (*oif)
		route.oif = mnl_attr_get_u32(*oif);
	if (auto priority = checked_attr(attrs, RTA_PRIORITY, MNL_TYPE_U32, "RTA_PRIORITY"); !priority)
		return priority.error();
	else if (*priority)
		route.priority = mnl_attr_get_u32(*priority);
	auto dst = address_attr(attrs, RTA_DST, family, "RTA_DST");
	auto gateway = address_attr(attrs, RTA_GATEWAY, family, "RTA_GATEWAY");
	auto prefsrc = address_attr(attrs, RTA_PREFSRC, family, "RTA_PREFSRC");
	for (auto *address : {&dst, &gateway, &prefsrc}) {
		if (!*address)
			return address->error();
	}
	route.dst = *dst;
	route.gateway = *gateway;
	route.prefsrc = *prefsrc;
	route.has_via = attrs[RTA_VIA] != nullptr;
	if (const nlattr *metrics = attrs[RTA_METRICS]) {
		if (auto decoded = decode_metrics(metrics, route); !decoded)
			return decoded.error();
	}
	return route;
}

void put_address(nlmsghdr *nlh, uint16_t type, const Endpoint &address)
{
	mnl_attr_put(nlh, type, address.address_size(), address.address.data());
}

void encode_get_route(RequestBuffer &request, const Endpoint &peer, bool fib_match)
{
	nlmsghdr *nlh = request.nlh();
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	auto *rtm = static_cast<rtmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
	rtm->rtm_family = static_cast<uint8_t>(peer.family);
	rtm->rtm_dst_len = host_prefix_len(peer.family);
	// Without RTM_F_LOOKUP_TABLE, IPv4 answers "table main" whichever table the rules chose.
	rtm->rtm_flags = RTM_F_LOOKUP_TABLE | (fib_match ? RTM_F_FIB_MATCH : 0);
	put_address(nlh, RTA_DST, peer);
}

// Our host route: the nexthop in use, its route's metrics, our rto_min (locked) and quickack.
void encode_host_route(RequestBuffer &request, const Endpoint &peer, const RouteInUse &base,
		       const RouteSettings &settings, bool replace)
{
	nlmsghdr *nlh = request.nlh();
	nlh->nlmsg_type = RTM_NEWROUTE;
	// EXCL: never take over a route somebody else added. REPLACE only for our own.
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL);
	auto *rtm = static_cast<rtmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
	rtm->rtm_family = static_cast<uint8_t>(peer.family);
	rtm->rtm_dst_len = host_prefix_len(peer.family);
	rtm->rtm_table = base.table < 256 ? static_cast<uint8_t>(base.table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
	rtm->rtm_protocol = kRouteProtocolGappace;
	rtm->rtm_scope = (peer.family == AF_INET && !base.gateway) ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	rtm->rtm_type = RTN_UNICAST;
	rtm->rtm_flags = base.onlink ? RTNH_F_ONLINK : 0;
	mnl_attr_put_u32(nlh, RTA_TABLE, base.table);
	put_address(nlh, RTA_DST, peer);
	if (base.oif)
		mnl_attr_put_u32(nlh, RTA_OIF, base.oif);
	if (base.gateway)
		put_address(nlh, RTA_GATEWAY, *base.gateway);
	if (base.prefsrc)
		put_address(nlh, RTA_PREFSRC, *base.prefsrc);

	nlattr *metrics = mnl_attr_nest_start(nlh, RTA_METRICS);
	std::vector<uint32_t> values = base.metrics;
	values.resize(RTAX_MAX + 1, 0);
	values[RTAX_LOCK] |= 1U << RTAX_RTO_MIN;
	values[RTAX_RTO_MIN] = settings.rto_min_ms;
	if (settings.quickack)
		values[RTAX_QUICKACK] = 1;
	for (uint16_t type = 1; type <= RTAX_MAX; ++type) {
		if (type == RTAX_CC_ALGO) {
			if (!base.congestion_control.empty())
				mnl_attr_put_strz(nlh, type, base.congestion_control.c_str());
		} else if (values[type] != 0) {
			mnl_attr_put_u32(nlh, type, values[type]);
		}
	}
	mnl_attr_nest_end(nlh, metrics);
}

// Deletes one route, only if it carries our protocol (the kernel matches rtm_protocol on
// delete, IPv4 and IPv6).
void encode_delete_route(RequestBuffer &request, int family, const std::optional<Endpoint> &dst, uint8_t dst_len,
			 uint32_t table, uint32_t priority, uint8_t tos)
{
	nlmsghdr *nlh = request.nlh();
	nlh->nlmsg_type = RTM_DELROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	auto *rtm = static_cast<rtmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
	rtm->rtm_family = static_cast<uint8_t>(family);
	rtm->rtm_dst_len = dst_len;
	rtm->rtm_tos = tos;
	rtm->rtm_table = table < 256 ? static_cast<uint8_t>(table) : static_cast<uint8_t>(RT_TABLE_UNSPEC);
	rtm->rtm_protocol = kRouteProtocolGappace;
	rtm->rtm_scope = RT_SCOPE_NOWHERE; // any scope
	mnl_attr_put_u32(nlh, RTA_TABLE, table);
	if (dst)
		put_address(nlh, RTA_DST, *dst);
	if (priority)
		mnl_attr_put_u32(nlh, RTA_PRIORITY, priority);
}

// One RTM_GETROUTE for `peer`: the route in use, or the FIB entry it came from.
Expected<RouteMessage> get_route(NetlinkSocket &netlink, const Endpoint &peer, bool fib_match)
{
	RequestBuffer request;
	encode_get_route(request, peer, fib_match);
	std::optional<RouteMessage> reply;
	auto done = netlink.transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto route = decode_route(nlh);
		if (!route)
			return route.error();
		reply = std::move(*route);
		return {};
	});
	if (!done)
		return done.error();
	if (!reply)
		return make_error(EPROTO, "the kernel sent no route");
	return std::move(*reply);
}

const char *route_type_name(uint8_t type)
{
	switch (type) {
	case RTN_LOCAL: return "local";
	case RTN_BROADCAST: return "broadcast";
	case RTN_ANYCAST: return "anycast";
	case RTN_MULTICAST: return "multicast";
	case RTN_BLACKHOLE: return "blackhole";
	case RTN_UNREACHABLE: return "unreachable";
	case RTN_PROHIBIT: return "prohibit";
	default: return "non-unicast";
	}
}

bool is_gone(int err)
{
	// IPv4 answers ESRCH for a route that is not there, IPv6 ENOENT; a table that does
	// not exist any more is gone as well.
	return err == ESRCH || err == ENOENT;
}

Expected<detail::Undone> delete_route(NetlinkSocket &netlink, const RouteRecord &record)
{
	RequestBuffer request;
	const Endpoint peer = address_only(record.peer);
	encode_delete_route(request, peer.family, peer, host_prefix_len(peer.family), record.table, 0, 0);
	auto done = netlink.transact(request);
	if (!done) {
		if (is_gone(done.error().err))
			return detail::Undone::gone;
		return with_context(done.error(), "cannot delete our route to " + format_endpoint(peer));
	}
	return detail::Undone::reverted;
}

Expected<void> validate(const Endpoint &peer, const RouteSettings &settings)
{
	if (peer.family != AF_INET && peer.family != AF_INET6)
		return make_error(EINVAL, "peer address must be IPv4 or IPv6");
	if (settings.rto_min_ms == 0 || settings.rto_min_ms > kMaxRtoMinMs)
		return make_error(EINVAL, "rto_min " + std::to_string(settings.rto_min_ms) + " ms is out of range (1.." +
						  std::to_string(kMaxRtoMinMs) + " ms)");
	return {};
}

} // namespace

namespace {

Expected<RouteInUse> lookup_route_with(NetlinkSocket &netlink, const Endpoint &peer_endpoint)
{
	const Endpoint peer = address_only(peer_endpoint);
	if (peer.family != AF_INET && peer.family != AF_INET6)
		return make_error(EINVAL, "peer address must be IPv4 or IPv6");
	const std::string name = format_endpoint(peer);
	auto used = get_route(netlink, peer, false);
	if (!used)
		return with_context(used.error(), "no route to " + name);
	if (used->header.rtm_type != RTN_UNICAST)
		return make_error(EINVAL, name + " is reached by a " + std::string(route_type_name(used->header.rtm_type)) +
						  " route, not a unicast one");
	if (used->has_via)
		return make_error(EOPNOTSUPP, "the route to " + name + " uses a nexthop of another family (via)");
	auto entry = get_route(netlink, peer, true);
	if (!entry)
		return with_context(entry.error(), "no FIB entry for " + name);

	RouteInUse route;
	route.table = used->table;
	route.oif = used->oif;
	route.gateway = used->gateway;
	route.prefsrc = used->prefsrc;
	route.fib_dst_len = entry->header.rtm_dst_len;
	route.fib_protocol = entry->header.rtm_protocol;
	route.onlink = (entry->header.rtm_flags & RTNH_F_ONLINK) != 0;
	route.metrics = entry->metrics;
	route.congestion_control = entry->congestion_control;
	return route;
}

} // namespace

Expected<RouteInUse> lookup_route(const Endpoint &peer)
{
	auto netlink = open_rtnetlink();
	if (!netlink)
		return netlink.error();
	return lookup_route_with(*netlink, peer);
}

Expected<void> RouteActuator::apply(const Endpoint &peer_endpoint, const RouteSettings &settings)
{
	const Endpoint peer = address_only(peer_endpoint);
	if (auto valid = validate(peer, settings); !valid)
		return valid;
	const std::string name = format_endpoint(peer);
	const RouteRecord *existing = store_.find_route(peer);

	auto netlink = netlink_.get();
	if (!netlink)
		return netlink.error();
	auto in_use = lookup_route_with(**netlink, peer);
	if (!in_use) {
		netlink_.reset(); // a failed exchange may leave replies behind: start clean
		return in_use.error();
	}
	const bool host_route_in_use = in_use->fib_dst_len == host_prefix_len(peer.family);
	if (host_route_in_use && in_use->fib_protocol != kRouteProtocolGappace)
		return make_error(EEXIST, "a host route to " + name + " (protocol " +
						  std::to_string(in_use->fib_protocol) + ", table " +
						  std::to_string(in_use->table) + ") exists and is not ours: left alone");
	const bool ours_in_place = host_route_in_use && existing;
	if (host_route_in_use && !existing)
		return make_error(EEXIST, "a host route to " + name + " has our protocol but is not in our state file "
					  "(another gappaced, or left over: purge_routes() clears it)");

	// The route we stand in for: the one found now, unless that is our own route already.
	auto remembered = replaced_.find(name);
	RouteInUse base;
	if (ours_in_place) {
		if (remembered == replaced_.end())
			return make_error(EEXIST, "our host route to " + name + " was added by another instance");
		base = remembered->second;
	} else {
		base = *in_use;
	}

	RouteRecord record;
	record.peer = peer;
	record.table = base.table;
	record.oif = base.oif;
	record.gateway = base.gateway;
	record.prefsrc = base.prefsrc;
	record.rto_min_ms = settings.rto_min_ms;
	record.quickack = settings.quickack || (base.metrics.size() > RTAX_QUICKACK && base.metrics[RTAX_QUICKACK]);
	const std::optional<RouteRecord> previous = existing ? std::optional<RouteRecord>(*existing) : std::nullopt;
	if (previous && *previous == record && ours_in_place)
		return {}; // nothing changes

	// On disk before the route exists: a crash after this line leaves a record to undo.
	if (auto saved = store_.put(record); !saved)
		return saved.error();
	RequestBuffer request;
	encode_host_route(request, peer, base, settings, ours_in_place);
	if (auto added = (*netlink)->transact(request); !added) {
		netlink_.reset();
		if (previous && ours_in_place)
			store_.put(*previous);
		else
			store_.erase_route(peer);
		if (added.error().err == EEXIST)
			return make_error(EEXIST, "a host route to " + name + " exists already (table " +
							  std::to_string(base.table) + "): left alone");
		return with_context(added.error(), "cannot add a host route to " + name);
	}
	replaced_[name] = base;
	return {};
}

Expected<void> RouteActuator::revert(const Endpoint &peer_endpoint)
{
	const Endpoint peer = address_only(peer_endpoint);
	const RouteRecord *found = store_.find_route(peer);
	if (!found)
		return make_error(ENOENT, "we added no route to " + format_endpoint(peer));
	const RouteRecord record = *found;
	auto netlink = netlink_.get();
	if (!netlink)
		return netlink.error();
	auto undone = delete_route(**netlink, record);
	if (!undone) {
		netlink_.reset();
		return undone.error();
	}
	replaced_.erase(format_endpoint(peer));
	return store_.erase_route(peer);
}

Expected<void> RouteActuator::revert_all()
{
	std::optional<Error> first_failure;
	const std::vector<RouteRecord> records = store_.state().routes;
	for (const RouteRecord &record : records) {
		auto reverted = revert(record.peer);
		if (!reverted && !first_failure)
			first_failure = reverted.error();
	}
	if (first_failure)
		return *first_failure;
	return {};
}

Expected<detail::Undone> detail::undo_route(const RouteRecord &record)
{
	auto netlink = open_rtnetlink();
	if (!netlink)
		return netlink.error();
	return delete_route(*netlink, record);
}

Expected<size_t> purge_routes()
{
	auto netlink = open_rtnetlink();
	if (!netlink)
		return netlink.error();
	// Collect first, delete after: changing the FIB in the middle of a dump interrupts it.
	std::vector<RouteMessage> ours;
	for (const uint8_t family : {AF_INET, AF_INET6}) {
		RequestBuffer request;
		nlmsghdr *nlh = request.nlh();
		nlh->nlmsg_type = RTM_GETROUTE;
		nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
		auto *rtm = static_cast<rtmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
		rtm->rtm_family = family;
		auto dumped = netlink->transact(request, [&](const nlmsghdr *message) -> Expected<void> {
			auto route = decode_route(message);
			if (!route)
				return route.error();
			if (route->header.rtm_family == family && route->header.rtm_protocol == kRouteProtocolGappace)
				ours.push_back(std::move(*route));
			return {};
		});
		if (!dumped)
			return with_context(dumped.error(), family == AF_INET ? "cannot dump IPv4 routes"
									      : "cannot dump IPv6 routes");
	}
	size_t deleted = 0;
	for (const RouteMessage &route : ours) {
		RequestBuffer request;
		encode_delete_route(request, route.header.rtm_family, route.dst, route.header.rtm_dst_len, route.table,
				    route.priority, route.header.rtm_tos);
		auto done = netlink->transact(request);
		if (!done) {
			if (is_gone(done.error().err))
				continue; // deleted by somebody else meanwhile
			const std::string dst = route.dst ? format_endpoint(*route.dst) : "default";
			return with_context(done.error(), "cannot delete our route to " + dst + "/" +
								  std::to_string(route.header.rtm_dst_len) + " (table " +
								  std::to_string(route.table) + ")");
		}
		++deleted;
	}
	return deleted;
}

Expected<NetlinkSocket> open_rtnetlink()
{
	auto socket = NetlinkSocket::open(NETLINK_ROUTE);
	if (!socket)
		return with_context(socket.error(), "cannot open an rtnetlink socket");
	return socket;
}

Expected<NetlinkSocket *> RtnetlinkSocket::get()
{
	if (!socket_) {
		auto opened = open_rtnetlink();
		if (!opened)
			return opened.error();
		socket_.emplace(std::move(*opened));
	}
	return &*socket_;
}

} // namespace gp::stock
