// hint_latency: how long a collective-phase hint takes to become a setting on the socket
// (goal: hint -> applied median <= 50 us), measured end to end through libgapctl and a real
// gappaced with the stock backend.
//
// Two network namespaces joined by a veth pair; a TCP sink in B, our connection to it from A;
// gappaced runs in A with a bottleneck covering B's address that makes its planner pace the
// connection. Then, N times: gapctl_phase_begin naming B, and spin on getsockopt
// (SO_MAX_PACING_RATE) of our own socket until the rate changes; gapctl_phase_end, and spin
// until the original rate is back. The host route the daemon adds for B (proto 167) is
// watched through rtnetlink's route multicast group, so its latency is measured too (the
// daemon is told to floor the RTO by route; with --no-route it floors each socket's own
// TCP_RTO_MIN_US where the kernel has it).
//
// Needs root (namespaces, and the daemon's pidfd_getfd): exits 77 with a message without it,
// or where network namespaces cannot be created.
//
// The namespaces share the host's TCP hash table unless --ehash-buckets gives them their own:
// the default is what a daemon in the host's namespace sees (its sock_diag dumps walk every
// bucket of that table); the option shows what the rest of the path costs.
// Everything it creates (namespaces, daemon, temporary directory) is removed on every exit
// path, including failures and SIGINT/SIGTERM; the daemon also gets SIGTERM should this
// process die (PR_SET_PDEATHSIG).
#include "gapctl.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "expected.hpp"
#include "json.hpp"
#include "netlink.hpp"
#include "stock.hpp"
#include "unique_fd.hpp"

namespace {

using gp::Error;
using gp::Expected;
using gp::make_error;
using gp::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr int kExitSkip = 77;
constexpr auto kWaitLimit = std::chrono::seconds(1);	// per measured event: later is a miss
constexpr const char *kNearAddress = "10.89.0.1";
constexpr const char *kFarAddress = "10.89.0.2";
constexpr uint16_t kSinkPort = 5201;
constexpr const char *kNearIfname = "gplat0";
constexpr const char *kFarIfname = "gplat1";

volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

Error errno_error(const std::string &what)
{
	const int err = errno;
	return make_error(err, what + ": " + std::strerror(err));
}

struct Options {
	unsigned count = 200;
	unsigned time_limit_s = 60;
	bool json = false;
	bool threaded = true;
	bool route = true;
	unsigned ehash_buckets = 0;	// 0: A shares the host's TCP hash table, as the host netns has it
	bool pin = true;		// measurer and daemon on different CPUs (when there are two)
	std::string linger = "0ms";	// [daemon] linger; empty: the daemon's default
	bool vary_peers = false;	// a different peer list every phase (rank 1, 2, 1, ...)
	std::string gappaced;
	std::string temp_base;
};

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: hint_latency [-n COUNT] [-t SECONDS] [-j] [--no-thread] [--no-route]\n"
		     "                    [--ehash-buckets N] [--no-pin] [--linger TIME|default]\n"
		     "                    [--vary-peers] [--gappaced PATH] [--temp-dir DIR]\n"
		     "  -n COUNT          phases to measure (default 200, at most 100000)\n"
		     "  -t SECONDS        stop measuring after this long in total (default 60)\n"
		     "  -j                print one JSON line on stdout (the table goes to stderr)\n"
		     "  --no-thread       open libgapctl with GAPCTL_OPEN_NO_THREAD (send from this thread)\n"
		     "  --no-route        do not watch the daemon's host route\n"
		     "  --ehash-buckets N give the namespaces a TCP hash table of their own, N buckets\n"
		     "                    (default: they share the host's, whose size a sock_diag dump walks)\n"
		     "  --linger TIME     the daemon's [daemon] linger, with linger_idle 0 (default 0ms: end ->\n"
		     "                    unpaced is the revert itself); \"default\" keeps the daemon's own\n"
		     "                    linger and linger_idle, which delay reverts\n"
		     "  --vary-peers      name the peer with rank 1 and 2 in turn, so that no phase repeats the\n"
		     "                    one before (gappaced reuses a sender's socket lookup for the same\n"
		     "                    peer list for 1 s: this measures the lookup every time)\n"
		     "  --no-pin          leave CPU placement to the scheduler (default: the daemon on the\n"
		     "                    last CPU, this process and libgapctl's thread on the first)\n"
		     "  --gappaced PATH   the daemon (default: daemon/gappaced of this build tree)\n"
		     "  --temp-dir DIR    where the daemon's sockets, state file and log go (default\n"
		     "                    /dev/shm: a tmpfs like /run, where the state file's fsync is free)\n"
		     "Needs root; exits 77 without it. Creates and removes two network namespaces.\n");
}

std::optional<unsigned> parse_unsigned(const char *text, unsigned lo, unsigned hi)
{
	char *end = nullptr;
	errno = 0;
	const unsigned long value = std::strtoul(text, &end, 10);
	if (errno || end == text || *end || value < lo || value > hi)
		return std::nullopt;
	return static_cast<unsigned>(value);
}

std::string build_tree_daemon()
{
	std::error_code ec;
	const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
	if (ec)
		return "gappaced";
	// tools/bench/hint_latency -> daemon/gappaced
	return (self.parent_path().parent_path().parent_path() / "daemon" / "gappaced").string();
}

// ------------------------------------------------------------------ child processes

struct CommandResult {
	int status = -1; // exit status, or -1 if it did not exit normally
	std::string output;
};

// Runs a program without a shell, its stdout and stderr captured; killed after 10 s.
CommandResult run_command(const std::vector<std::string> &argv)
{
	CommandResult result;
	int pipe_fds[2];
	if (::pipe2(pipe_fds, O_CLOEXEC) < 0) {
		result.output = std::strerror(errno);
		return result;
	}
	UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
	std::vector<char *> args;
	for (const std::string &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	const pid_t pid = ::fork();
	if (pid < 0) {
		result.output = std::strerror(errno);
		return result;
	}
	if (pid == 0) {
		::dup2(write_end.get(), STDOUT_FILENO);
		::dup2(write_end.get(), STDERR_FILENO);
		::execvp(args[0], args.data());
		_exit(127);
	}
	write_end.reset();
	const auto deadline = Clock::now() + std::chrono::seconds(10);
	char buffer[4096];
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
		if (left <= 0) {
			::kill(pid, SIGKILL);
			result.output += "(killed after 10 s)";
			break;
		}
		pollfd p{read_end.get(), POLLIN, 0};
		if (::poll(&p, 1, static_cast<int>(left)) < 0 && errno != EINTR)
			break;
		const ssize_t n = ::read(read_end.get(), buffer, sizeof(buffer));
		if (n == 0)
			break;
		if (n > 0)
			result.output.append(buffer, static_cast<size_t>(n));
		else if (errno != EINTR && errno != EAGAIN)
			break;
	}
	int status = 0;
	while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return result;
}

Expected<void> run_checked(const std::vector<std::string> &argv)
{
	const CommandResult r = run_command(argv);
	if (r.status == 0)
		return {};
	std::string line;
	for (const std::string &a : argv)
		line += (line.empty() ? "" : " ") + a;
	std::string output = r.output;
	while (!output.empty() && output.back() == '\n')
		output.pop_back();
	return make_error(EIO, "`" + line + "` failed" + (r.status >= 0 ? " (exit " + std::to_string(r.status) + ")" : "") +
				       (output.empty() ? "" : ": " + output));
}

// ------------------------------------------------------------------ what we create

// Sets a sysctl of the calling thread's network namespace (/proc/sys/net follows the opener's).
Expected<void> write_sysctl(const std::string &name, const std::string &value)
{
	const std::string path = "/proc/sys/" + name;
	UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
	if (!fd)
		return errno_error("open " + path);
	if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
		return errno_error("write " + value + " to " + path);
	return {};
}

// Owns everything the run creates and undoes it in reverse order, whatever path leaves main().
class Environment {
public:
	Environment()
	{
		unsigned char random_bytes[3] = {};
		if (std::ifstream urandom{"/dev/urandom", std::ios::binary})
			urandom.read(reinterpret_cast<char *>(random_bytes), sizeof(random_bytes));
		char suffix[8];
		std::snprintf(suffix, sizeof(suffix), "%02x%02x%02x", random_bytes[0], random_bytes[1], random_bytes[2]);
		near_name_ = std::string("gplat-a-") + suffix;
		far_name_ = std::string("gplat-b-") + suffix;
		parent_name_ = std::string("gplat-p-") + suffix;
	}

	~Environment()
	{
		stop_daemon(nullptr);
		// Back to where we came from, so that deleting the names really frees the namespaces.
		if (original_netns_)
			::setns(original_netns_.get(), CLONE_NEWNET);
		for (auto it = created_namespaces_.rbegin(); it != created_namespaces_.rend(); ++it) {
			const std::string &name = *it;
			if (auto done = run_checked({"ip", "netns", "del", name}); !done)
				std::fprintf(stderr, "hint_latency: cleanup: %s\n", done.error().message.c_str());
		}
		if (!temp_dir_.empty()) {
			std::error_code ignored;
			std::filesystem::remove_all(temp_dir_, ignored);
		}
	}

	const std::string &near_name() const { return near_name_; }
	const std::string &temp_dir() const { return temp_dir_; }
	pid_t daemon_pid() const { return daemon_pid_; }

	Expected<void> make_temp_dir(const std::string &base)
	{
		std::string pattern = base + "/gplat-XXXXXX";
		if (!::mkdtemp(pattern.data()))
			return errno_error("mkdtemp " + pattern);
		temp_dir_ = pattern;
		return {};
	}

	// A and B, joined by a veth pair, both with cubic; the calling thread stays where it is.
	// With ehash_buckets, A and B are made from a parent namespace whose
	// tcp_child_ehash_entries gives them TCP hash tables of their own, of that size.
	Expected<void> make_namespaces(unsigned ehash_buckets)
	{
		original_netns_.reset(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
		if (!original_netns_)
			return errno_error("open /proc/self/ns/net");
		UniqueFd parent;
		if (ehash_buckets) {
			if (auto done = run_checked({"ip", "netns", "add", parent_name_}); !done)
				return done.error();
			created_namespaces_.push_back(parent_name_);
			parent.reset(::open(("/run/netns/" + parent_name_).c_str(), O_RDONLY | O_CLOEXEC));
			if (!parent || ::setns(parent.get(), CLONE_NEWNET) < 0)
				return errno_error("enter " + parent_name_);
			if (auto done = write_sysctl("net/ipv4/tcp_child_ehash_entries", std::to_string(ehash_buckets)); !done) {
				::setns(original_netns_.get(), CLONE_NEWNET);
				return done.error();
			}
		}
		// `ip netns add` unshares from the namespace it runs in: the parent, if there is one.
		for (const std::string &name : {near_name_, far_name_}) {
			auto done = run_checked({"ip", "netns", "add", name});
			if (!done) {
				::setns(original_netns_.get(), CLONE_NEWNET);
				return done.error();
			}
			created_namespaces_.push_back(name);
		}
		if (parent && ::setns(original_netns_.get(), CLONE_NEWNET) < 0)
			return errno_error("setns back to the original namespace");
		const std::string near_prefix = std::string(kNearAddress) + "/24";
		const std::string far_prefix = std::string(kFarAddress) + "/24";
		const std::vector<std::vector<std::string>> steps = {
			{"ip", "-n", near_name_, "link", "set", "lo", "up"},
			{"ip", "-n", far_name_, "link", "set", "lo", "up"},
			{"ip", "-n", near_name_, "link", "add", kNearIfname, "type", "veth", "peer", "name", kFarIfname,
			 "netns", far_name_},
			{"ip", "-n", near_name_, "addr", "add", near_prefix, "dev", kNearIfname},
			{"ip", "-n", far_name_, "addr", "add", far_prefix, "dev", kFarIfname},
			{"ip", "-n", near_name_, "link", "set", kNearIfname, "up"},
			{"ip", "-n", far_name_, "link", "set", kFarIfname, "up"},
		};
		for (const auto &step : steps)
			if (auto done = run_checked(step); !done)
				return done.error();
		near_netns_.reset(::open(("/run/netns/" + near_name_).c_str(), O_RDONLY | O_CLOEXEC));
		far_netns_.reset(::open(("/run/netns/" + far_name_).c_str(), O_RDONLY | O_CLOEXEC));
		if (!near_netns_ || !far_netns_)
			return errno_error("open /run/netns/" + (near_netns_ ? far_name_ : near_name_));
		// New namespaces may default to BBR; the project measures against cubic.
		for (bool far : {false, true}) {
			if (auto done = enter(far); !done)
				return done.error();
			auto done = write_sysctl("net/ipv4/tcp_congestion_control", "cubic");
			::setns(original_netns_.get(), CLONE_NEWNET);
			if (!done)
				return make_error(done.error().err, (far ? far_name_ : near_name_) + ": " + done.error().message);
		}
		return {};
	}

	Expected<void> enter(bool far)
	{
		if (::setns((far ? far_netns_ : near_netns_).get(), CLONE_NEWNET) < 0)
			return errno_error("setns " + (far ? far_name_ : near_name_));
		return {};
	}

	// Starts the daemon in the calling thread's namespace, its output in the temp dir.
	// cpu >= 0: the daemon runs on that CPU only.
	Expected<void> start_daemon(const std::string &program, const std::string &config, int cpu)
	{
		cpu_set_t cpus;
		CPU_ZERO(&cpus);
		if (cpu >= 0)
			CPU_SET(cpu, &cpus);
		const std::string log = temp_dir_ + "/gappaced.log";
		UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
		if (!log_fd)
			return errno_error("open " + log);
		std::vector<std::string> argv = {program, "--config", config};
		std::vector<char *> args;
		for (std::string &a : argv)
			args.push_back(a.data());
		args.push_back(nullptr);
		const pid_t parent = ::getpid();
		const pid_t pid = ::fork();
		if (pid < 0)
			return errno_error("fork");
		if (pid == 0) {
			// Only async-signal-safe calls until exec: we may have threads.
			::prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (::getppid() != parent)
				_exit(126);
			::dup2(log_fd.get(), STDOUT_FILENO);
			::dup2(log_fd.get(), STDERR_FILENO);
			if (cpu >= 0 && ::sched_setaffinity(0, sizeof(cpus), &cpus) < 0)
				_exit(125);
			sigset_t none;
			sigemptyset(&none);
			::sigprocmask(SIG_SETMASK, &none, nullptr);
			::execv(args[0], args.data());
			_exit(127);
		}
		daemon_pid_ = pid;
		return {};
	}

	// Whether the daemon has exited (and reaps it). Sets *status if so.
	bool daemon_exited(int *status)
	{
		if (daemon_pid_ <= 0)
			return true;
		int st = 0;
		const pid_t r = ::waitpid(daemon_pid_, &st, WNOHANG);
		if (r == daemon_pid_ || (r < 0 && errno == ECHILD)) {
			daemon_pid_ = -1;
			if (status)
				*status = st;
			return true;
		}
		return false;
	}

	// SIGTERM, then up to 5 s for the daemon to revert and exit; SIGKILL after that.
	// Returns an error (also when `errors` is null: then printed) unless it exited 0.
	Expected<void> stop_daemon(std::string *errors)
	{
		if (daemon_pid_ <= 0)
			return {};
		const pid_t pid = daemon_pid_;
		int status = 0;
		Expected<void> result;
		if (daemon_exited(&status)) {
			result = make_error(ECHILD, "gappaced (pid " + std::to_string(pid) + ") had exited early: " +
							    describe_status(status));
		} else {
			::kill(pid, SIGTERM);
			const auto deadline = Clock::now() + std::chrono::seconds(5);
			bool exited = false;
			while (!(exited = daemon_exited(&status)) && Clock::now() < deadline)
				std::this_thread::sleep_for(std::chrono::milliseconds(5));
			if (!exited) {
				::kill(pid, SIGKILL);
				while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
				}
				daemon_pid_ = -1;
				result = make_error(ETIMEDOUT, "gappaced (pid " + std::to_string(pid) +
								       ") did not exit within 5 s of SIGTERM: killed");
			} else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
				result = make_error(EIO, "gappaced (pid " + std::to_string(pid) +
								 ") stopped badly: " + describe_status(status));
			}
		}
		if (!result) {
			if (errors)
				*errors = result.error().message;
			else
				std::fprintf(stderr, "hint_latency: %s\n", result.error().message.c_str());
		}
		return result;
	}

	std::string daemon_log_tail(size_t max_lines = 20) const
	{
		std::ifstream in(temp_dir_ + "/gappaced.log");
		std::vector<std::string> lines;
		for (std::string line; std::getline(in, line);)
			lines.push_back(line);
		std::string out;
		for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i)
			out += "  | " + lines[i] + "\n";
		return out;
	}

	static std::string describe_status(int status)
	{
		if (WIFEXITED(status))
			return "exit status " + std::to_string(WEXITSTATUS(status));
		if (WIFSIGNALED(status))
			return std::string("killed by ") + strsignal(WTERMSIG(status));
		return "status " + std::to_string(status);
	}

private:
	std::string near_name_, far_name_, parent_name_;
	std::vector<std::string> created_namespaces_;
	UniqueFd original_netns_, near_netns_, far_netns_;
	std::string temp_dir_;
	pid_t daemon_pid_ = -1;
};

// ------------------------------------------------------------------ the connection

// A sink in B that accepts one connection and discards what it reads; stops when destroyed.
class Sink {
public:
	~Sink()
	{
		stop_ = true;
		if (thread_.joinable())
			thread_.join();
	}
	// Call in B's namespace.
	Expected<void> listen()
	{
		listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
		if (!listener_)
			return errno_error("socket");
		int on = 1;
		::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		sockaddr_in addr = address();
		if (::bind(listener_.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) < 0)
			return errno_error(std::string("bind ") + kFarAddress);
		if (::listen(listener_.get(), 4) < 0)
			return errno_error("listen");
		return {};
	}
	// After our side connected: take the connection and drain it on a thread.
	Expected<void> accept_and_drain()
	{
		pollfd p{listener_.get(), POLLIN, 0};
		if (::poll(&p, 1, 2000) != 1)
			return make_error(ETIMEDOUT, "the sink saw no connection within 2 s");
		connection_.reset(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
		if (!connection_)
			return errno_error("accept");
		thread_ = std::thread([this] {
			char buffer[65536];
			while (!stop_) {
				pollfd p{connection_.get(), POLLIN, 0};
				if (::poll(&p, 1, 100) == 1 && ::recv(connection_.get(), buffer, sizeof(buffer), 0) <= 0)
					break;
			}
		});
		return {};
	}
	static sockaddr_in address()
	{
		sockaddr_in addr{};
		addr.sin_family = AF_INET;
		addr.sin_port = htons(kSinkPort);
		::inet_pton(AF_INET, kFarAddress, &addr.sin_addr);
		return addr;
	}

private:
	UniqueFd listener_, connection_;
	std::atomic<bool> stop_{false};
	std::thread thread_;
};

Expected<UniqueFd> connect_to_sink()
{
	UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd)
		return errno_error("socket");
	sockaddr_in addr = Sink::address();
	if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) < 0)
		return errno_error(std::string("connect ") + kFarAddress);
	return fd;
}

Expected<uint64_t> pacing_rate(int fd)
{
	uint64_t rate = 0;
	socklen_t len = sizeof(rate);
	if (::getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &len) < 0)
		return errno_error("getsockopt(SO_MAX_PACING_RATE)");
	return rate;
}

// ------------------------------------------------------------------ the daemon

std::string config_text(const std::string &dir, const std::string &linger, bool route)
{
	// The planner paces when the burst cannot fit the queue: one sender (comm_size 2, the
	// peer behind the bottleneck), fan-out 1, 1 MiB per peer > 1 packet of queue.
	std::ostringstream out;
	out << "# written by hint_latency\n"
	    << "[daemon]\n"
	    << "backend = \"stock\"\n"
	    << "hints_socket = \"" << dir << "/hints.sock\"\n"
	    << "control_socket = \"" << dir << "/control.sock\"\n"
	    << "state_file = \"" << dir << "/state.json\"\n"
	    // linger_idle would keep an idle socket's settings past linger: the next phase would
	    // find them in place and measure nothing.
	    << (linger.empty() ? "" : "linger = \"" + linger + "\"\nlinger_idle = \"0s\"\n")
	    // The simple rule always paces and floors: every phase measures both paths.
	    << "[planner]\nmodel = \"default\"\n[pacing]\nframe_overhead = 0\n"
	    // Watching the route: the floor must be one (on Linux 6.15+ it is the socket's own
	    // TCP_RTO_MIN_US by default, which --no-route measures).
	    << (route ? "[rto]\nstock_floor = \"route\"\n" : "")
	    << "[[bottleneck]]\n"
	    << "name = \"far\"\n"
	    << "capacity = \"100mbit\"\n"
	    << "queue_packets = 1\n"
	    << "prefixes = [\"" << kFarAddress << "/32\"]\n";
	return out.str();
}

// The daemon's state, as `gapctl daemon show -j` prints it (one request on the control socket).
Expected<std::string> daemon_show(const std::string &control_socket)
{
	UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd)
		return errno_error("socket");
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", control_socket.c_str());
	if (::connect(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) < 0)
		return errno_error("connect " + control_socket);
	timeval limit{2, 0};
	::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	if (::send(fd.get(), "show\n", 5, MSG_NOSIGNAL) != 5)
		return errno_error("send to " + control_socket);
	std::string reply;
	char buffer[65536];
	while (reply.empty() || reply.back() != '\n') {
		const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
		if (n <= 0)
			return n < 0 ? errno_error("recv from " + control_socket)
				     : make_error(EPROTO, "the daemon closed the control connection without a full reply");
		reply.append(buffer, static_cast<size_t>(n));
		if (reply.size() > (64u << 20))
			return make_error(EMSGSIZE, "control reply larger than 64 MiB");
	}
	return reply;
}

Expected<void> wait_daemon_ready(Environment &env, const std::string &control_socket)
{
	const auto deadline = Clock::now() + std::chrono::seconds(5);
	Error last = make_error(ETIMEDOUT, "no answer");
	while (Clock::now() < deadline && !g_interrupted) {
		int status = 0;
		if (env.daemon_exited(&status))
			return make_error(ECHILD, "gappaced exited at start (" + Environment::describe_status(status) +
							  "), its log:\n" + env.daemon_log_tail());
		auto show = daemon_show(control_socket);
		if (show)
			return {};
		last = show.error();
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return make_error(ETIMEDOUT, "gappaced not ready after 5 s (" + last.message + "):\n" + env.daemon_log_tail());
}

// ------------------------------------------------------------------ route events

// Our view of the daemon's host route to the peer: RTM_NEWROUTE / RTM_DELROUTE of protocol
// 167 from rtnetlink's IPv4 route group (an event, so nothing is polled).
class RouteWatch {
public:
	Expected<void> open(const std::string &peer_address)
	{
		if (::inet_pton(AF_INET, peer_address.c_str(), &peer_) != 1)
			return make_error(EINVAL, "bad address " + peer_address);
		auto nl = gp::NetlinkSocket::open(NETLINK_ROUTE);
		if (!nl)
			return make_error(nl.error().err, "rtnetlink: " + nl.error().message);
		unsigned int group = RTNLGRP_IPV4_ROUTE;
		if (mnl_socket_setsockopt(nl->raw(), NETLINK_ADD_MEMBERSHIP, &group, sizeof(group)) < 0)
			return errno_error("join RTNLGRP_IPV4_ROUTE");
		::fcntl(nl->fd(), F_SETFL, ::fcntl(nl->fd(), F_GETFL) | O_NONBLOCK);
		socket_.emplace(std::move(*nl));
		return {};
	}

	// Forgets events that arrived before now.
	void drain()
	{
		while (::recv(socket_->fd(), buffer_, sizeof(buffer_), MSG_DONTWAIT) > 0) {
		}
	}

	// The time our route to the peer appeared (added) or went away (!added), or nullopt
	// if not before `deadline`. Polled without sleeping, as the socket option is: waking
	// this thread from poll() would add a cross-CPU wakeup to what is measured.
	std::optional<Clock::time_point> wait(bool added, Clock::time_point deadline)
	{
		const uint16_t wanted = added ? RTM_NEWROUTE : RTM_DELROUTE;
		while (!g_interrupted) {
			const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
			if (left < 0)
				return std::nullopt;
			const ssize_t n = ::recv(socket_->fd(), buffer_, sizeof(buffer_), MSG_DONTWAIT);
			const auto now = Clock::now();
			if (n <= 0) {
				sched_yield();
				continue; // ENOBUFS (overrun) or nothing yet
			}
			int left_bytes = static_cast<int>(n);
			for (auto *nlh = reinterpret_cast<const nlmsghdr *>(buffer_); mnl_nlmsg_ok(nlh, left_bytes);
			     nlh = mnl_nlmsg_next(nlh, &left_bytes)) {
				if (nlh->nlmsg_type == wanted && is_ours(nlh))
					return now;
			}
		}
		return std::nullopt;
	}

private:
	bool is_ours(const nlmsghdr *nlh) const
	{
		if (mnl_nlmsg_get_payload_len(nlh) < sizeof(rtmsg))
			return false;
		const auto *rtm = static_cast<const rtmsg *>(mnl_nlmsg_get_payload(nlh));
		if (rtm->rtm_family != AF_INET || rtm->rtm_dst_len != 32 ||
		    rtm->rtm_protocol != gp::stock::kRouteProtocolGappace)
			return false;
		const auto attrs = gp::AttrIndex::of_message(nlh, sizeof(rtmsg), RTA_MAX);
		const nlattr *dst = attrs[RTA_DST];
		return dst && mnl_attr_get_payload_len(dst) == 4 && std::memcmp(mnl_attr_get_payload(dst), &peer_, 4) == 0;
	}

	std::optional<gp::NetlinkSocket> socket_;
	in_addr peer_{};
	alignas(nlmsghdr) char buffer_[32768];
};

// ------------------------------------------------------------------ measuring

struct Series {
	const char *name;
	std::vector<double> us;	// latencies in microseconds
	unsigned misses = 0;

	void add(std::optional<Clock::duration> d)
	{
		if (d)
			us.push_back(std::chrono::duration<double, std::micro>(*d).count());
		else
			++misses;
	}
	// Nearest rank.
	double percentile(double p) const
	{
		if (us.empty())
			return NAN;
		std::vector<double> sorted = us;
		std::sort(sorted.begin(), sorted.end());
		size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
		return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
	}
	double max() const { return us.empty() ? NAN : *std::max_element(us.begin(), us.end()); }
};

// Spins on our own socket's SO_MAX_PACING_RATE until `done(rate)`; the time it took from
// `start`, or nullopt after kWaitLimit (a miss).
template <class Done>
Expected<std::optional<Clock::duration>> spin_until(int fd, Clock::time_point start, Done &&done)
{
	const auto deadline = start + kWaitLimit;
	for (;;) {
		auto rate = pacing_rate(fd);
		const auto now = Clock::now();
		if (!rate)
			return rate.error();
		if (done(*rate))
			return std::optional<Clock::duration>(now - start);
		if (now >= deadline || g_interrupted)
			return std::optional<Clock::duration>();
		// Polling, but leaving the core to the daemon and libgapctl's thread when they can
		// run: on a small machine a spinning measurer would delay what it measures.
		sched_yield();
	}
}

struct Results {
	Series applied{"hint -> paced", {}, 0};
	Series reverted{"end -> unpaced", {}, 0};
	Series route_added{"hint -> route", {}, 0};
	Series route_deleted{"end -> route gone", {}, 0};
	Series daemon_apply{"daemon apply", {}, 0};	// receipt -> applied, as the daemon measured it
	unsigned phases = 0;
	bool stopped_by_time = false;
	bool pinned = false;
	std::optional<uint64_t> cached_resolutions;	// the daemon's counter, where it has one
	// A's net.ipv4.tcp_ehash_entries: negative when it shares the host's table (the daemon's
	// sock_diag dump walks every bucket of it).
	std::optional<long> ehash_entries;
};

std::optional<long> read_ehash_entries()
{
	std::ifstream in("/proc/sys/net/ipv4/tcp_ehash_entries");
	long value = 0;
	if (in >> value)
		return value;
	return std::nullopt;
}

std::string describe_ehash(std::optional<long> entries)
{
	if (!entries)
		return "TCP hash size unknown";
	if (*entries < 0)
		return "TCP hash shared with the host, " + std::to_string(-*entries) + " buckets";
	return "own TCP hash, " + std::to_string(*entries) + " buckets";
}

std::string format_us(double us)
{
	if (std::isnan(us))
		return "-";
	char text[32];
	std::snprintf(text, sizeof(text), us < 1000 ? "%.1f us" : "%.2f ms", us < 1000 ? us : us / 1000);
	return text;
}

void print_table(FILE *out, const Results &r, const Options &o, const std::string &temp_dir)
{
	std::fprintf(out, "hint_latency: %u phases (%s libgapctl, gappaced stock backend, state file in %s, %s, %s, %s)%s\n",
		     r.phases, o.threaded ? "threaded" : "GAPCTL_OPEN_NO_THREAD", temp_dir.c_str(),
		     describe_ehash(r.ehash_entries).c_str(), r.pinned ? "daemon on its own CPU" : "CPUs not pinned",
		     o.linger.empty() ? "the daemon's default linger" : ("linger " + o.linger).c_str(),
		     r.stopped_by_time ? ", stopped by the time limit" : "");
	std::fprintf(out, "%-20s %6s %10s %10s %10s %10s %7s\n", "", "n", "median", "p90", "p99", "max", "misses");
	for (const Series *s : {&r.applied, &r.reverted, &r.route_added, &r.route_deleted, &r.daemon_apply}) {
		if (s->us.empty() && !s->misses)
			continue;
		std::fprintf(out, "%-20s %6zu %10s %10s %10s %10s %7u\n", s->name, s->us.size(),
			     format_us(s->percentile(0.5)).c_str(), format_us(s->percentile(0.9)).c_str(),
			     format_us(s->percentile(0.99)).c_str(), format_us(s->max()).c_str(), s->misses);
	}
	if (r.cached_resolutions)
		std::fprintf(out, "gappaced reused a socket lookup for %llu of %u phases (the warm-up one included)%s\n",
			     static_cast<unsigned long long>(*r.cached_resolutions), r.phases + 1,
			     o.vary_peers ? "" : "; --vary-peers measures the lookup every time");
	std::fprintf(out, "goal: hint -> paced median <= 50 us: %s\n",
		     r.applied.us.empty() ? "not measured" : r.applied.percentile(0.5) <= 50.0 ? "met" : "NOT met");
}

void write_series(gp::JsonWriter &j, const char *key, const Series &s)
{
	j.key(key).begin_object();
	j.field("n", static_cast<uint64_t>(s.us.size())).field("misses", static_cast<uint64_t>(s.misses));
	for (auto [name, p] : {std::pair{"median_us", 0.5}, std::pair{"p90_us", 0.9}, std::pair{"p99_us", 0.99}}) {
		if (s.us.empty())
			j.key(name).null();
		else
			j.field(name, s.percentile(p));
	}
	if (s.us.empty())
		j.key("max_us").null();
	else
		j.field("max_us", s.max());
	j.end_object();
}

std::string json_line(const Results &r, const Options &o)
{
	gp::JsonWriter j;
	j.begin_object();
	j.field("benchmark", "hint_latency").field("phases", static_cast<uint64_t>(r.phases));
	j.field("mode", o.threaded ? "threaded" : "nothread").field("backend", "stock");
	j.field("stopped_by_time", r.stopped_by_time).field("pinned", r.pinned);
	if (o.linger.empty())
		j.key("linger").null();
	else
		j.field("linger", o.linger);
	if (r.ehash_entries)
		j.field("tcp_ehash_entries", static_cast<int64_t>(*r.ehash_entries));
	else
		j.key("tcp_ehash_entries").null();
	write_series(j, "hint_to_paced", r.applied);
	write_series(j, "end_to_unpaced", r.reverted);
	if (o.route) {
		write_series(j, "hint_to_route", r.route_added);
		write_series(j, "end_to_route_gone", r.route_deleted);
	}
	write_series(j, "daemon_apply", r.daemon_apply);
	j.field("vary_peers", o.vary_peers);
	if (r.cached_resolutions)
		j.field("daemon_cached_resolutions", *r.cached_resolutions);
	else
		j.key("daemon_cached_resolutions").null();
	j.end_object();
	return j.str();
}

// The daemon's own apply_latency_ns of our phases (receipt of the hint -> everything applied).
void collect_daemon_latencies(const std::string &show, pid_t self, Series &out)
{
	const auto doc = nlohmann::json::parse(show, nullptr, false);
	if (doc.is_discarded() || !doc.contains("history") || !doc["history"].is_array())
		return;
	for (const auto &record : doc["history"]) {
		if (record.value("pid", 0) != self || !record.contains("apply_latency_ns"))
			continue;
		out.us.push_back(record["apply_latency_ns"].get<double>() / 1000.0);
	}
}

// One BEGIN/END pair, measured. After a missed apply the END is still sent (the daemon must
// not keep the phase) but nothing after it is timed: there was no change to undo.
// A missed revert leaves the socket paced, which would spoil every later phase: that ends the run.
Expected<void> measure_phase(gapctl_t *handle, const gapctl_phase &phase, int fd, uint64_t original, RouteWatch *route,
			     Results &r)
{
	if (route)
		route->drain();
	uint64_t id = 0;
	const auto begin = Clock::now();
	if (int err = gapctl_phase_begin(handle, &phase, &id); err < 0)
		return make_error(-err, std::string("gapctl_phase_begin: ") + gapctl_strerror(err));
	auto applied = spin_until(fd, begin, [&](uint64_t rate) { return rate != original; });
	if (!applied)
		return applied.error();
	r.applied.add(*applied);
	const bool timed = applied->has_value();
	if (route && timed) {
		auto at = route->wait(true, begin + kWaitLimit);
		r.route_added.add(at ? std::optional<Clock::duration>(*at - begin) : std::nullopt);
	}

	const auto end = Clock::now();
	if (int err = gapctl_phase_end(handle, id, 0); err < 0)
		return make_error(-err, std::string("gapctl_phase_end: ") + gapctl_strerror(err));
	auto reverted = spin_until(fd, end, [&](uint64_t rate) { return rate == original; });
	if (!reverted)
		return reverted.error();
	if (timed)
		r.reverted.add(*reverted);
	if (route && timed) {
		auto at = route->wait(false, end + kWaitLimit);
		r.route_deleted.add(at ? std::optional<Clock::duration>(*at - end) : std::nullopt);
	}
	++r.phases;
	if (!*reverted && !g_interrupted)
		return make_error(ETIMEDOUT, "the original pacing rate was not back 1 s after gapctl_phase_end");
	return {};
}

// Whether this process may create network namespaces (root in a container may not).
std::optional<std::string> namespaces_unavailable()
{
	const pid_t pid = ::fork();
	if (pid < 0)
		return std::string("fork: ") + std::strerror(errno);
	if (pid == 0)
		_exit(::unshare(CLONE_NEWNET) == 0 ? 0 : errno);
	int status = 0;
	while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return std::nullopt;
	return std::string("cannot create a network namespace: ") +
	       (WIFEXITED(status) ? std::strerror(WEXITSTATUS(status)) : "the probe died");
}

int run(const Options &o)
{
	Environment env;
	Sink sink;
	UniqueFd connection;
	gapctl_t *handle = nullptr;
	// Closed before env's destructor stops the daemon and deletes the namespaces.
	struct HandleCloser {
		gapctl_t *&h;
		~HandleCloser() { gapctl_close(h); }
	} closer{handle};

	auto fail = [&](const std::string &message) {
		std::fprintf(stderr, "hint_latency: %s\n", message.c_str());
		return 1;
	};

	if (auto done = env.make_temp_dir(o.temp_base); !done)
		return fail(done.error().message);
	if (auto done = env.make_namespaces(o.ehash_buckets); !done)
		return fail(done.error().message);
	if (auto done = env.enter(true); !done)
		return fail(done.error().message);
	if (auto done = sink.listen(); !done)
		return fail("sink in B: " + done.error().message);
	if (auto done = env.enter(false); !done)
		return fail(done.error().message);
	auto connected = connect_to_sink();
	if (!connected)
		return fail(connected.error().message);
	connection = std::move(*connected);
	if (auto done = sink.accept_and_drain(); !done)
		return fail(done.error().message);

	const std::string dir = env.temp_dir();
	const std::string config_path = dir + "/gappaced.toml";
	{
		std::ofstream config(config_path);
		config << config_text(dir, o.linger, o.route);
		if (!config)
			return fail("cannot write " + config_path);
	}
	// A spinning measurer that shares a CPU with the daemon sees the rate change only when the
	// daemon blocks again, after everything it applies for the phase (routes too): apart,
	// each sees the other as it happens.
	const long n_cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
	const bool pinned = o.pin && n_cpus >= 2;
	if (auto done = env.start_daemon(o.gappaced, config_path, pinned ? static_cast<int>(n_cpus - 1) : -1); !done)
		return fail(done.error().message);
	if (pinned) {
		cpu_set_t first;
		CPU_ZERO(&first);
		CPU_SET(0, &first);
		if (::sched_setaffinity(0, sizeof(first), &first) < 0)
			return fail(errno_error("sched_setaffinity").message);
	}
	if (auto done = wait_daemon_ready(env, dir + "/control.sock"); !done)
		return fail(done.error().message);

	::setenv("GAPPACE_HINTS_SOCK", (dir + "/hints.sock").c_str(), 1);
	const uint32_t flags = GAPCTL_OPEN_NO_KERNEL | (o.threaded ? 0 : GAPCTL_OPEN_NO_THREAD);
	if (int err = gapctl_open(&handle, flags); err < 0)
		return fail(std::string("gapctl_open: ") + gapctl_strerror(err));
	gapctl_stats stats{};
	stats.struct_size = sizeof(stats);
	for (auto deadline = Clock::now() + std::chrono::seconds(1);
	     gapctl_get_stats(handle, &stats) == 0 && stats.carrier != GAPCTL_CARRIER_SOCKET && Clock::now() < deadline;)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	if (stats.carrier != GAPCTL_CARRIER_SOCKET)
		return fail("libgapctl did not connect to gappaced's hints socket " + dir + "/hints.sock");

	RouteWatch route_watch;
	if (o.route) {
		if (auto done = route_watch.open(kFarAddress); !done)
			return fail(done.error().message);
	}

	gapctl_peer peer{};
	peer.fd = -1;
	peer.family = AF_INET;
	::inet_pton(AF_INET, kFarAddress, peer.addr);
	peer.rank = 1;
	gapctl_phase phase{};
	phase.struct_size = sizeof(phase);
	phase.kind = GAPCTL_KIND_ALLTOALL;
	phase.bytes_per_peer = 1 << 20;
	phase.comm_size = 2;
	phase.rank = 0;
	phase.n_peers = 1;
	phase.peers = &peer;

	auto original = pacing_rate(connection.get());
	if (!original)
		return fail(original.error().message);

	// One phase first that must work: otherwise the numbers would be 200 misses.
	{
		Results warmup;
		auto done = measure_phase(handle, phase, connection.get(), *original, o.route ? &route_watch : nullptr, warmup);
		if (!done || warmup.applied.us.empty()) {
			std::string why = done ? "the pacing rate did not change within 1 s of gapctl_phase_begin"
					       : done.error().message;
			auto show = daemon_show(dir + "/control.sock");
			return fail(why + "\ndaemon state: " + (show ? *show : show.error().message) +
				    "daemon log:\n" + env.daemon_log_tail());
		}
	}

	Results results;
	results.ehash_entries = read_ehash_entries();
	results.pinned = pinned;
	const auto stop_at = Clock::now() + std::chrono::seconds(o.time_limit_s);
	for (unsigned i = 0; i < o.count && !g_interrupted; ++i) {
		if (Clock::now() >= stop_at) {
			results.stopped_by_time = true;
			break;
		}
		// comm_size 2 with one peer behind the bottleneck: the plan is the same for either rank.
		if (o.vary_peers)
			peer.rank = 1 + static_cast<int32_t>(i % 2);
		if (auto done = measure_phase(handle, phase, connection.get(), *original, o.route ? &route_watch : nullptr,
					      results);
		    !done)
			return fail(done.error().message + "\ndaemon log:\n" + env.daemon_log_tail());
	}
	if (g_interrupted)
		return fail("interrupted");

	auto show = daemon_show(dir + "/control.sock");
	if (show) {
		Series daemon_side{"daemon apply", {}, 0};
		collect_daemon_latencies(*show, ::getpid(), daemon_side);
		const auto doc = nlohmann::json::parse(*show, nullptr, false);
		if (!doc.is_discarded() && doc.contains("counters") && doc["counters"].contains("resolutions_cached") &&
		    doc["counters"]["resolutions_cached"].is_number_unsigned())
			results.cached_resolutions = doc["counters"]["resolutions_cached"].get<uint64_t>();
		// The history holds the last phases, the warm-up one included: keep as many as we measured.
		if (daemon_side.us.size() > results.phases)
			daemon_side.us.erase(daemon_side.us.begin(),
					     daemon_side.us.begin() + static_cast<std::ptrdiff_t>(daemon_side.us.size() - results.phases));
		results.daemon_apply.us = std::move(daemon_side.us);
	}

	gapctl_get_stats(handle, &stats);
	if (stats.hints_dropped)
		std::fprintf(stderr, "hint_latency: note: libgapctl dropped %llu hints\n",
			     static_cast<unsigned long long>(stats.hints_dropped));

	// The daemon must revert what it applied and exit cleanly on SIGTERM: leave one phase
	// open and check that stopping the daemon un-paces the connection.
	uint64_t open_phase = 0;
	if (int err = gapctl_phase_begin(handle, &phase, &open_phase); err < 0)
		return fail(std::string("gapctl_phase_begin: ") + gapctl_strerror(err));
	auto paced = spin_until(connection.get(), Clock::now(), [&](uint64_t rate) { return rate != *original; });
	if (!paced || !*paced)
		return fail("the last phase (left open for the shutdown check) was not applied within 1 s");
	std::string stop_error;
	if (auto stopped = env.stop_daemon(&stop_error); !stopped)
		return fail(stop_error + "\ndaemon log:\n" + env.daemon_log_tail());
	if (auto after = pacing_rate(connection.get()); !after || *after != *original)
		return fail("the connection is still paced after gappaced stopped (SIGTERM must revert open phases)");

	print_table(o.json ? stderr : stdout, results, o, o.temp_base);
	if (o.json)
		std::printf("%s\n", json_line(results, o).c_str());
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Options o;
	for (int i = 1; i < argc; ++i) {
		const std::string arg = argv[i];
		auto next = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
		if (arg == "--ehash-buckets") {
			const char *value = next();
			auto n = value ? parse_unsigned(value, 1, 1u << 24) : std::nullopt;
			if (!n) {
				std::fprintf(stderr, "hint_latency: --ehash-buckets needs a number in 1..16777216\n");
				return 2;
			}
			o.ehash_buckets = *n;
		} else if (arg == "-n" || arg == "-t") {
			const char *value = next();
			auto n = value ? parse_unsigned(value, 1, arg == "-n" ? 100000 : 3600) : std::nullopt;
			if (!n) {
				std::fprintf(stderr, "hint_latency: %s needs a number in %s\n", arg.c_str(),
					     arg == "-n" ? "1..100000" : "1..3600 (seconds)");
				return 2;
			}
			(arg == "-n" ? o.count : o.time_limit_s) = *n;
		} else if (arg == "-j") {
			o.json = true;
		} else if (arg == "--no-thread") {
			o.threaded = false;
		} else if (arg == "--vary-peers") {
			o.vary_peers = true;
		} else if (arg == "--no-pin") {
			o.pin = false;
		} else if (arg == "--no-route") {
			o.route = false;
		} else if (arg == "--linger") {
			const char *value = next();
			if (!value || !*value || std::strchr(value, '"') || std::strchr(value, '\n')) {
				std::fprintf(stderr, "hint_latency: --linger needs a duration (\"0ms\", \"50ms\") or \"default\"\n");
				return 2;
			}
			o.linger = std::strcmp(value, "default") == 0 ? "" : value;
		} else if (arg == "--gappaced" || arg == "--temp-dir") {
			const char *value = next();
			if (!value || !*value) {
				std::fprintf(stderr, "hint_latency: %s needs a path\n", arg.c_str());
				return 2;
			}
			(arg == "--gappaced" ? o.gappaced : o.temp_base) = value;
		} else if (arg == "-h" || arg == "--help") {
			usage(stdout);
			return 0;
		} else {
			std::fprintf(stderr, "hint_latency: unknown argument \"%s\"\n", arg.c_str());
			usage(stderr);
			return 2;
		}
	}
	if (::geteuid() != 0) {
		std::fprintf(stderr, "hint_latency: skipped: needs root (network namespaces, and gappaced's pidfd_getfd)\n");
		return kExitSkip;
	}
	if (auto why = namespaces_unavailable()) {
		std::fprintf(stderr, "hint_latency: skipped: %s\n", why->c_str());
		return kExitSkip;
	}
	if (o.gappaced.empty())
		o.gappaced = build_tree_daemon();
	if (::access(o.gappaced.c_str(), X_OK) < 0) {
		std::fprintf(stderr, "hint_latency: %s: %s (build the gappaced target, or pass --gappaced)\n",
			     o.gappaced.c_str(), std::strerror(errno));
		return 1;
	}
	if (o.temp_base.empty()) {
		struct stat st{};
		o.temp_base = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
	}

	struct sigaction sa{};
	sa.sa_handler = on_interrupt; // no SA_RESTART: blocking calls return, loops see the flag
	sigemptyset(&sa.sa_mask);
	for (int s : {SIGINT, SIGTERM, SIGHUP})
		::sigaction(s, &sa, nullptr);
	::signal(SIGPIPE, SIG_IGN);

	return run(o);
}
