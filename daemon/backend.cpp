// What both backends share (backend.hpp).
#include "backend.hpp"

#include <cerrno>

namespace gp::daemon {

Expected<uint32_t> RouteDeviceCache::device_towards(const Endpoint &peer)
{
	const std::string name = format_endpoint(Endpoint{peer.family, peer.address, 0});
	const auto now = std::chrono::steady_clock::now();
	if (auto it = devices_.find(name); it != devices_.end() && now - it->second.second < kKept)
		return it->second.first;
	auto route = stock::lookup_route(peer);
	if (!route)
		return route.error();
	if (!route->oif)
		return make_error(ENODEV, "no device towards " + name);
	if (devices_.size() > 4096)
		devices_.clear();
	devices_[name] = {route->oif, now};
	return route->oif;
}

} // namespace gp::daemon
