#include "counters.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace gp::alltoall {
namespace {

std::vector<std::string_view> split_words(std::string_view line)
{
	std::vector<std::string_view> words;
	size_t i = 0;
	while (i < line.size()) {
		while (i < line.size() && (line[i] == ' ' || line[i] == '\t'))
			++i;
		const size_t start = i;
		while (i < line.size() && line[i] != ' ' && line[i] != '\t')
			++i;
		if (i > start)
			words.push_back(line.substr(start, i - start));
	}
	return words;
}

Expected<std::string> read_text(const char *path)
{
	std::ifstream in(path);
	if (!in)
		return make_error(errno ? errno : EIO, std::string("cannot read ") + path + ": " + std::strerror(errno));
	std::ostringstream text;
	text << in.rdbuf();
	return text.str();
}

} // namespace

Expected<std::map<std::string, int64_t, std::less<>>> parse_proc_net_table(std::string_view text,
									    std::string_view table)
{
	const std::string prefix = std::string(table) + ":";
	std::vector<std::string_view> lines;
	size_t start = 0;
	while (start < text.size()) {
		size_t end = text.find('\n', start);
		if (end == std::string_view::npos)
			end = text.size();
		const std::string_view line = text.substr(start, end - start);
		const auto words = split_words(line);
		if (!words.empty() && words[0] == prefix)
			lines.push_back(line);
		start = end + 1;
	}
	if (lines.size() < 2)
		return make_error(EINVAL, "no \"" + prefix + "\" header and value lines");
	const auto names = split_words(lines[0]);
	const auto values = split_words(lines[1]);
	if (names.size() != values.size())
		return make_error(EINVAL, "\"" + prefix + "\": " + std::to_string(names.size() - 1) + " names but " +
						  std::to_string(values.size() - 1) + " values");
	std::map<std::string, int64_t, std::less<>> parsed;
	for (size_t i = 1; i < names.size(); ++i) {
		int64_t value = 0;
		const auto [end, ec] = std::from_chars(values[i].data(), values[i].data() + values[i].size(), value);
		if (ec != std::errc() || end != values[i].data() + values[i].size())
			return make_error(EINVAL, "\"" + prefix + "\" " + std::string(names[i]) + ": not a number: '" +
							  std::string(values[i]) + "'");
		parsed.emplace(names[i], value);
	}
	return parsed;
}

CounterSnapshot snapshot_from_texts(std::string_view netstat_text, std::string_view snmp_text)
{
	const auto tcp_ext = parse_proc_net_table(netstat_text, "TcpExt");
	const auto tcp = parse_proc_net_table(snmp_text, "Tcp");
	CounterSnapshot snapshot;
	for (size_t i = 0; i < kTcpCounters.size(); ++i) {
		const auto &source = kTcpCounters[i].table == "Tcp" ? tcp : tcp_ext;
		if (!source)
			continue;
		const auto it = source->find(kTcpCounters[i].name);
		if (it != source->end() && it->second >= 0)
			snapshot.values[i] = static_cast<uint64_t>(it->second);
	}
	return snapshot;
}

Expected<CounterSnapshot> read_tcp_counters()
{
	auto netstat = read_text("/proc/net/netstat");
	if (!netstat)
		return netstat.error();
	auto snmp = read_text("/proc/net/snmp");
	if (!snmp)
		return snmp.error();
	return snapshot_from_texts(*netstat, *snmp);
}

Expected<uint64_t> current_netns_inode()
{
	struct stat st {};
	if (::stat("/proc/self/ns/net", &st) < 0)
		return make_error(errno, std::string("stat /proc/self/ns/net: ") + std::strerror(errno));
	return static_cast<uint64_t>(st.st_ino);
}

} // namespace gp::alltoall
