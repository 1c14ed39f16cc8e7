// The netlink layer of gapctl: request buffers, one socket type for rtnetlink and
// generic netlink, the kernel's extended ACK, and attribute helpers on top of libmnl.
//
// Everything that does I/O is in NetlinkSocket; everything else is pure so that it
// can be unit-tested with messages built in memory.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "expected.hpp"

namespace gp {

// One netlink request under construction. The storage is zeroed and heap-allocated, so
// nlh() stays valid when the buffer is moved. Our requests are a few hundred bytes at
// most, far below the capacity, which is why the builders use the unchecked mnl_attr_put*.
class RequestBuffer {
public:
	static constexpr size_t kCapacity = 4096;

	RequestBuffer() : storage_(kCapacity) { mnl_nlmsg_put_header(storage_.data()); }

	nlmsghdr *nlh() { return reinterpret_cast<nlmsghdr *>(storage_.data()); }
	const nlmsghdr *nlh() const { return reinterpret_cast<const nlmsghdr *>(storage_.data()); }
	// The request as it goes on the wire (nlmsg_len bytes).
	std::span<const char> bytes() const { return {storage_.data(), nlh()->nlmsg_len}; }

private:
	std::vector<char> storage_;
};

// What the kernel's extended ACK told us about a failed request.
struct ExtAck {
	std::string message;				// NLMSGERR_ATTR_MSG
	std::optional<uint32_t> bad_attr_offset;	// NLMSGERR_ATTR_OFFS
	std::optional<uint32_t> missing_type;		// NLMSGERR_ATTR_MISS_TYPE
	std::optional<uint32_t> missing_nest_offset;	// NLMSGERR_ATTR_MISS_NEST
};

// Decodes an NLMSG_ERROR message. nullopt for an ACK (error 0); otherwise the errno and a
// human message: the kernel's extack text, or strerror when the kernel gave none, plus
// "missing attribute N" when the kernel named one. `request` (the message that failed, as
// sent) lets attribute offsets be translated into attribute types; it may be empty.
std::optional<Error> decode_ack(const nlmsghdr *nlh, std::span<const char> request = {});
// Decodes an NLMSG_DONE message that ends a dump: nullopt if the dump succeeded.
std::optional<Error> decode_dump_done(const nlmsghdr *nlh, std::span<const char> request = {});
// Parses the extack TLVs of an NLMSG_ERROR or NLMSG_DONE message (honours NLM_F_CAPPED and
// NLM_F_ACK_TLVS). Exposed for tests.
ExtAck parse_extack(const nlmsghdr *nlh);
// Turns an errno and extack into the message we print.
std::string describe_failure(int err, const ExtAck &ack, std::span<const char> request);

// Attributes of one nesting level, indexed by type. Types above the highest one we know are
// skipped: the contract lets the kernel add attributes at any time.
class AttrIndex {
public:
	explicit AttrIndex(uint16_t max_type) : attrs_(size_t{max_type} + 1, nullptr) {}

	// Indexes the attributes of a message after `header_len` bytes of family header.
	static AttrIndex of_message(const nlmsghdr *nlh, size_t header_len, uint16_t max_type);
	// Indexes the attributes inside a nest.
	static AttrIndex of_nest(const nlattr *nest, uint16_t max_type);

	const nlattr *operator[](uint16_t type) const { return type < attrs_.size() ? attrs_[type] : nullptr; }

private:
	static int collect(const nlattr *attr, void *self);
	std::vector<const nlattr *> attrs_;
};

// The attribute if present and of the expected type/length; nullptr if absent; an EBADMSG
// error naming `what` if the kernel sent something malformed.
Expected<const nlattr *> checked_attr(const AttrIndex &attrs, uint16_t type, mnl_attr_data_type data_type,
				      std::string_view what);
// Same for fixed-size binary attributes (addresses): exactly `len` bytes.
Expected<const nlattr *> checked_binary_attr(const AttrIndex &attrs, uint16_t type, size_t len,
					     std::string_view what);

// Called for every data message of a reply. Returning an error aborts the exchange.
using MessageHandler = std::function<Expected<void>(const nlmsghdr *)>;

// A netlink socket (move-only, closes itself). transact() sends one request and runs the
// reply loop until the kernel's ACK, the end of a dump, or an error; errors carry the
// kernel's extack text.
class NetlinkSocket {
public:
	static Expected<NetlinkSocket> open(int bus);

	NetlinkSocket(NetlinkSocket &&other) noexcept;
	NetlinkSocket &operator=(NetlinkSocket &&other) noexcept;
	NetlinkSocket(const NetlinkSocket &) = delete;
	NetlinkSocket &operator=(const NetlinkSocket &) = delete;
	~NetlinkSocket();

	// Fills in the sequence number, sends, and feeds reply messages to on_message.
	Expected<void> transact(RequestBuffer &request, const MessageHandler &on_message = {});

	// The id of a generic netlink family (CTRL_CMD_GETFAMILY), cached per socket.
	// ENOENT if no such family is registered.
	Expected<uint16_t> genl_family_id(const std::string &name);
	// The id of one multicast group of a family. ENOENT if the family or the group is absent.
	Expected<uint32_t> genl_mcast_group_id(const std::string &family, const std::string &group);
	// The version a family's module registered (what its uapi header calls *_GENL_VERSION):
	// what the kernel's policies accept.
	Expected<uint32_t> genl_family_version(const std::string &family);

	// For event loops: the descriptor to poll, the port id, and the libmnl socket.
	int fd() const noexcept { return socket_ ? mnl_socket_get_fd(socket_) : -1; }
	uint32_t portid() const noexcept { return portid_; }
	mnl_socket *raw() const noexcept { return socket_; }

private:
	explicit NetlinkSocket(mnl_socket *socket) noexcept;
	Expected<void> receive_replies(uint32_t seq, std::span<const char> request, const MessageHandler &on_message);
	// After NLM_F_DUMP_INTR: reads the dump `seq` to its end, from the `received` bytes in
	// `buffer` on, so that the socket can start another.
	Expected<void> drain_dump(uint32_t seq, std::span<char> buffer, size_t received);

	mnl_socket *socket_ = nullptr;
	uint32_t portid_ = 0;
	uint32_t last_seq_ = 0;
	std::map<std::string, uint16_t, std::less<>> families_;
	// Reused across exchanges, never cleared: each reply overwrites what it uses.
	std::unique_ptr<char[]> receive_buffer_;
};

// Generic netlink controller messages, separated from I/O for tests.
void encode_get_family(RequestBuffer &buf, std::string_view family_name);
Expected<uint16_t> decode_family_id(const nlmsghdr *nlh);
Expected<uint32_t> decode_family_version(const nlmsghdr *nlh);
// The id of multicast group `group` in a CTRL_CMD_GETFAMILY reply; nullopt if it has none.
Expected<std::optional<uint32_t>> decode_mcast_group_id(const nlmsghdr *nlh, std::string_view group);

} // namespace gp
