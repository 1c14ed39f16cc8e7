// marker: one "GPPHASE <name>" datagram that gp-wirecheck uses to split a capture into phases.
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <thread>

#include "modes.hpp"
#include "net.hpp"
#include "traffic_proto.hpp"

namespace gp::traffic {
namespace {

constexpr const char *kMode = "marker";

// The datagram's memory stays charged to the socket until the driver frees the transmitted skb.
// Waiting for that means the marker has passed the qdisc: traffic started after we return cannot
// overtake it on the wire.
Expected<bool> wait_until_transmitted(int fd, const Deadline &deadline)
{
	for (;;) {
		int queued = 0;
		if (::ioctl(fd, SIOCOUTQ, &queued) != 0)
			return system_error("ioctl SIOCOUTQ");
		if (queued == 0)
			return true;
		if (deadline.expired())
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
}

} // namespace

int run_marker(const MarkerArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	const auto to = numeric_address(args.dst, args.port);
	if (!to)
		return fail(kMode, to.error());
	auto fd = open_socket(to->family(), SOCK_DGRAM);
	if (!fd)
		return fail(kMode, fd.error());
	const std::string payload = std::string(kMarkerPrefix) + args.name;
	const Stopwatch stopwatch;
	if (::sendto(fd->get(), payload.data(), payload.size(), 0, to->get(), to->length) < 0)
		return fail(kMode, system_error("sendto " + to->text()));
	bool transmitted = false;
	if (args.wait_for_transmit) {
		const auto done = wait_until_transmitted(fd->get(), deadline);
		if (!done)
			return fail(kMode, done.error());
		transmitted = *done;
	}

	JsonWriter json;
	json.begin_object()
		.field("marker", args.name)
		.field("bytes", static_cast<uint64_t>(payload.size()))
		.field("seconds", stopwatch.seconds()) // until the device released it (with waiting)
		.field("transmitted", transmitted)
		.end_object();
	print_json(json);
	if (args.wait_for_transmit && !transmitted)
		return fail(kMode, make_error(ETIMEDOUT, "marker still queued at the deadline"));
	return kExitDone;
}

} // namespace gp::traffic
