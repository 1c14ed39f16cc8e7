#include "proc_net.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace gp {
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

} // namespace

Expected<std::string> read_proc_text(const char *path)
{
	std::ifstream in(path);
	if (!in)
		return make_error(errno ? errno : EIO, std::string("cannot read ") + path + ": " + std::strerror(errno));
	std::ostringstream text;
	text << in.rdbuf();
	return text.str();
}

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

} // namespace gp
