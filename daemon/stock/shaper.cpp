// The host shaper: one token bucket per device for the data of every socket steered into it.
//
// Why a shared bucket: a socket's own pacing (SO_MAX_PACING_RATE) spaces its packets after
// the first one; a socket that was idle sends at once. An all-to-all phase starts f flows on
// each of k hosts together, so the bottleneck's queue takes about f*k packets at every
// phase's start, whatever rate was planned. One bucket per host lets each host send only
// its share from the first packet on. Measured side by side in
// Documentation/performance/host-shaper-session14.
//
// The tree (see stock.hpp) is built from the root down, and removed by deleting the root:
// the kernel then attaches the device's default qdisc again.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <cstring>
#include <vector>

#include "internal.hpp"
#include "netlink.hpp"

namespace gp::stock {
namespace {

using detail::with_context;

constexpr uint32_t kInnerClass = kShaperHandle | 1;
constexpr uint32_t kDataClass = kShaperHandle | 2;
constexpr uint32_t kAckClass = kShaperHandle | 3;
// The htb classes' rate: far above any link, so that only the tbf limits.
constexpr uint64_t kUnlimitedBytesPerSecond = 100'000'000'000ull / 8;
constexpr uint32_t kClassBurstBytes = 64 * 1024;
constexpr uint32_t kClassQuantum = 64 * 1024;
// The tbf's queue: TCP Small Queues keeps a few packets per socket in it; this only bounds
// what many sockets may queue together.
constexpr uint32_t kBucketLimitBytes = 4 * 1024 * 1024;
// Packets shorter than this (IPv4 total length, IPv6 payload length) are pure ACKs.
constexpr uint16_t kAckLengthBelow = 128;

std::string device_name(uint32_t ifindex)
{
	char name[IF_NAMESIZE] = {};
	if (if_indextoname(ifindex, name))
		return std::string(name) + " (" + std::to_string(ifindex) + ")";
	return "device " + std::to_string(ifindex);
}

std::string handle_text(uint32_t handle)
{
	char text[24];
	std::snprintf(text, sizeof(text), "%x:%x", handle >> 16, handle & 0xffff);
	return text;
}

// psched ticks (64 ns) to send `bytes` at `bytes_per_second`.
uint32_t ticks_for(uint64_t bytes, uint64_t bytes_per_second)
{
	const double ns = 1e9 * static_cast<double>(bytes) / static_cast<double>(bytes_per_second);
	return static_cast<uint32_t>(std::min(ns / 64.0, 4e9));
}

// A rate as tc's structs carry it: bytes/s in 32 bits, ~0U with the real value in a *_RATE64
// attribute when it does not fit. Link-layer "ethernet" keeps the kernel from asking for a
// rate table.
tc_ratespec ratespec(uint64_t bytes_per_second)
{
	tc_ratespec r{};
	r.linklayer = TC_LINKLAYER_ETHERNET;
	r.rate = bytes_per_second >= UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(bytes_per_second);
	return r;
}

tcmsg *put_tcmsg(RequestBuffer &request, uint16_t type, uint16_t flags, uint32_t ifindex, uint32_t handle,
		 uint32_t parent)
{
	nlmsghdr *nlh = request.nlh();
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	auto *tcm = static_cast<tcmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg)));
	tcm->tcm_family = AF_UNSPEC;
	tcm->tcm_ifindex = static_cast<int>(ifindex);
	tcm->tcm_handle = handle;
	tcm->tcm_parent = parent;
	return tcm;
}

void encode_htb_root(RequestBuffer &request, uint32_t ifindex)
{
	put_tcmsg(request, RTM_NEWQDISC, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, ifindex, kShaperHandle, TC_H_ROOT);
	nlmsghdr *nlh = request.nlh();
	mnl_attr_put_strz(nlh, TCA_KIND, "htb");
	nlattr *options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	tc_htb_glob glob{};
	glob.version = 3; // TC_HTB_PROTOVER
	glob.rate2quantum = 10;
	glob.defcls = 0; // unclassified traffic: the direct queue, unshaped
	mnl_attr_put(nlh, TCA_HTB_INIT, sizeof(glob), &glob);
	mnl_attr_nest_end(nlh, options);
}

void encode_htb_class(RequestBuffer &request, uint32_t ifindex, uint32_t classid, uint32_t parent)
{
	put_tcmsg(request, RTM_NEWTCLASS, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, ifindex, classid, parent);
	nlmsghdr *nlh = request.nlh();
	mnl_attr_put_strz(nlh, TCA_KIND, "htb");
	nlattr *options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	tc_htb_opt opt{};
	opt.rate = ratespec(kUnlimitedBytesPerSecond);
	opt.ceil = opt.rate;
	opt.buffer = ticks_for(kClassBurstBytes, kUnlimitedBytesPerSecond);
	opt.cbuffer = opt.buffer;
	opt.quantum = kClassQuantum;
	mnl_attr_put(nlh, TCA_HTB_PARMS, sizeof(opt), &opt);
	mnl_attr_put_u64(nlh, TCA_HTB_RATE64, kUnlimitedBytesPerSecond);
	mnl_attr_put_u64(nlh, TCA_HTB_CEIL64, kUnlimitedBytesPerSecond);
	mnl_attr_nest_end(nlh, options);
}

// The bucket under the data class: created with `create`, else changed in place.
void encode_bucket(RequestBuffer &request, uint32_t ifindex, const ShaperSettings &settings, bool create)
{
	put_tcmsg(request, RTM_NEWQDISC, NLM_F_ACK | (create ? NLM_F_CREATE | NLM_F_EXCL : 0), ifindex,
		  kShaperBucketHandle, kDataClass);
	nlmsghdr *nlh = request.nlh();
	mnl_attr_put_strz(nlh, TCA_KIND, "tbf");
	nlattr *options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	tc_tbf_qopt opt{};
	opt.rate = ratespec(settings.bytes_per_second);
	opt.limit = kBucketLimitBytes;
	opt.buffer = ticks_for(settings.burst_bytes, settings.bytes_per_second);
	mnl_attr_put(nlh, TCA_TBF_PARMS, sizeof(opt), &opt);
	if (settings.bytes_per_second >= UINT32_MAX)
		mnl_attr_put_u64(nlh, TCA_TBF_RATE64, settings.bytes_per_second);
	mnl_attr_put_u32(nlh, TCA_TBF_BURST, settings.burst_bytes);
	mnl_attr_nest_end(nlh, options);
}

// A u32 filter on the inner class: packets of `protocol` whose 32-bit word at `offset` (from
// the network header) masked with `mask` equals 0 go to `classid`. mask 0 matches them all.
void encode_u32_filter(RequestBuffer &request, uint32_t ifindex, uint16_t prio, uint16_t protocol, int offset,
		       uint32_t mask, uint32_t classid)
{
	tcmsg *tcm = put_tcmsg(request, RTM_NEWTFILTER, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, ifindex, 0, kInnerClass);
	tcm->tcm_info = TC_H_MAKE(static_cast<uint32_t>(prio) << 16, htons(protocol));
	nlmsghdr *nlh = request.nlh();
	mnl_attr_put_strz(nlh, TCA_KIND, "u32");
	nlattr *options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	mnl_attr_put_u32(nlh, TCA_U32_CLASSID, classid);
	// A selector with one key: struct tc_u32_sel ends in a flexible array of keys.
	std::vector<char> selector(sizeof(tc_u32_sel) + sizeof(tc_u32_key), 0);
	auto *sel = reinterpret_cast<tc_u32_sel *>(selector.data());
	sel->flags = TC_U32_TERMINAL;
	sel->nkeys = 1;
	tc_u32_key key{};
	key.mask = htonl(mask);
	key.val = 0;
	key.off = offset;
	std::memcpy(selector.data() + sizeof(tc_u32_sel), &key, sizeof(key));
	mnl_attr_put(nlh, TCA_U32_SEL, selector.size(), selector.data());
	mnl_attr_nest_end(nlh, options);
}

void encode_delete_root(RequestBuffer &request, uint32_t ifindex)
{
	// The kernel refuses the delete unless the root has this handle: only ours goes.
	put_tcmsg(request, RTM_DELQDISC, NLM_F_ACK, ifindex, kShaperHandle, TC_H_ROOT);
}

Expected<RootQdisc> decode_qdisc(const nlmsghdr *nlh)
{
	if (nlh->nlmsg_type != RTM_NEWQDISC || mnl_nlmsg_get_payload_len(nlh) < sizeof(tcmsg))
		return make_error(EPROTO, "not a qdisc message");
	const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(nlh));
	const AttrIndex attrs = AttrIndex::of_message(nlh, sizeof(tcmsg), TCA_MAX);
	auto kind = checked_attr(attrs, TCA_KIND, MNL_TYPE_NUL_STRING, "TCA_KIND");
	if (!kind)
		return kind.error();
	RootQdisc out;
	out.handle = tcm->tcm_handle;
	if (*kind)
		out.kind = mnl_attr_get_str(*kind);
	return out;
}

// A dump, filtered here: a plain RTM_GETQDISC of the root answers nothing for the built-in
// noqueue qdisc of a virtual device.
Expected<RootQdisc> root_qdisc_on(NetlinkSocket &netlink, uint32_t ifindex)
{
	RequestBuffer request;
	put_tcmsg(request, RTM_GETQDISC, NLM_F_DUMP, ifindex, 0, 0);
	std::optional<RootQdisc> found;
	auto asked = netlink.transact(request, [&](const nlmsghdr *message) -> Expected<void> {
		const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(message));
		if (mnl_nlmsg_get_payload_len(message) < sizeof(tcmsg) || tcm->tcm_parent != TC_H_ROOT ||
		    static_cast<uint32_t>(tcm->tcm_ifindex) != ifindex)
			return {};
		auto qdisc = decode_qdisc(message);
		if (!qdisc)
			return qdisc.error();
		found = *qdisc;
		return {};
	});
	if (!asked)
		return with_context(asked.error(), "cannot read the root qdisc of " + device_name(ifindex));
	if (!found)
		return make_error(ENODEV, device_name(ifindex) + " has no root qdisc (no such device?)");
	return *found;
}

Expected<void> delete_root(NetlinkSocket &netlink, uint32_t ifindex)
{
	RequestBuffer request;
	encode_delete_root(request, ifindex);
	auto deleted = netlink.transact(request);
	// ENODEV: the device is gone, and our qdisc with it; EINVAL: the root is not ours (any
	// more); ENOENT: no root qdisc to delete.
	if (!deleted && deleted.error().err != ENODEV && deleted.error().err != ENOENT && deleted.error().err != EINVAL)
		return with_context(deleted.error(), "cannot remove the shaper of " + device_name(ifindex));
	return {};
}

// Builds the whole tree on a device whose root is the kernel's default.
Expected<void> install(NetlinkSocket &netlink, uint32_t ifindex, const ShaperSettings &settings)
{
	std::vector<RequestBuffer> steps(8);
	encode_htb_root(steps[0], ifindex);
	encode_htb_class(steps[1], ifindex, kInnerClass, kShaperHandle);
	encode_htb_class(steps[2], ifindex, kDataClass, kInnerClass);
	encode_htb_class(steps[3], ifindex, kAckClass, kInnerClass);
	encode_bucket(steps[4], ifindex, settings, true);
	// IPv4: total length is the low half of the first word. IPv6: payload length is the
	// high half of the second word.
	encode_u32_filter(steps[5], ifindex, 1, ETH_P_IP, 0, 0x0000ffff & ~uint32_t{kAckLengthBelow - 1}, kAckClass);
	encode_u32_filter(steps[6], ifindex, 2, ETH_P_IPV6, 4, 0xffff0000 & ~(uint32_t{kAckLengthBelow - 1} << 16),
			  kAckClass);
	encode_u32_filter(steps[7], ifindex, 3, ETH_P_ALL, 0, 0, kDataClass);
	for (size_t i = 0; i < steps.size(); ++i) {
		if (auto done = netlink.transact(steps[i]); !done) {
			if (i > 0)
				(void)delete_root(netlink, ifindex);
			return with_context(done.error(), "cannot install a shaper on " + device_name(ifindex));
		}
	}
	return {};
}

} // namespace

Expected<uint32_t> get_priority(int socket_fd)
{
	int priority = 0;
	socklen_t len = sizeof(priority);
	if (getsockopt(socket_fd, SOL_SOCKET, SO_PRIORITY, &priority, &len) < 0)
		return detail::system_error(errno, "getsockopt(SO_PRIORITY)");
	return static_cast<uint32_t>(priority);
}

Expected<void> set_priority(int socket_fd, uint32_t priority)
{
	const int value = static_cast<int>(priority);
	if (setsockopt(socket_fd, SOL_SOCKET, SO_PRIORITY, &value, sizeof(value)) < 0)
		return detail::system_error(errno, "setsockopt(SO_PRIORITY, " + handle_text(priority) + ")");
	return {};
}

Expected<RootQdisc> root_qdisc(uint32_t ifindex)
{
	auto netlink = open_rtnetlink();
	if (!netlink)
		return netlink.error();
	return root_qdisc_on(*netlink, ifindex);
}

Expected<void> ShaperActuator::set(uint32_t ifindex, const ShaperSettings &settings)
{
	if (!settings.bytes_per_second)
		return make_error(EINVAL, "a shaper needs a rate above 0");
	if (!settings.burst_bytes)
		return make_error(EINVAL, "a shaper needs a burst of at least one frame");
	auto netlink = netlink_.get();
	if (!netlink)
		return netlink.error();
	auto known = installed_.find(ifindex);
	if (known != installed_.end()) {
		if (known->second.bytes_per_second == settings.bytes_per_second &&
		    known->second.burst_bytes == settings.burst_bytes)
			return {};
		RequestBuffer request;
		encode_bucket(request, ifindex, settings, false);
		if ((*netlink)->transact(request)) {
			known->second = settings;
			return {};
		}
		// Gone (somebody deleted it, or the device went away and came back): forget it and
		// install it again below, if the device lets us.
		installed_.erase(known);
	}
	auto root = root_qdisc_on(**netlink, ifindex);
	if (!root) {
		netlink_.reset();
		return root.error();
	}
	if (root->handle == kShaperHandle && root->kind == "htb") {
		// Left by a daemon that did not end cleanly (and no state told us): start afresh.
		if (auto removed = delete_root(**netlink, ifindex); !removed)
			return removed.error();
	} else if (root->handle != 0) {
		return make_error(EBUSY, device_name(ifindex) + " has a root qdisc somebody configured (" + root->kind +
						 " " + handle_text(root->handle) + "): not replacing it");
	}
	if (auto done = install(**netlink, ifindex, settings); !done) {
		netlink_.reset();
		return done.error();
	}
	installed_[ifindex] = settings;
	return {};
}

Expected<void> ShaperActuator::remove(uint32_t ifindex)
{
	if (!installed_.count(ifindex))
		return make_error(ENOENT, "no shaper of ours on " + device_name(ifindex));
	auto netlink = netlink_.get();
	if (!netlink)
		return netlink.error();
	if (auto removed = delete_root(**netlink, ifindex); !removed) {
		netlink_.reset();
		return removed.error();
	}
	installed_.erase(ifindex);
	return {};
}

Expected<void> ShaperActuator::remove_all()
{
	std::optional<Error> first_failure;
	std::vector<uint32_t> devices;
	for (const auto &[ifindex, settings] : installed_)
		devices.push_back(ifindex);
	for (uint32_t ifindex : devices) {
		auto removed = remove(ifindex);
		if (!removed && !first_failure)
			first_failure = removed.error();
	}
	if (first_failure)
		return *first_failure;
	return {};
}

Expected<size_t> purge_shapers()
{
	auto netlink = open_rtnetlink();
	if (!netlink)
		return netlink.error();
	// Collect first, delete after: a change in the middle of a dump interrupts it.
	std::vector<uint32_t> ours;
	RequestBuffer request;
	put_tcmsg(request, RTM_GETQDISC, NLM_F_DUMP, 0, 0, 0);
	auto dumped = netlink->transact(request, [&](const nlmsghdr *message) -> Expected<void> {
		auto qdisc = decode_qdisc(message);
		if (!qdisc)
			return qdisc.error();
		const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(message));
		if (tcm->tcm_parent == TC_H_ROOT && qdisc->handle == kShaperHandle && qdisc->kind == "htb")
			ours.push_back(static_cast<uint32_t>(tcm->tcm_ifindex));
		return {};
	});
	if (!dumped)
		return with_context(dumped.error(), "cannot list the qdiscs");
	for (uint32_t ifindex : ours)
		if (auto removed = delete_root(*netlink, ifindex); !removed)
			return removed.error();
	return ours.size();
}

} // namespace gp::stock
