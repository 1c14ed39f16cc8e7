// The kernel's SNMP tables of this process's network namespace (/proc/net/snmp, /proc/net/netstat;
// /proc/net is /proc/self/net). gp-alltoall reports them, gappaced checks its loss verdicts on them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "expected.hpp"

namespace gp {

// One table of a /proc/net/{netstat,snmp} text: a line "Table: Name1 Name2 ..." followed by
// "Table: v1 v2 ...". Values are signed (snmp's MaxConn is -1). EINVAL if the table is absent
// or its two lines do not match.
Expected<std::map<std::string, int64_t, std::less<>>> parse_proc_net_table(std::string_view text,
									    std::string_view table);

// The values of `names` in one table of such a text, in the order asked (nullopt where the
// table has no such counter), without a map of all its counters: for a caller that reads the
// tables often (gappaced, at phases whose losses it checks). Errors as parse_proc_net_table's,
// but only the values asked for must be numbers.
Expected<std::vector<std::optional<int64_t>>> parse_proc_net_values(std::string_view text, std::string_view table,
								    std::span<const std::string_view> names);

// A whole /proc file (they have no size to stat); errno and the path on failure.
Expected<std::string> read_proc_text(const char *path);

} // namespace gp
