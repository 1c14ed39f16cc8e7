// The kernel's SNMP tables of this process's network namespace (/proc/net/snmp, /proc/net/netstat;
// /proc/net is /proc/self/net). gp-alltoall reports them, gappaced checks its loss verdicts on them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "expected.hpp"

namespace gp {

// One table of a /proc/net/{netstat,snmp} text: a line "Table: Name1 Name2 ..." followed by
// "Table: v1 v2 ...". Values are signed (snmp's MaxConn is -1). EINVAL if the table is absent
// or its two lines do not match.
Expected<std::map<std::string, int64_t, std::less<>>> parse_proc_net_table(std::string_view text,
									    std::string_view table);

// A whole /proc file (they have no size to stat); errno and the path on failure.
Expected<std::string> read_proc_text(const char *path);

} // namespace gp
