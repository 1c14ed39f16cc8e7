#include "capture.hpp"

#include <pcap/pcap.h>

#include <cerrno>
#include <memory>

namespace gp::wirecheck {
namespace {

struct PcapCloser {
	void operator()(pcap_t *handle) const { pcap_close(handle); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

Expected<CaptureSummary> read_frames(pcap_t *raw_handle, const char *errbuf, const FrameSink &sink)
{
	PcapHandle handle(raw_handle);
	if (!handle)
		return make_error(EINVAL, std::string("cannot read capture: ") + errbuf);
	if (pcap_datalink(handle.get()) != DLT_EN10MB)
		return make_error(EINVAL, std::string("capture link type is ") +
						  pcap_datalink_val_to_name(pcap_datalink(handle.get())) +
						  ", not Ethernet");
	CaptureSummary summary;
	summary.snap_length = static_cast<uint32_t>(pcap_snapshot(handle.get()));
	for (;;) {
		pcap_pkthdr *header = nullptr;
		const u_char *data = nullptr;
		const int status = pcap_next_ex(handle.get(), &header, &data);
		if (status == PCAP_ERROR_BREAK)
			break; // end of file
		if (status != 1) {
			// A capture cut off mid-record (the VM was killed while QEMU wrote it) still tells
			// everything up to there; only an unreadable start is an error.
			const std::string message = pcap_geterr(handle.get());
			if (summary.frames == 0)
				return make_error(EIO, "cannot read capture: " + message);
			summary.warning = "capture ends early after frame " + std::to_string(summary.frames) + ": " + message;
			break;
		}
		sink(CapturedFrame{header->len, std::span<const uint8_t>(data, header->caplen)});
		++summary.frames;
	}
	return summary;
}

} // namespace

Expected<CaptureSummary> read_capture(const std::string &path, const FrameSink &sink)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	return read_frames(pcap_open_offline(path.c_str(), errbuf), errbuf, sink);
}

Expected<CaptureSummary> read_capture(FILE *file, const FrameSink &sink)
{
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *handle = pcap_fopen_offline(file, errbuf);
	if (!handle && file)
		std::fclose(file); // on failure libpcap leaves the stream to us
	return read_frames(handle, errbuf, sink);
}

} // namespace gp::wirecheck
