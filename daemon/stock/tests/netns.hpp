// Test scaffolding: two network namespaces joined by a veth pair, TCP servers in the far one,
// client processes in the near one. Nothing outlives the test: the namespaces are held only
// by fds and threads (no /run/netns names), and every child process is killed by pid.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "stock.hpp"

namespace gp::stock::testing {

// Why the namespace tests cannot run here, or nullopt if they can (root, and unshare works).
std::optional<std::string> namespace_tests_unavailable();

struct CommandResult {
	int status = -1; // exit status, or -1 if it did not exit normally
	std::string output; // stdout and stderr
};
// Runs a program (no shell) in the network namespace `netns_fd` (-1: the caller's).
CommandResult run_command(const std::vector<std::string> &argv, int netns_fd = -1);

// Runs `body` on a thread that has joined the network namespace `netns_fd`.
void in_netns(int netns_fd, const std::function<void()> &body);

// "near" is the daemon's side; the calling thread lives in it while a NetnsPair exists.
class NetnsPair {
public:
	static constexpr const char *kNearIfname = "gpnear0";
	static constexpr const char *kFarIfname = "gpfar0";

	// Moves the calling thread into a new "near" namespace, creates "far", joins them by a
	// veth pair with IPv4 and IPv6 addresses. nullptr + message on failure.
	static std::unique_ptr<NetnsPair> create(std::string &error);
	~NetnsPair(); // the calling thread goes back to the namespace it came from

	int far_fd() const { return far_.get(); }
	int near_fd() const { return near_.get(); }
	Endpoint near_address(int family) const;
	Endpoint far_address(int family) const;
	// A socket of the far namespace (created by a thread there).
	UniqueFd far_socket(int family, int type) const;

private:
	NetnsPair() = default;
	UniqueFd original_;
	UniqueFd near_;
	UniqueFd far_;
};

// A TCP server in the far namespace: accepts connections and either echoes or discards what
// it reads, counting bytes. Stops (and closes everything) when destroyed.
class FarServer {
public:
	enum class Mode { echo, sink };
	FarServer(const NetnsPair &pair, int family, Mode mode);
	~FarServer();

	Endpoint endpoint() const { return endpoint_; }
	uint64_t bytes_received() const { return bytes_.load(); }
	bool ok() const { return listener_.get() >= 0; }

private:
	void serve();
	Endpoint endpoint_;
	Mode mode_;
	UniqueFd listener_;
	std::atomic<bool> stop_{false};
	std::atomic<uint64_t> bytes_{0};
	std::thread thread_;
};

// Receive rate at a sink server over `window`, in bit/s.
double measure_rate(const FarServer &server, std::chrono::milliseconds window);

// A child process (in the near namespace) that connects to a server, reports its socket, and
// then either idles or sends as fast as it can, answering queries on a pipe meanwhile. It is
// killed when the object is destroyed, when the test process dies, and after two minutes.
class ClientProcess {
public:
	enum class Mode { idle, bulk };
	// nullptr + message on failure. With `uid`, the child drops to that uid before it opens
	// the socket (the socket's owner).
	static std::unique_ptr<ClientProcess> start(const Endpoint &server, Mode mode, std::optional<uid_t> uid,
						    std::string &error);
	~ClientProcess();

	pid_t pid() const { return pid_; }
	uint64_t inode() const { return inode_; }
	int fd() const { return fd_; }
	// SO_MAX_PACING_RATE of the child's socket, read by the child on its own fd.
	std::optional<uint64_t> pacing_rate_seen_by_owner();
	void kill_now();

private:
	ClientProcess() = default;
	pid_t pid_ = -1;
	uint64_t inode_ = 0;
	int fd_ = -1;
	UniqueFd commands_;
	UniqueFd replies_;
};

// A TCP connection from the calling thread (near) to an echo server, for RTO measurements.
class EchoClient {
public:
	explicit EchoClient(const Endpoint &server);
	bool connected() const { return socket_.get() >= 0; }
	// `count` one-byte request/response exchanges; false on error.
	bool ping_pong(int count);
	// The current RTO (TCP_INFO tcpi_rto) in microseconds.
	uint32_t rto_us() const;
	int fd() const { return socket_.get(); }

private:
	UniqueFd socket_;
};

// A unique scratch directory under /tmp, removed with its files on destruction.
class TempDir {
public:
	TempDir();
	~TempDir();
	const std::string &path() const { return path_; }

private:
	std::string path_;
};

// The fixture of the namespace tests, parameterized by address family: a NetnsPair for each
// test (skipped where namespaces cannot be made) and a state store in a temporary directory.
// A subclass that sets up more calls NetnsTest::SetUp() first and stops if it skipped or failed.
class NetnsTest : public ::testing::TestWithParam<int> {
protected:
	void SetUp() override;
	void TearDown() override { pair_.reset(); }
	bool set_up() const { return !IsSkipped() && !HasFatalFailure(); }
	int family() const { return GetParam(); }

	TempDir dir_;
	std::unique_ptr<NetnsPair> pair_;
	std::optional<StateStore> store_;
};

} // namespace gp::stock::testing
