#include "netns.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

namespace gp::stock::testing {
namespace {

constexpr int kChildLifetimeSeconds = 120;

UniqueFd open_own_netns()
{
	return UniqueFd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
}

bool write_full(int fd, const void *data, size_t len)
{
	const auto *bytes = static_cast<const char *>(data);
	while (len > 0) {
		const ssize_t n = ::write(fd, bytes, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		bytes += n;
		len -= static_cast<size_t>(n);
	}
	return true;
}

// Reads exactly len bytes, waiting at most `timeout_ms` in total.
bool read_full(int fd, void *data, size_t len, int timeout_ms)
{
	auto *bytes = static_cast<char *>(data);
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
	while (len > 0) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			return false;
		pollfd p{fd, POLLIN, 0};
		if (poll(&p, 1, static_cast<int>(left.count())) <= 0)
			continue;
		const ssize_t n = ::read(fd, bytes, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		bytes += n;
		len -= static_cast<size_t>(n);
	}
	return true;
}

socklen_t fill_sockaddr(const Endpoint &endpoint, sockaddr_storage &storage)
{
	std::memset(&storage, 0, sizeof(storage));
	if (endpoint.family == AF_INET6) {
		auto *sin6 = reinterpret_cast<sockaddr_in6 *>(&storage);
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(endpoint.port);
		std::memcpy(&sin6->sin6_addr, endpoint.address.data(), 16);
		return sizeof(sockaddr_in6);
	}
	auto *sin = reinterpret_cast<sockaddr_in *>(&storage);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(endpoint.port);
	std::memcpy(&sin->sin_addr, endpoint.address.data(), 4);
	return sizeof(sockaddr_in);
}

// New TCP congestion control per namespace: cubic as the project's tests use, or reno where
// this kernel only allows reno and bbr in non-initial namespaces (tcp_allowed_congestion_control).
void set_congestion_control()
{
	for (const char *name : {"cubic", "reno"}) {
		UniqueFd fd(::open("/proc/sys/net/ipv4/tcp_congestion_control", O_WRONLY | O_CLOEXEC));
		if (fd && ::write(fd.get(), name, std::strlen(name)) > 0)
			return;
	}
}

[[noreturn]] void client_main(const Endpoint &server, ClientProcess::Mode mode, std::optional<uid_t> uid, int commands,
			      int replies)
{
	if (uid && (setresgid(*uid, *uid, *uid) < 0 || setresuid(*uid, *uid, *uid) < 0))
		_exit(2);
	prctl(PR_SET_PDEATHSIG, SIGKILL); // after setresuid, which clears it
	alarm(kChildLifetimeSeconds);
	int fd = ::socket(server.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sockaddr_storage address;
	const socklen_t len = fill_sockaddr(server, address);
	if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr *>(&address), len) < 0)
		_exit(3);
	struct stat st {};
	fstat(fd, &st);
	const uint64_t report[2] = {static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(fd)};
	if (!write_full(replies, report, sizeof(report)))
		_exit(4);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	static char chunk[65536];
	for (;;) {
		pollfd polls[2] = {{commands, POLLIN, 0}, {fd, static_cast<short>(mode == ClientProcess::Mode::bulk ? POLLOUT : 0), 0}};
		if (poll(polls, 2, 1000) < 0 && errno != EINTR)
			_exit(5);
		if (polls[0].revents) {
			char command = 0;
			if (::read(commands, &command, 1) != 1 || command == 'q')
				_exit(0);
			if (command == 'p') {
				uint64_t rate = 0;
				socklen_t rate_len = sizeof(rate);
				if (getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &rate_len) < 0)
					rate = 0;
				write_full(replies, &rate, sizeof(rate));
			}
		}
		if (polls[1].revents & POLLOUT) {
			if (::send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0 && errno != EAGAIN)
				_exit(6);
		}
	}
}

} // namespace

std::optional<std::string> namespace_tests_unavailable()
{
	if (geteuid() != 0)
		return "needs root (network namespaces, routes, pidfd_getfd)";
	std::optional<std::string> reason;
	std::thread probe([&] {
		if (unshare(CLONE_NEWNET) < 0)
			reason = std::string("unshare(CLONE_NEWNET) fails here: ") + std::strerror(errno);
	});
	probe.join();
	return reason;
}

CommandResult run_command(const std::vector<std::string> &argv, int netns_fd)
{
	CommandResult result;
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return result;
	const pid_t pid = fork();
	if (pid == 0) {
		if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) < 0)
			_exit(126);
		dup2(out[1], STDOUT_FILENO);
		dup2(out[1], STDERR_FILENO);
		std::vector<char *> args;
		for (const std::string &arg : argv)
			args.push_back(const_cast<char *>(arg.c_str()));
		args.push_back(nullptr);
		execvp(args[0], args.data());
		_exit(127);
	}
	close(out[1]);
	char buffer[4096];
	ssize_t n;
	while ((n = ::read(out[0], buffer, sizeof(buffer))) > 0)
		result.output.append(buffer, static_cast<size_t>(n));
	close(out[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return result;
}

void in_netns(int netns_fd, const std::function<void()> &body)
{
	std::thread worker([&] {
		if (setns(netns_fd, CLONE_NEWNET) < 0)
			return;
		body();
	});
	worker.join();
}

std::unique_ptr<NetnsPair> NetnsPair::create(std::string &error)
{
	std::unique_ptr<NetnsPair> pair(new NetnsPair());
	pair->original_ = open_own_netns();
	if (!pair->original_) {
		error = "cannot open our network namespace";
		return nullptr;
	}
	if (unshare(CLONE_NEWNET) < 0) {
		error = std::string("unshare: ") + std::strerror(errno);
		return nullptr;
	}
	pair->near_ = open_own_netns();
	set_congestion_control();
	in_netns(pair->near_.get(), [&] {
		if (unshare(CLONE_NEWNET) == 0) {
			pair->far_ = open_own_netns();
			set_congestion_control();
		}
	});
	if (!pair->far_) {
		error = "cannot create the far namespace";
		return nullptr; // the destructor moves us back
	}
	const std::string far_path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(pair->far_.get());
	const std::vector<std::vector<std::string>> near_setup = {
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", kNearIfname, "type", "veth", "peer", "name", kFarIfname, "netns", far_path},
		{"ip", "addr", "add", "10.77.0.1/24", "dev", kNearIfname},
		{"ip", "-6", "addr", "add", "fd77::1/64", "dev", kNearIfname, "nodad"},
		{"ip", "link", "set", kNearIfname, "up"},
	};
	const std::vector<std::vector<std::string>> far_setup = {
		{"ip", "link", "set", "lo", "up"},
		{"ip", "addr", "add", "10.77.0.2/24", "dev", kFarIfname},
		{"ip", "-6", "addr", "add", "fd77::2/64", "dev", kFarIfname, "nodad"},
		{"ip", "link", "set", kFarIfname, "up"},
	};
	for (const auto &argv : near_setup) {
		if (auto result = run_command(argv); result.status != 0) {
			error = "setup failed: " + result.output;
			return nullptr;
		}
	}
	for (const auto &argv : far_setup) {
		if (auto result = run_command(argv, pair->far_.get()); result.status != 0) {
			error = "setup failed in the far namespace: " + result.output;
			return nullptr;
		}
	}
	// IPv6 installs an address's local route only once the link has carrier, which the veth
	// gets when its far end is up, and the kernel reports that through linkwatch, up to a
	// second later. Until then a lookup of our own address finds the /64 prefix route instead of
	// the local one. Wait for both local routes (bounded).
	for (int attempt = 0;; ++attempt) {
		const auto near_local = run_command({"ip", "-6", "route", "show", "table", "local", "fd77::1"});
		const auto far_local = run_command({"ip", "-6", "route", "show", "table", "local", "fd77::2"}, pair->far_.get());
		if (near_local.status == 0 && far_local.status == 0 && !near_local.output.empty() && !far_local.output.empty())
			break;
		if (attempt == 100) {
			error = "the IPv6 local routes did not appear within 5 s";
			return nullptr;
		}
		usleep(50000);
	}
	return pair;
}

NetnsPair::~NetnsPair()
{
	if (original_)
		setns(original_.get(), CLONE_NEWNET);
}

Endpoint NetnsPair::near_address(int family) const
{
	return *parse_host_address(family == AF_INET6 ? "fd77::1" : "10.77.0.1");
}

Endpoint NetnsPair::far_address(int family) const
{
	return *parse_host_address(family == AF_INET6 ? "fd77::2" : "10.77.0.2");
}

UniqueFd NetnsPair::far_socket(int family, int type) const
{
	UniqueFd socket;
	in_netns(far_.get(), [&] { socket.reset(::socket(family, type | SOCK_CLOEXEC, 0)); });
	return socket;
}

FarServer::FarServer(const NetnsPair &pair, int family, Mode mode) : mode_(mode)
{
	listener_ = pair.far_socket(family, SOCK_STREAM);
	if (!listener_)
		return;
	int on = 1;
	setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	endpoint_ = pair.far_address(family);
	sockaddr_storage address;
	socklen_t len = fill_sockaddr(endpoint_, address);
	if (bind(listener_.get(), reinterpret_cast<sockaddr *>(&address), len) < 0 || listen(listener_.get(), 8) < 0) {
		listener_.reset();
		return;
	}
	len = sizeof(address);
	getsockname(listener_.get(), reinterpret_cast<sockaddr *>(&address), &len);
	endpoint_.port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port
						  : reinterpret_cast<sockaddr_in *>(&address)->sin_port);
	thread_ = std::thread([this] { serve(); });
}

FarServer::~FarServer()
{
	stop_ = true;
	if (thread_.joinable())
		thread_.join();
}

void FarServer::serve()
{
	std::vector<UniqueFd> connections;
	static thread_local char buffer[65536];
	while (!stop_) {
		std::vector<pollfd> polls{{listener_.get(), POLLIN, 0}};
		for (const UniqueFd &connection : connections)
			polls.push_back({connection.get(), POLLIN, 0});
		if (poll(polls.data(), polls.size(), 50) <= 0)
			continue;
		if (polls[0].revents & POLLIN) {
			UniqueFd accepted(accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
			if (accepted)
				connections.push_back(std::move(accepted));
		}
		for (size_t i = 1; i < polls.size(); ++i) {
			if (!(polls[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			const ssize_t n = recv(polls[i].fd, buffer, sizeof(buffer), MSG_DONTWAIT);
			if (n <= 0) {
				if (n == 0 || (errno != EAGAIN && errno != EINTR))
					connections[i - 1].reset();
				continue;
			}
			bytes_ += static_cast<uint64_t>(n);
			if (mode_ == Mode::echo)
				send(polls[i].fd, buffer, static_cast<size_t>(n), MSG_NOSIGNAL);
		}
		std::erase_if(connections, [](const UniqueFd &fd) { return !fd; });
	}
}

double measure_rate(const FarServer &server, std::chrono::milliseconds window)
{
	const uint64_t before = server.bytes_received();
	const auto start = std::chrono::steady_clock::now();
	std::this_thread::sleep_for(window);
	const uint64_t after = server.bytes_received();
	const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	return static_cast<double>(after - before) * 8.0 / seconds;
}

std::unique_ptr<ClientProcess> ClientProcess::start(const Endpoint &server, Mode mode, std::optional<uid_t> uid,
						    std::string &error)
{
	int commands[2], replies[2];
	if (pipe2(commands, O_CLOEXEC) < 0 || pipe2(replies, O_CLOEXEC) < 0) {
		error = "pipe failed";
		return nullptr;
	}
	const pid_t pid = fork();
	if (pid < 0) {
		error = "fork failed";
		return nullptr;
	}
	if (pid == 0) {
		close(commands[1]);
		close(replies[0]);
		client_main(server, mode, uid, commands[0], replies[1]);
	}
	close(commands[0]);
	close(replies[1]);
	std::unique_ptr<ClientProcess> client(new ClientProcess());
	client->pid_ = pid;
	client->commands_.reset(commands[1]);
	client->replies_.reset(replies[0]);
	uint64_t report[2] = {};
	if (!read_full(client->replies_.get(), report, sizeof(report), 5000)) {
		error = "the client process did not connect to " + format_endpoint(server);
		return nullptr;
	}
	client->inode_ = report[0];
	client->fd_ = static_cast<int>(report[1]);
	return client;
}

ClientProcess::~ClientProcess()
{
	kill_now();
}

void ClientProcess::kill_now()
{
	if (pid_ <= 0)
		return;
	::kill(pid_, SIGKILL);
	waitpid(pid_, nullptr, 0);
	pid_ = -1;
}

std::optional<uint64_t> ClientProcess::pacing_rate_seen_by_owner()
{
	if (pid_ <= 0 || !write_full(commands_.get(), "p", 1))
		return std::nullopt;
	uint64_t rate = 0;
	if (!read_full(replies_.get(), &rate, sizeof(rate), 5000))
		return std::nullopt;
	return rate;
}

EchoClient::EchoClient(const Endpoint &server)
{
	socket_.reset(::socket(server.family, SOCK_STREAM | SOCK_CLOEXEC, 0));
	sockaddr_storage address;
	const socklen_t len = fill_sockaddr(server, address);
	if (socket_ && ::connect(socket_.get(), reinterpret_cast<sockaddr *>(&address), len) < 0)
		socket_.reset();
	if (socket_) {
		timeval timeout{2, 0};
		setsockopt(socket_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
		int on = 1;
		setsockopt(socket_.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	}
}

bool EchoClient::ping_pong(int count)
{
	for (int i = 0; i < count; ++i) {
		char byte = 'x';
		if (send(socket_.get(), &byte, 1, MSG_NOSIGNAL) != 1 || recv(socket_.get(), &byte, 1, 0) != 1)
			return false;
	}
	return true;
}

uint32_t EchoClient::rto_us() const
{
	tcp_info info{};
	socklen_t len = sizeof(info);
	if (getsockopt(socket_.get(), IPPROTO_TCP, TCP_INFO, &info, &len) < 0)
		return 0;
	return info.tcpi_rto;
}

TempDir::TempDir()
{
	std::random_device random;
	path_ = (std::filesystem::temp_directory_path() / ("gappaced-stock-test-" + std::to_string(random()))).string();
	std::filesystem::create_directories(path_);
}

TempDir::~TempDir()
{
	std::error_code ignored;
	std::filesystem::remove_all(path_, ignored);
}

void NetnsTest::SetUp()
{
	if (auto reason = namespace_tests_unavailable())
		GTEST_SKIP() << *reason;
	std::string error;
	pair_ = NetnsPair::create(error);
	ASSERT_TRUE(pair_) << error;
	auto store = StateStore::create(dir_.path() + "/state.json");
	ASSERT_TRUE(store) << store.error().message;
	store_.emplace(std::move(*store));
}

} // namespace gp::stock::testing
