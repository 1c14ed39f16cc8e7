// Actuators: how a plan becomes kernel state, and how exactly that state is undone.
//
//   ModuleBackend  gap-frame flow rules (per destination host, on the device that reaches it)
//                  and per-socket RTO overrides through the gappace genl family. Both are
//                  leases of the daemon's netlink socket: if the daemon dies, the kernel
//                  reverts everything.
//   StockBackend   SO_MAX_PACING_RATE on the sender's own sockets (pidfd_getfd) and a host
//                  route per peer with a locked rto_min (and quickack, if configured); every change recorded
//                  in a state file first, so a restarted daemon undoes what a killed one left.
//
// Settings shared by several phases (a rule or a route per destination host; a socket in two
// overlapping phases) are reference-counted: the last phase to end reverts them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "endpoint.hpp"
#include "expected.hpp"
#include "planner.hpp"
#include "stock.hpp"

namespace gp::daemon {

// A socket of the hinting process that the phase may change.
struct TargetSocket {
	stock::TcpSocket socket;
	int fd_in_process = -1;
	size_t peer = 0;	// index into the phase's peers
};

// What one phase changed, so that its end reverts exactly that.
// A key's part before this separator names a shared setting; what follows, if anything, names
// this phase's hold of it (the pacing rate is the newest hold's). The daemon compares phases by
// the settings their keys name (Daemon::superseded_lingering).
inline constexpr char kBackendHoldSeparator = '#';

struct Applied {
	std::vector<std::string> keys;	// the backend's names of shared settings this phase holds
	size_t paced = 0;		// sockets (stock) or destination rules (module) paced
	size_t rto = 0;			// sockets (module) or routes (stock) with a lowered RTO floor
};

struct ApplyRequest {
	pid_t pid = 0;
	std::span<const PlannedPeer> peers;
	std::span<const TargetSocket> sockets;
	const Plan *plan = nullptr;
	const Config *config = nullptr;
	uint64_t bytes_per_peer = 0; // the phase's message length
	// The sender's peers take turns (pairwise, ring): a rule for a host that several of them
	// are on paces one peer's connections at a time, not all of theirs.
	bool one_peer_at_a_time = false;
};

class Backend {
public:
	virtual ~Backend() = default;
	virtual const char *name() const = 0;
	// Applies what it can; every failure goes to `errors` and the rest still happens.
	virtual void apply(const ApplyRequest &request, Applied &applied, std::vector<std::string> &errors) = 0;
	virtual void revert(Applied &applied, std::vector<std::string> &errors) = 0;
	// Everything this backend still holds (shutdown).
	virtual void revert_all(std::vector<std::string> &errors) = 0;
	// Writes down bookkeeping that may lag behind (the stock backend's state file after
	// reverts); called from the daemon's tick and at shutdown.
	virtual void flush(std::vector<std::string> &errors) { (void)errors; }
	// Settings live now, for `gapctl daemon show`: key -> description.
	virtual std::map<std::string, std::string> live() const = 0;
};

// The device the kernel sends to a peer through, from a route lookup, kept kKept before it is
// looked up again: both backends ask for every paced peer of every phase, and on a busy host a
// lookup is a netlink round trip that waits for the CPU (in the one-CPU guest, 7 of them took
// 15-30 ms of a phase's setting).
class RouteDeviceCache {
public:
	static constexpr auto kKept = std::chrono::seconds(10);
	// ENODEV where the route names no device; the lookup's error otherwise.
	Expected<uint32_t> device_towards(const Endpoint &peer);

private:
	std::map<std::string, std::pair<uint32_t, std::chrono::steady_clock::time_point>> devices_;
};

// ENOENT if the gappace family is not registered (no module).
Expected<std::unique_ptr<Backend>> make_module_backend();
// Restores what a previous daemon left in the state file first (errors are logged through
// `log`), then starts a fresh state file.
Expected<std::unique_ptr<Backend>> make_stock_backend(const std::string &state_file,
						      std::vector<std::string> &log);

} // namespace gp::daemon
