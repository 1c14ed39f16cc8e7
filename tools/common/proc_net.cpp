#include "proc_net.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace gp {
namespace {

// The next blank-separated word of `line` from `at` on; empty at the end.
std::string_view next_word(std::string_view line, size_t &at)
{
	while (at < line.size() && (line[at] == ' ' || line[at] == '\t'))
		++at;
	const size_t start = at;
	while (at < line.size() && line[at] != ' ' && line[at] != '\t')
		++at;
	return line.substr(start, at - start);
}

std::vector<std::string_view> split_words(std::string_view line)
{
	std::vector<std::string_view> words;
	size_t at = 0;
	for (std::string_view word = next_word(line, at); !word.empty(); word = next_word(line, at))
		words.push_back(word);
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

namespace {

// The names line and the values line of `table`: the first two lines that begin with "Table:"
// and a blank ("TcpExt:" is not "Tcp:").
Expected<std::pair<std::string_view, std::string_view>> table_lines(std::string_view text, std::string_view table)
{
	std::string_view found[2];
	size_t count = 0;
	for (size_t start = 0; start < text.size() && count < 2;) {
		size_t end = text.find('\n', start);
		if (end == std::string_view::npos)
			end = text.size();
		const std::string_view line = text.substr(start, end - start);
		if (line.size() > table.size() && line.starts_with(table) && line[table.size()] == ':' &&
		    (line.size() == table.size() + 1 || line[table.size() + 1] == ' ' || line[table.size() + 1] == '\t'))
			found[count++] = line.substr(table.size() + 1);
		start = end + 1;
	}
	if (count < 2)
		return make_error(EINVAL, "no \"" + std::string(table) + ":\" header and value lines");
	return std::pair{found[0], found[1]};
}

std::optional<int64_t> parse_value(std::string_view word)
{
	int64_t value = 0;
	const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
	if (ec != std::errc() || end != word.data() + word.size())
		return std::nullopt;
	return value;
}

Error not_a_number(std::string_view table, std::string_view name, std::string_view word)
{
	return make_error(EINVAL, "\"" + std::string(table) + ":\" " + std::string(name) + ": not a number: '" +
					  std::string(word) + "'");
}

Error counts_differ(std::string_view table, size_t names, size_t values)
{
	return make_error(EINVAL, "\"" + std::string(table) + ":\": " + std::to_string(names) + " names but " +
					  std::to_string(values) + " values");
}

} // namespace

Expected<std::map<std::string, int64_t, std::less<>>> parse_proc_net_table(std::string_view text,
									    std::string_view table)
{
	const auto lines = table_lines(text, table);
	if (!lines)
		return lines.error();
	const auto names = split_words(lines->first);
	const auto values = split_words(lines->second);
	if (names.size() != values.size())
		return counts_differ(table, names.size(), values.size());
	std::map<std::string, int64_t, std::less<>> parsed;
	for (size_t i = 0; i < names.size(); ++i) {
		const auto value = parse_value(values[i]);
		if (!value)
			return not_a_number(table, names[i], values[i]);
		parsed.emplace(names[i], *value);
	}
	return parsed;
}

Expected<std::vector<std::optional<int64_t>>> parse_proc_net_values(std::string_view text, std::string_view table,
								    std::span<const std::string_view> names)
{
	const auto lines = table_lines(text, table);
	if (!lines)
		return lines.error();
	std::vector<std::optional<int64_t>> values(names.size());
	size_t name_at = 0, value_at = 0, count = 0;
	for (;;) {
		const std::string_view name = next_word(lines->first, name_at);
		const std::string_view word = next_word(lines->second, value_at);
		if (name.empty() != word.empty()) {
			size_t names_total = count + !name.empty(), values_total = count + !word.empty();
			while (!next_word(lines->first, name_at).empty())
				++names_total;
			while (!next_word(lines->second, value_at).empty())
				++values_total;
			return counts_differ(table, names_total, values_total);
		}
		if (name.empty())
			return values;
		++count;
		for (size_t i = 0; i < names.size(); ++i) {
			if (names[i] != name)
				continue;
			values[i] = parse_value(word);
			if (!values[i])
				return not_a_number(table, name, word);
		}
	}
}

} // namespace gp
