// Helpers to build netlink messages in memory, the way the kernel would send them.
#pragma once

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>

#include <cstring>
#include <vector>

namespace gp::test {

// A zeroed, aligned buffer holding one message.
class MessageBuilder {
public:
	MessageBuilder() : storage_(8192) { nlh_ = mnl_nlmsg_put_header(storage_.data()); }

	nlmsghdr *nlh() { return nlh_; }

	// A generic netlink reply header.
	MessageBuilder &genl(uint16_t family, uint8_t cmd)
	{
		nlh_->nlmsg_type = family;
		auto *hdr = static_cast<genlmsghdr *>(mnl_nlmsg_put_extra_header(nlh_, sizeof(genlmsghdr)));
		hdr->cmd = cmd;
		hdr->version = 1;
		return *this;
	}

	// What nla_put_u64_64bit does on architectures that need it: an empty PAD attribute
	// first, so that the u64 payload is 8-byte aligned.
	MessageBuilder &put_u64_padded(uint16_t pad_type, uint16_t type, uint64_t value)
	{
		if ((reinterpret_cast<uintptr_t>(mnl_nlmsg_get_payload_tail(nlh_)) + sizeof(nlattr)) % 8 != 0)
			mnl_attr_put(nlh_, pad_type, 0, nullptr);
		mnl_attr_put_u64(nlh_, type, value);
		return *this;
	}

private:
	std::vector<char> storage_;
	nlmsghdr *nlh_;
};

// Collects the attributes of a message or nest by type, for asserting on what we encoded.
struct Attrs {
	std::vector<const nlattr *> by_type = std::vector<const nlattr *>(64, nullptr);
	int count = 0;

	static int collect(const nlattr *attr, void *data)
	{
		auto &self = *static_cast<Attrs *>(data);
		self.by_type.at(mnl_attr_get_type(attr)) = attr;
		++self.count;
		return MNL_CB_OK;
	}
	static Attrs of_message(const nlmsghdr *nlh, unsigned int offset)
	{
		Attrs attrs;
		mnl_attr_parse(nlh, offset, collect, &attrs);
		return attrs;
	}
	static Attrs of_nest(const nlattr *nest)
	{
		Attrs attrs;
		mnl_attr_parse_nested(nest, collect, &attrs);
		return attrs;
	}
	const nlattr *operator[](size_t type) const { return by_type.at(type); }
};

} // namespace gp::test
