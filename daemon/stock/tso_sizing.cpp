// tcp_tso_rtt_log 0 while phases of long messages are in a host bucket: see TsoSizing in stock.hpp.
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "internal.hpp"
#include "unique_fd.hpp"

namespace gp::stock {

using detail::system_error;

Expected<uint32_t> read_sysctl_u32(const std::string &path)
{
	UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
	if (!fd)
		return system_error(errno, "cannot open " + path);
	char text[32];
	const ssize_t n = read(fd.get(), text, sizeof(text) - 1);
	if (n < 0)
		return system_error(errno, "cannot read " + path);
	uint32_t value = 0;
	const char *end = text + n;
	auto [rest, ec] = std::from_chars(text, end, value);
	if (ec != std::errc() || rest == text || (rest != end && *rest != '\n'))
		return make_error(EINVAL, path + " does not hold an unsigned integer");
	return value;
}

Expected<void> write_sysctl_u32(const std::string &path, uint32_t value)
{
	UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
	if (!fd)
		return system_error(errno, "cannot open " + path);
	const std::string text = std::to_string(value) + "\n";
	if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
		return system_error(errno ? errno : EIO, "cannot write " + std::to_string(value) + " to " + path);
	return {};
}

Expected<bool> put_back_tso_rtt_log(const std::string &path, uint32_t original)
{
	auto now = read_sysctl_u32(path);
	if (!now)
		return now.error().err == ENOENT ? Expected<bool>(false) : Expected<bool>(now.error());
	if (*now != 0)
		return false; // written since we set 0: its writer's now
	if (auto put = write_sysctl_u32(path, original); !put)
		return put.error().err == ENOENT ? Expected<bool>(false) : Expected<bool>(put.error());
	return true;
}

Expected<void> TsoSizing::engage()
{
	if (engaged_)
		return {};
	auto before = read_sysctl_u32(path_);
	if (!before) {
		if (before.error().err == ENOENT) { // before Linux 6.0: no RTT term to take out
			engaged_ = true;
			return {};
		}
		return before.error();
	}
	if (*before != 0) {
		// On disk before the change, as every setting of ours.
		if (auto recorded = store_.put_tso_rtt_log(*before); !recorded)
			return recorded;
		if (auto set = write_sysctl_u32(path_, 0); !set) {
			(void)store_.erase_tso_rtt_log();
			return set;
		}
		original_ = *before;
	}
	engaged_ = true;
	return {};
}

Expected<void> TsoSizing::release()
{
	if (!engaged_)
		return {};
	engaged_ = original_.has_value();
	if (!original_)
		return {};	// nothing was changed, nothing recorded
	if (auto put_back = put_back_tso_rtt_log(path_, *original_); !put_back)
		return put_back.error(); // still engaged: the next release tries again
	original_.reset();
	engaged_ = false;
	return store_.erase_tso_rtt_log();
}

} // namespace gp::stock
