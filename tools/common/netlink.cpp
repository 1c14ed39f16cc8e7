#include "netlink.hpp"

#include <linux/genetlink.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

namespace gp {
namespace {

// Large enough for any message the kernel puts into a dump skb (it allocates up to 32 KiB
// when the receive buffer allows), so that recvmsg never truncates.
constexpr size_t kReceiveBufferSize = 32768;

Error errno_error(int err)
{
	return make_error(err, std::strerror(err));
}

Error malformed(std::string_view what)
{
	return make_error(EBADMSG, "malformed " + std::string(what) + " in kernel reply");
}

// The type of the attribute at `offset` bytes into the request we sent, if that offset
// points at an attribute header inside it (extack offsets count from the nlmsghdr).
std::optional<uint16_t> attr_type_at(std::span<const char> request, uint32_t offset)
{
	if (offset < NLMSG_HDRLEN || offset + sizeof(nlattr) > request.size())
		return std::nullopt;
	nlattr attr;
	std::memcpy(&attr, request.data() + offset, sizeof(attr));
	return static_cast<uint16_t>(attr.nla_type & NLA_TYPE_MASK);
}

int collect_extack_attr(const nlattr *attr, void *data)
{
	auto &ack = *static_cast<ExtAck *>(data);
	switch (mnl_attr_get_type(attr)) {
	case NLMSGERR_ATTR_MSG:
		if (mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
			ack.message = mnl_attr_get_str(attr);
		break;
	case NLMSGERR_ATTR_OFFS:
		if (mnl_attr_validate(attr, MNL_TYPE_U32) == 0)
			ack.bad_attr_offset = mnl_attr_get_u32(attr);
		break;
	case NLMSGERR_ATTR_MISS_TYPE:
		if (mnl_attr_validate(attr, MNL_TYPE_U32) == 0)
			ack.missing_type = mnl_attr_get_u32(attr);
		break;
	case NLMSGERR_ATTR_MISS_NEST:
		if (mnl_attr_validate(attr, MNL_TYPE_U32) == 0)
			ack.missing_nest_offset = mnl_attr_get_u32(attr);
		break;
	default:
		break; // cookies and policies mean nothing to a human
	}
	return MNL_CB_OK;
}

// State shared by the callbacks of one reply loop.
struct ReplyLoop {
	const MessageHandler &on_message;
	std::span<const char> request;
	std::optional<Error> failure;	      // from the kernel or the netlink layer: ends the loop
	std::optional<Error> handler_failure; // from on_message: the rest of the reply is drained
};

int on_data_message(const nlmsghdr *nlh, void *data)
{
	auto &loop = *static_cast<ReplyLoop *>(data);
	if (!loop.on_message || loop.handler_failure)
		return MNL_CB_OK;
	// Keep reading after a failed message: leaving the rest of a dump in the socket
	// would make the next request on it read stale replies.
	if (auto handled = loop.on_message(nlh); !handled)
		loop.handler_failure = handled.error();
	return MNL_CB_OK;
}

int on_error_message(const nlmsghdr *nlh, void *data)
{
	auto &loop = *static_cast<ReplyLoop *>(data);
	loop.failure = decode_ack(nlh, loop.request);
	return loop.failure ? MNL_CB_ERROR : MNL_CB_STOP;
}

int on_done_message(const nlmsghdr *nlh, void *data)
{
	auto &loop = *static_cast<ReplyLoop *>(data);
	loop.failure = decode_dump_done(nlh, loop.request);
	return loop.failure ? MNL_CB_ERROR : MNL_CB_STOP;
}

int on_noop_message(const nlmsghdr *, void *)
{
	return MNL_CB_OK;
}

int on_overrun_message(const nlmsghdr *, void *data)
{
	static_cast<ReplyLoop *>(data)->failure = make_error(ENOBUFS, "netlink reply overrun");
	return MNL_CB_ERROR;
}

// Our handlers for the control messages: libmnl's defaults drop the extack (NLMSG_ERROR)
// and the error code of a failed dump (NLMSG_DONE). (A fresh copy per call: libmnl 1.0.4
// takes the array as non-const.)
std::array<mnl_cb_t, NLMSG_MIN_TYPE> control_callbacks()
{
	std::array<mnl_cb_t, NLMSG_MIN_TYPE> callbacks{};
	callbacks[NLMSG_NOOP] = on_noop_message;
	callbacks[NLMSG_ERROR] = on_error_message;
	callbacks[NLMSG_DONE] = on_done_message;
	callbacks[NLMSG_OVERRUN] = on_overrun_message;
	return callbacks;
}

} // namespace

// ------------------------------------------------------------------ extended ACK

ExtAck parse_extack(const nlmsghdr *nlh)
{
	ExtAck ack;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return ack;
	const size_t payload_len = mnl_nlmsg_get_payload_len(nlh);
	size_t tlv_offset = 0;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		if (payload_len < sizeof(nlmsgerr))
			return ack;
		const auto *err = static_cast<const nlmsgerr *>(mnl_nlmsg_get_payload(nlh));
		tlv_offset = sizeof(nlmsgerr);
		// Without NETLINK_CAP_ACK the kernel echoes our whole request before the TLVs.
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && err->msg.nlmsg_len > sizeof(nlmsghdr))
			tlv_offset += err->msg.nlmsg_len - sizeof(nlmsghdr);
	} else {
		tlv_offset = sizeof(int); // NLMSG_DONE: the error code, then the TLVs
	}
	if (tlv_offset >= payload_len)
		return ack;
	mnl_attr_parse(nlh, static_cast<unsigned int>(tlv_offset), collect_extack_attr, &ack);
	return ack;
}

std::string describe_failure(int err, const ExtAck &ack, std::span<const char> request)
{
	std::string text = ack.message.empty() ? std::strerror(err) : ack.message;
	if (ack.missing_type) {
		text += " (missing attribute " + std::to_string(*ack.missing_type);
		if (ack.missing_nest_offset) {
			if (auto nest = attr_type_at(request, *ack.missing_nest_offset))
				text += " in nested attribute " + std::to_string(*nest);
		}
		text += ")";
	} else if (ack.bad_attr_offset) {
		if (auto type = attr_type_at(request, *ack.bad_attr_offset))
			text += " (attribute " + std::to_string(*type) + ")";
	}
	return text;
}

std::optional<Error> decode_ack(const nlmsghdr *nlh, std::span<const char> request)
{
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(int))
		return make_error(EBADMSG, "truncated netlink error message");
	int error = 0;
	std::memcpy(&error, mnl_nlmsg_get_payload(nlh), sizeof(error));
	if (error == 0)
		return std::nullopt;
	const int err = error < 0 ? -error : error;
	return make_error(err, describe_failure(err, parse_extack(nlh), request));
}

std::optional<Error> decode_dump_done(const nlmsghdr *nlh, std::span<const char> request)
{
	// Old kernels may send NLMSG_DONE without a payload: that is success.
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(int))
		return std::nullopt;
	return decode_ack(nlh, request);
}

// ------------------------------------------------------------------ attributes

int AttrIndex::collect(const nlattr *attr, void *self)
{
	auto &index = *static_cast<AttrIndex *>(self);
	const uint16_t type = mnl_attr_get_type(attr);
	if (type < index.attrs_.size())
		index.attrs_[type] = attr;
	return MNL_CB_OK;
}

AttrIndex AttrIndex::of_message(const nlmsghdr *nlh, size_t header_len, uint16_t max_type)
{
	AttrIndex index(max_type);
	if (mnl_nlmsg_get_payload_len(nlh) >= header_len)
		mnl_attr_parse(nlh, static_cast<unsigned int>(header_len), collect, &index);
	return index;
}

AttrIndex AttrIndex::of_nest(const nlattr *nest, uint16_t max_type)
{
	AttrIndex index(max_type);
	mnl_attr_parse_nested(nest, collect, &index);
	return index;
}

Expected<const nlattr *> checked_attr(const AttrIndex &attrs, uint16_t type, mnl_attr_data_type data_type,
				      std::string_view what)
{
	const nlattr *attr = attrs[type];
	if (!attr)
		return static_cast<const nlattr *>(nullptr);
	if (mnl_attr_validate(attr, data_type) < 0)
		return malformed(what);
	return attr;
}

Expected<const nlattr *> checked_binary_attr(const AttrIndex &attrs, uint16_t type, size_t len,
					     std::string_view what)
{
	const nlattr *attr = attrs[type];
	if (!attr)
		return static_cast<const nlattr *>(nullptr);
	if (mnl_attr_validate2(attr, MNL_TYPE_BINARY, len) < 0)
		return malformed(what);
	return attr;
}

// ------------------------------------------------------------------ socket

NetlinkSocket::NetlinkSocket(mnl_socket *socket) noexcept : socket_(socket), portid_(mnl_socket_get_portid(socket))
{
}

NetlinkSocket::NetlinkSocket(NetlinkSocket &&other) noexcept
	: socket_(std::exchange(other.socket_, nullptr)), portid_(other.portid_), last_seq_(other.last_seq_),
	  families_(std::move(other.families_)), receive_buffer_(std::move(other.receive_buffer_))
{
}

NetlinkSocket &NetlinkSocket::operator=(NetlinkSocket &&other) noexcept
{
	if (this != &other) {
		if (socket_)
			mnl_socket_close(socket_);
		socket_ = std::exchange(other.socket_, nullptr);
		portid_ = other.portid_;
		last_seq_ = other.last_seq_;
		families_ = std::move(other.families_);
		receive_buffer_ = std::move(other.receive_buffer_);
	}
	return *this;
}

NetlinkSocket::~NetlinkSocket()
{
	if (socket_)
		mnl_socket_close(socket_);
}

Expected<NetlinkSocket> NetlinkSocket::open(int bus)
{
	mnl_socket *socket = mnl_socket_open(bus);
	if (!socket)
		return errno_error(errno);
	NetlinkSocket owner(socket); // closes the socket on the error paths below
	if (mnl_socket_bind(socket, 0, MNL_SOCKET_AUTOPID) < 0)
		return errno_error(errno);
	owner.portid_ = mnl_socket_get_portid(socket);
	// Extended ACKs carry the kernel's explanation of an error; capped ACKs spare us the
	// echo of our own request. Kernels without them still work, just less chatty.
	int on = 1; // libmnl 1.0.4 takes a non-const pointer
	mnl_socket_setsockopt(socket, NETLINK_EXT_ACK, &on, sizeof(on));
	mnl_socket_setsockopt(socket, NETLINK_CAP_ACK, &on, sizeof(on));
	return owner;
}

Expected<void> NetlinkSocket::transact(RequestBuffer &request, const MessageHandler &on_message)
{
	nlmsghdr *nlh = request.nlh();
	nlh->nlmsg_seq = ++last_seq_;
	nlh->nlmsg_pid = 0;
	if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0)
		return errno_error(errno);
	return receive_replies(nlh->nlmsg_seq, request.bytes(), on_message);
}

Expected<void> NetlinkSocket::receive_replies(uint32_t seq, std::span<const char> request,
					      const MessageHandler &on_message)
{
	if (!receive_buffer_)
		receive_buffer_.reset(new char[kReceiveBufferSize]); // uninitialised on purpose
	const std::span<char> buffer(receive_buffer_.get(), kReceiveBufferSize);
	ReplyLoop loop{on_message, request, std::nullopt, std::nullopt};
	auto callbacks = control_callbacks();
	for (;;) {
		const ssize_t received = mnl_socket_recvfrom(socket_, buffer.data(), buffer.size());
		if (received < 0) {
			if (errno == EINTR)
				continue;
			return errno_error(errno);
		}
		errno = 0;
		const int status = mnl_cb_run2(buffer.data(), static_cast<size_t>(received), seq, portid_,
					       on_data_message, &loop, callbacks.data(),
					       static_cast<unsigned int>(callbacks.size()));
		if (status == MNL_CB_STOP) {
			if (loop.handler_failure)
				return std::move(*loop.handler_failure);
			return {};
		}
		if (status == MNL_CB_ERROR) {
			if (loop.handler_failure) // it came first
				return std::move(*loop.handler_failure);
			if (loop.failure)
				return std::move(*loop.failure);
			if (errno == EINTR) { // libmnl's verdict on NLM_F_DUMP_INTR
				// The kernel is still dumping into this socket, and refuses a new
				// dump (EBUSY) until this one is read to its end.
				if (auto drained = drain_dump(seq, buffer, static_cast<size_t>(received)); !drained)
					return drained.error();
				return make_error(EINTR, "dump interrupted by a concurrent change, try again");
			}
			return errno_error(errno ? errno : EPROTO);
		}
	}
}

Expected<void> NetlinkSocket::drain_dump(uint32_t seq, std::span<char> buffer, size_t received)
{
	// Reads the rest of an abandoned dump, up to its NLMSG_DONE (or an error in its place),
	// starting with the datagram in hand, which may hold the end already.
	for (;;) {
		int left = static_cast<int>(received);
		for (auto *nlh = reinterpret_cast<const nlmsghdr *>(buffer.data()); mnl_nlmsg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_seq == seq && (nlh->nlmsg_type == NLMSG_DONE || nlh->nlmsg_type == NLMSG_ERROR))
				return {};
		}
		ssize_t n;
		while ((n = mnl_socket_recvfrom(socket_, buffer.data(), buffer.size())) < 0 && errno == EINTR) {
		}
		if (n < 0)
			return errno_error(errno);
		received = static_cast<size_t>(n);
	}
}

Expected<uint16_t> NetlinkSocket::genl_family_id(const std::string &name)
{
	if (auto cached = families_.find(name); cached != families_.end())
		return cached->second;
	RequestBuffer request;
	encode_get_family(request, name);
	std::optional<uint16_t> id;
	auto done = transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto decoded = decode_family_id(nlh);
		if (!decoded)
			return decoded.error();
		id = *decoded;
		return {};
	});
	if (!done)
		return done.error();
	if (!id)
		return make_error(ENOENT, "no reply to CTRL_CMD_GETFAMILY");
	families_.emplace(name, *id);
	return *id;
}

Expected<uint32_t> NetlinkSocket::genl_family_version(const std::string &family)
{
	RequestBuffer request;
	encode_get_family(request, family);
	std::optional<uint32_t> version;
	auto done = transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto decoded = decode_family_version(nlh);
		if (!decoded)
			return decoded.error();
		version = *decoded;
		return {};
	});
	if (!done)
		return done.error();
	if (!version)
		return make_error(ENOENT, "no reply to CTRL_CMD_GETFAMILY");
	return *version;
}

Expected<uint32_t> NetlinkSocket::genl_mcast_group_id(const std::string &family, const std::string &group)
{
	RequestBuffer request;
	encode_get_family(request, family);
	std::optional<uint32_t> id;
	auto done = transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto decoded = decode_mcast_group_id(nlh, group);
		if (!decoded)
			return decoded.error();
		id = *decoded;
		return {};
	});
	if (!done)
		return done.error();
	if (!id)
		return make_error(ENOENT, "generic netlink family " + family + " has no multicast group " + group);
	return *id;
}

// ------------------------------------------------------------------ genl controller

void encode_get_family(RequestBuffer &buf, std::string_view family_name)
{
	nlmsghdr *nlh = buf.nlh();
	nlh->nlmsg_type = GENL_ID_CTRL;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	auto *genl = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
	genl->cmd = CTRL_CMD_GETFAMILY;
	genl->version = 1;
	const std::string name(family_name);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, name.c_str());
}

Expected<uint16_t> decode_family_id(const nlmsghdr *nlh)
{
	const auto attrs = AttrIndex::of_message(nlh, sizeof(genlmsghdr), CTRL_ATTR_MAX);
	auto id = checked_attr(attrs, CTRL_ATTR_FAMILY_ID, MNL_TYPE_U16, "CTRL_ATTR_FAMILY_ID");
	if (!id)
		return id.error();
	if (!*id)
		return make_error(EBADMSG, "CTRL_ATTR_FAMILY_ID missing in kernel reply");
	return mnl_attr_get_u16(*id);
}

Expected<uint32_t> decode_family_version(const nlmsghdr *nlh)
{
	const auto attrs = AttrIndex::of_message(nlh, sizeof(genlmsghdr), CTRL_ATTR_MAX);
	auto version = checked_attr(attrs, CTRL_ATTR_VERSION, MNL_TYPE_U32, "CTRL_ATTR_VERSION");
	if (!version)
		return version.error();
	if (!*version)
		return make_error(EBADMSG, "CTRL_ATTR_VERSION missing in kernel reply");
	return mnl_attr_get_u32(*version);
}

Expected<std::optional<uint32_t>> decode_mcast_group_id(const nlmsghdr *nlh, std::string_view group)
{
	const auto attrs = AttrIndex::of_message(nlh, sizeof(genlmsghdr), CTRL_ATTR_MAX);
	auto groups = checked_attr(attrs, CTRL_ATTR_MCAST_GROUPS, MNL_TYPE_NESTED, "CTRL_ATTR_MCAST_GROUPS");
	if (!groups)
		return groups.error();
	if (!*groups)
		return std::optional<uint32_t>{};
	struct Search {
		std::string_view group;
		std::optional<uint32_t> id;
		std::optional<Error> failure;
	} search{group, std::nullopt, std::nullopt};
	mnl_attr_parse_nested(*groups, [](const nlattr *entry, void *data) -> int {
		auto &s = *static_cast<Search *>(data);
		if (mnl_attr_validate(entry, MNL_TYPE_NESTED) < 0) {
			s.failure = make_error(EBADMSG, "malformed CTRL_ATTR_MCAST_GROUPS entry");
			return MNL_CB_ERROR;
		}
		const auto fields = AttrIndex::of_nest(entry, CTRL_ATTR_MCAST_GRP_MAX);
		auto name = checked_attr(fields, CTRL_ATTR_MCAST_GRP_NAME, MNL_TYPE_NUL_STRING, "CTRL_ATTR_MCAST_GRP_NAME");
		auto id = checked_attr(fields, CTRL_ATTR_MCAST_GRP_ID, MNL_TYPE_U32, "CTRL_ATTR_MCAST_GRP_ID");
		if (!name || !id) {
			s.failure = name ? id.error() : name.error();
			return MNL_CB_ERROR;
		}
		if (*name && *id && s.group == mnl_attr_get_str(*name))
			s.id = mnl_attr_get_u32(*id);
		return MNL_CB_OK;
	}, &search);
	if (search.failure)
		return std::move(*search.failure);
	if (search.id)
		return search.id;
	return std::optional<uint32_t>{};
}

} // namespace gp
