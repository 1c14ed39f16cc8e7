#include "counters.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace gp::alltoall {

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
	auto netstat = read_proc_text("/proc/net/netstat");
	if (!netstat)
		return netstat.error();
	auto snmp = read_proc_text("/proc/net/snmp");
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
