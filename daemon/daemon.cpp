#include "daemon.hpp"

#include <fcntl.h>
#include <sched.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <syslog.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "json.hpp"
#include "stock.hpp"
#include "units.hpp"
#include "unix_address.hpp"

namespace gp::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kHintBufferSize = 256 * 1024;	// > max_encoded_size(GAPPACE_HINT_MAX_PEERS)
constexpr int kTickMs = 100;
constexpr auto kLogRepeatEvery = std::chrono::seconds(10);
constexpr size_t kMaxQuietPredictions = 4096;	// (pid, signature) pairs advised quiet
constexpr size_t kRecentErrors = 32;

int64_t unix_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
		.count();
}

Error errno_error(const std::string &what)
{
	int err = errno;
	return make_error(err, what + ": " + std::strerror(err));
}

Expected<UniqueFd> listen_unix(const std::string &path, int type, mode_t mode)
{
	auto addr = make_unix_address(path);
	if (!addr)
		return make_error(ENAMETOOLONG, path + ": not a valid Unix socket path");
	if (!addr->abstract) {
		std::error_code ec;
		std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
		if (ec)
			return make_error(ec.value(), "cannot create the directory of " + path + ": " + ec.message());
		// A socket file left by a daemon that died: nobody listens on it any more.
		::unlink(path.c_str());
	}
	UniqueFd fd(::socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!fd)
		return errno_error("socket");
	if (::bind(fd.get(), addr->get(), addr->len) < 0)
		return errno_error("bind " + path);
	// Abstract sockets have no file mode: anyone in the network namespace may connect, which
	// is what the hints socket allows anyway; the control socket checks SO_PEERCRED below.
	if (!addr->abstract && ::chmod(path.c_str(), mode) < 0)
		return errno_error("chmod " + path);
	if (::listen(fd.get(), 64) < 0)
		return errno_error("listen " + path);
	return fd;
}

// Whether some process listens at a Unix socket path (a file or an "@abstract" name): it
// accepts a connection, or its backlog is full. A file nobody listens on is refused.
bool someone_listens(const std::string &path, int type)
{
	auto addr = make_unix_address(path);
	if (!addr)
		return false;
	UniqueFd fd(::socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!fd)
		return false;
	if (::connect(fd.get(), addr->get(), addr->len) == 0)
		return true;
	return errno == EAGAIN;
}

// One daemon per state file: an exclusive flock on STATE_FILE.lock, held for the daemon's life
// (the kernel drops it when the process dies, however it dies). A second daemon would undo the
// first one's live settings as a dead predecessor's, purge its routes and shapers, and take
// over its sockets. The file holds the owner's pid, for the message.
Expected<UniqueFd> lock_instance(const std::string &state_file)
{
	const std::string path = state_file + ".lock";
	if (auto made = stock::make_parent_directories(path); !made)
		return made.error();
	UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
	if (!fd)
		return errno_error("cannot open " + path);
	if (::flock(fd.get(), LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return errno_error("cannot lock " + path);
		char owner[32] = {};
		const ssize_t n = ::pread(fd.get(), owner, sizeof(owner) - 1, 0);
		std::string pid = n > 0 ? std::string(owner, static_cast<size_t>(n)) : "";
		pid.erase(std::remove_if(pid.begin(), pid.end(), [](char c) { return c < '0' || c > '9'; }),
			  pid.end());
		return make_error(EBUSY, "another gappaced" + (pid.empty() ? "" : " (pid " + pid + ")") +
						 " runs with the state file " + state_file + " (it holds " + path +
						 "); stop it first, or give this one its own state_file and sockets");
	}
	const std::string mine = std::to_string(::getpid()) + "\n";
	if (::ftruncate(fd.get(), 0) < 0 || ::pwrite(fd.get(), mine.data(), mine.size(), 0) < 0)
		return errno_error("cannot write " + path);
	return fd;
}

uint64_t netns_of(pid_t pid)
{
	struct stat st{};
	std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
	if (::stat(path.c_str(), &st) < 0)
		return 0;
	return st.st_ino;
}

void write_record(JsonWriter &j, const PhaseRecord &r)
{
	j.begin_object();
	j.field("pid", r.sender.pid).field("uid", r.sender.uid).field("netns", r.sender.netns);
	j.field("phase_id", r.header.phase_id);
	const char *kind = hint::kind_name(r.header.kind);
	j.field("kind", kind ? kind : "?");
	const char *algorithm = hint::algorithm_name(r.header.algorithm);
	j.field("algorithm", algorithm ? algorithm : "?");
	j.field("flags", r.header.flags).field("bytes_per_peer", r.header.bytes_per_peer);
	j.field("comm_size", r.header.comm_size).field("rank", static_cast<int64_t>(r.header.rank));
	j.field("repetitions", r.header.repetitions);
	j.key("peers").begin_array();
	for (const hint::Peer &p : r.peers) {
		j.begin_object();
		j.field("remote", format_endpoint(p.remote));
		if (p.is_tuple())
			j.field("local", format_endpoint(p.local));
		j.field("rank", static_cast<int64_t>(p.rank));
		j.end_object();
	}
	j.end_array();
	j.field("plan", r.plan);
	j.key("rate_bps").begin_array();
	for (uint64_t rate : r.rate_bps)
		j.value(rate);
	j.end_array();
	j.field("rto_min_us", r.rto_min_us).field("sockets", static_cast<uint64_t>(r.sockets));
	j.field("paced", static_cast<uint64_t>(r.paced)).field("rto", static_cast<uint64_t>(r.rto));
	j.field("carrier", r.carrier).field("began_unix_ms", r.began_unix_ms);
	j.field("apply_latency_ns", r.apply_latency_ns);
	j.field("resolve_ns", r.resolve_ns).field("backend_ns", r.backend_ns);
	j.field("predicted_us", r.predicted_us).field("calibrated_us", r.calibrated_us);
	if (r.quiet_advised_ms)
		j.field("quiet_advised_ms", r.quiet_advised_ms);
	if (r.header.quiet_phases)
		j.field("quiet_phases", r.header.quiet_phases).field("quiet_ns", r.header.quiet_ns)
			.field("quiet_predicted_us", r.quiet_predicted_us).field("quiet_calibrated_us", r.quiet_calibrated_us);
	if (!r.ended.empty())
		j.field("ended", r.ended).field("duration_ns", r.header.duration_ns);
	j.key("errors").begin_array();
	for (const std::string &e : r.errors)
		j.value(e);
	j.end_array();
	j.end_object();
}

} // namespace

Daemon::~Daemon() = default;

void Daemon::log(int priority, const std::string &message) const
{
	// journald reads the <N> prefix as the priority; a terminal gets a readable tag instead.
	if (journal_)
		std::fprintf(stderr, "<%d>%s\n", priority, message.c_str());
	else
		std::fprintf(stderr, "gappaced: %s%s\n",
			     priority <= LOG_ERR ? "error: " : priority == LOG_WARNING ? "warning: " : "", message.c_str());
}

Expected<std::unique_ptr<Daemon>> Daemon::create(const Options &options)
{
	std::unique_ptr<Daemon> d(new Daemon());
	d->options_ = options;
	d->journal_ = std::getenv("JOURNAL_STREAM") != nullptr;
	if (auto done = d->setup(); !done)
		return done.error();
	return d;
}

Expected<void> Daemon::setup()
{
	started_ = Clock::now();
	auto config = load_config(options_.config_path);
	if (!config) {
		if (config.error().err != ENOENT || options_.config_required)
			return config.error();
		log(LOG_INFO, "no " + options_.config_path + ": using the defaults");
		config_ = Config{};
	} else {
		config_ = std::move(*config);
	}
	auto planner = make_planner(config_);
	if (!planner)
		return planner.error();
	planner_ = std::move(*planner);
	apply_scheduling();
	auto netns = stock::current_netns_inode();
	if (!netns)
		return netns.error();
	own_netns_ = *netns;

	// Before anything is undone or purged as a dead predecessor's: a live daemon on the same
	// state file or sockets must keep what it set.
	auto lock = lock_instance(config_.state_file);
	if (!lock)
		return lock.error();
	instance_lock_ = std::move(*lock);
	for (const auto &[path, type] : {std::pair{config_.hints_socket, SOCK_SEQPACKET},
					 std::pair{config_.control_socket, SOCK_STREAM}}) {
		if (someone_listens(path, type))
			return make_error(EADDRINUSE, path + ": another process (a gappaced with another state file?) "
						       "listens there");
	}

	if (config_.backend != BackendChoice::Stock) {
		auto module = make_module_backend();
		if (module)
			backend_ = std::move(*module);
		else if (config_.backend == BackendChoice::Module)
			return make_error(module.error().err, "backend \"module\": " + module.error().message);
	}
	if (!backend_) {
		if (config_.rto_stock_floor == StockFloor::Socket && !stock::socket_rto_min().available)
			return make_error(ENOPROTOOPT, "[rto] stock_floor = \"socket\": this kernel has no TCP_RTO_MIN_US "
						       "(Linux 6.15+); use \"auto\" or \"route\"");
		std::vector<std::string> notes;
		auto stock = make_stock_backend(config_.state_file, notes);
		for (const std::string &n : notes)
			log(LOG_NOTICE, n);
		if (!stock)
			return make_error(stock.error().err, "backend \"stock\": " + stock.error().message);
		backend_ = std::move(*stock);
	}

	epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
	if (!epoll_)
		return errno_error("epoll_create1");

	// The kernel carrier, whenever the module is there (whatever the backend).
	if (auto nl = NetlinkSocket::open(NETLINK_GENERIC)) {
		auto group = nl->genl_mcast_group_id(GAPPACE_GENL_NAME, GAPPACE_MCGRP_HINTS);
		if (group) {
			unsigned int id = *group;
			int rcvbuf = 4 << 20;
			::setsockopt(nl->fd(), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
			if (mnl_socket_setsockopt(nl->raw(), NETLINK_ADD_MEMBERSHIP, &id, sizeof(id)) < 0) {
				log(LOG_WARNING, std::string("cannot join the kernel's hints group: ") + std::strerror(errno));
			} else {
				fcntl(nl->fd(), F_SETFL, fcntl(nl->fd(), F_GETFL) | O_NONBLOCK);
				// A module older than the summary (family version 1) refuses hints that
				// carry one: senders are asked for it only on the daemon's socket then.
				auto version = nl->genl_family_version(GAPPACE_GENL_NAME);
				kernel_takes_quiet_summary_ = version && *version >= 2;
				kernel_hints_.emplace(std::move(*nl));
				watch(kernel_hints_->fd());
			}
		}
	}

	auto hints = listen_unix(config_.hints_socket, SOCK_SEQPACKET, 0666);
	if (!hints)
		return hints.error();
	hints_listener_ = std::move(*hints);
	watch(hints_listener_.get());
	auto control = listen_unix(config_.control_socket, SOCK_STREAM, 0600);
	if (!control)
		return control.error();
	control_listener_ = std::move(*control);
	watch(control_listener_.get());

	sigset_t signals;
	sigemptyset(&signals);
	for (int s : {SIGTERM, SIGINT, SIGHUP})
		sigaddset(&signals, s);
	sigprocmask(SIG_BLOCK, &signals, nullptr);
	::signal(SIGPIPE, SIG_IGN);
	signal_fd_.reset(::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
	if (!signal_fd_)
		return errno_error("signalfd");
	watch(signal_fd_.get());

	timer_fd_.reset(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
	if (!timer_fd_)
		return errno_error("timerfd_create");
	itimerspec tick{{0, kTickMs * 1000000L}, {0, kTickMs * 1000000L}};
	timerfd_settime(timer_fd_.get(), 0, &tick, nullptr);
	watch(timer_fd_.get());

	log(LOG_INFO, std::string("started: backend ") + backend_->name() + ", planner " + planner_->name() +
			      ", config " + config_.source + ", hints from " + (kernel_hints_ ? "the kernel and " : "") +
			      config_.hints_socket);
	return {};
}

void Daemon::watch(int fd)
{
	epoll_event ev{};
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
}

void Daemon::unwatch(int fd) { ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr); }

int Daemon::run()
{
	sd_notifyf(0, "READY=1\nSTATUS=backend %s\nMAINPID=%d", backend_->name(), static_cast<int>(::getpid()));
	epoll_event events[32];
	while (!stopping_) {
		int n = ::epoll_wait(epoll_.get(), events, 32, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			log(LOG_ERR, std::string("epoll_wait: ") + std::strerror(errno));
			revert_everything("shutdown");
			return 1;
		}
		for (int i = 0; i < n && !stopping_; ++i) {
			const int fd = events[i].data.fd;
			if (kernel_hints_ && fd == kernel_hints_->fd())
				on_kernel_hints();
			else if (fd == hints_listener_.get())
				on_accept_hints();
			else if (fd == control_listener_.get())
				on_accept_control();
			else if (fd == signal_fd_.get())
				on_signal();
			else if (fd == timer_fd_.get())
				on_tick();
			else if (hint_clients_.count(fd))
				on_socket_client(fd);
			else if (control_clients_.count(fd))
				on_control_client(fd);
		}
	}
	sd_notify(0, "STOPPING=1");
	return 0;
}

void Daemon::on_kernel_hints()
{
	static std::vector<char> buffer(kHintBufferSize);
	for (int round = 0; round < 64; ++round) {
		sockaddr_nl from{};
		iovec iov{buffer.data(), buffer.size()};
		msghdr msg{};
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		ssize_t n = ::recvmsg(kernel_hints_->fd(), &msg, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == ENOBUFS) { // the kernel dropped multicast messages for us
				++counters_.hints_dropped;
				log(LOG_WARNING, "the kernel dropped hints (receive buffer full)");
				continue;
			}
			return;
		}
		if (from.nl_pid != 0) { // only the kernel stamps senders
			++counters_.hints_refused;
			continue;
		}
		int left = static_cast<int>(n);
		for (auto *nlh = reinterpret_cast<const nlmsghdr *>(buffer.data()); mnl_nlmsg_ok(nlh, left);
		     nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_type < NLMSG_MIN_TYPE)
				continue;
			handle_hint(nlh, true, std::nullopt);
		}
	}
}

void Daemon::on_accept_hints()
{
	for (int round = 0; round < 64; ++round) {
		UniqueFd client(::accept4(hints_listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
		if (!client)
			return;
		ucred cred{};
		socklen_t len = sizeof(cred);
		if (::getsockopt(client.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			continue;
		hint::Sender sender{static_cast<uint32_t>(cred.pid), cred.uid, static_cast<uint32_t>(netns_of(cred.pid))};
		const int fd = client.get();
		watch(fd);
		hint_clients_.emplace(fd, std::make_pair(std::move(client), sender));
	}
}

void Daemon::on_socket_client(int fd)
{
	static std::vector<char> buffer(kHintBufferSize);
	auto &[socket, sender] = hint_clients_.at(fd);
	for (int round = 0; round < 64; ++round) {
		ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			unwatch(fd);
			hint_clients_.erase(fd);
			return;
		}
		const auto *nlh = reinterpret_cast<const nlmsghdr *>(buffer.data());
		if (static_cast<size_t>(n) > buffer.size() || static_cast<size_t>(n) < sizeof(nlmsghdr) ||
		    nlh->nlmsg_len != static_cast<size_t>(n)) {
			// Received but never decoded: counted here; handle_hint counts the others.
			++counters_.hints_received;
			++counters_.hints_socket;
			++counters_.hints_malformed;
			log(LOG_WARNING, "hint from pid " + std::to_string(sender.pid) + ": not one netlink message per datagram");
			continue;
		}
		handle_hint(nlh, false, sender, fd);
	}
}

void Daemon::handle_hint(const nlmsghdr *nlh, bool from_kernel, std::optional<hint::Sender> peer_cred, int reply_fd)
{
	const auto received = Clock::now();
	++counters_.hints_received;
	++(from_kernel ? counters_.hints_kernel : counters_.hints_socket);
	auto decoded = hint::decode(nlh, from_kernel ? hint::SenderStamp::Required : hint::SenderStamp::Forbidden);
	const std::string who = from_kernel ? "kernel" : "pid " + std::to_string(peer_cred->pid);
	if (!decoded) {
		++counters_.hints_malformed;
		recent_errors_.push_back(who + ": " + decoded.error().message);
		log(LOG_WARNING, "hint from " + who + ": " + decoded.error().message);
		return;
	}
	hint::Hint h = std::move(*decoded);
	if (!from_kernel)
		h.sender = peer_cred;
	// Routes and sockets are per netns: a sender elsewhere is not ours to serve.
	if (h.sender->netns != own_netns_) {
		++counters_.hints_refused;
		log(LOG_WARNING, "hint from pid " + std::to_string(h.sender->pid) + " refused: it is in another network namespace");
		return;
	}
	if (h.header.event == hint::Event::Begin)
		begin_phase(std::move(h), from_kernel, received, reply_fd);
	else
		end_phase(h.sender->pid, h.header.phase_id, h.header.duration_ns, "end");
	while (recent_errors_.size() > kRecentErrors)
		recent_errors_.pop_front();
}

namespace {

// The uid's established sockets that may be the peers' connections, each found by a hash lookup
// of its tuple: the peers' own where all are named by their connections' tuples (as libgapctl
// names them), else those of every connection the sender holds (its fd table, read through
// pidfd_getfd). A dump of the socket table would walk every bucket of the kernel's established
// hash, which all namespaces share: 7 ms of CPU on the 24 GiB test machine, per sender and
// second (the resolution is cached for a second); it is left for a sender whose fds we may
// not duplicate.
Expected<std::vector<stock::TcpSocket>> established_sockets_of(
	std::span<const hint::Peer> peers, uint32_t uid, uint32_t pid,
	const std::function<Expected<std::vector<stock::TcpSocket>>(std::span<const stock::TcpSocket>)> &find_established)
{
	const bool tuples = std::all_of(peers.begin(), peers.end(), [](const hint::Peer &p) {
		return p.is_tuple() && p.local.family == p.remote.family && p.local.port && p.remote.port;
	});
	std::vector<stock::TcpSocket> wanted;
	if (tuples) {
		wanted.resize(peers.size());
		for (size_t i = 0; i < peers.size(); ++i) {
			wanted[i].local = peers[i].local;
			wanted[i].remote = peers[i].remote;
		}
	} else {
		auto held = stock::process_tcp_tuples(static_cast<pid_t>(pid));
		if (!held) {
			// A sender that exited has nothing left to change (resolve_targets).
			if (held.error().err == ESRCH)
				return std::vector<stock::TcpSocket>{};
			// Where pidfd_getfd is denied (EPERM: no CAP_SYS_PTRACE over the sender), the
			// dump still finds the uid's sockets, and the floor's routes need no more.
			stock::SocketFilter filter;
			filter.uid = uid;
			return stock::list_established_tcp(filter);
		}
		wanted = std::move(*held);
	}
	auto sockets = find_established(wanted);
	if (sockets)
		std::erase_if(*sockets, [&](const stock::TcpSocket &s) { return s.uid != uid; });
	return sockets;
}

} // namespace

// The sender's own sockets towards the peers: its uid's established connections that its fd
// table holds. Nothing else is ever touched.
std::vector<TargetSocket> Daemon::resolve_targets(PhaseRecord &r, Clock::time_point received)
{
	std::vector<TargetSocket> targets;
	// Back-to-back collectives name the same peers: reuse the resolution for a second. A
	// socket closed meanwhile only makes the backend's change fail (pidfd_getfd checks the
	// inode; an RTO override by tuple finds no socket).
	auto cached = resolved_.find(r.sender.pid);
	if (cached != resolved_.end() && cached->second.uid == r.sender.uid && cached->second.peers == r.peers &&
	    received < cached->second.until) {
		++counters_.resolutions_cached;
		return cached->second.targets;
	}
	auto sockets = established_sockets_of(r.peers, r.sender.uid, r.sender.pid,
					      [this](std::span<const stock::TcpSocket> tuples) { return find_established(tuples); });
	if (!sockets) {
		r.errors.push_back("socket table: " + sockets.error().message);
	} else {
		std::vector<uint64_t> inodes;
		for (const auto &s : *sockets)
			inodes.push_back(s.inode);
		auto held = inodes.empty() ? Expected<std::vector<stock::ProcessSocket>>(std::vector<stock::ProcessSocket>{})
					   : stock::process_sockets(static_cast<pid_t>(r.sender.pid), inodes);
		if (!held) {
			// A sender that exited before we got to its hint (MPI_Finalize right after the
			// last collective) has nothing left to change: not an error.
			if (held.error().err != ESRCH)
				r.errors.push_back("sockets of pid " + std::to_string(r.sender.pid) + ": " + held.error().message);
		} else {
			std::map<uint64_t, int> fd_of;
			for (const auto &p : *held)
				fd_of.emplace(p.inode, p.fd);
			std::set<uint64_t> taken;
			for (const auto &s : *sockets) {
				auto fd = fd_of.find(s.inode);
				if (fd == fd_of.end() || taken.count(s.inode))
					continue;
				for (size_t i = 0; i < r.peers.size(); ++i) {
					const hint::Peer &p = r.peers[i];
					Endpoint remote_host = s.remote;
					remote_host.port = 0;
					const bool match = p.is_tuple() ? (p.local == s.local && p.remote == s.remote)
									: (remote_host == p.remote);
					if (match) {
						targets.push_back(TargetSocket{s, fd->second, i});
						taken.insert(s.inode);
						break;
					}
				}
			}
		}
	}
	resolved_[r.sender.pid] = Resolution{r.sender.uid, r.peers, targets, received + std::chrono::seconds(1)};
	return targets;
}

void Daemon::begin_phase(hint::Hint h, bool from_kernel, Clock::time_point received, int reply_fd)
{
	const auto key = std::make_pair(uint64_t{h.sender->pid}, h.header.phase_id);
	if (phases_.count(key)) {
		++counters_.hints_malformed;
		log(LOG_WARNING, "pid " + std::to_string(h.sender->pid) + " began phase " + std::to_string(h.header.phase_id) +
					 " twice: ignored");
		return;
	}
	if (phases_.size() >= config_.max_phases) {
		++counters_.hints_dropped;
		log(LOG_WARNING, "too many phases (" + std::to_string(phases_.size()) + "): hint dropped");
		return;
	}
	Phase phase;
	PhaseRecord &r = phase.record;
	r.sender = *h.sender;
	r.header = h.header;
	r.peers = h.peers;
	r.carrier = from_kernel ? "kernel" : "socket";
	r.began_unix_ms = unix_ms();

	// Which of the sender's sockets the peers are is needed to apply a plan, and to plan at all
	// when a peer is named by its address alone (its local address tells the bottleneck side).
	// Peers named by their connection's tuple are planned from the hint: a phase that changes
	// nothing (small collectives, a lossless verdict: most phases that still reach the daemon)
	// then costs no socket-table dump and no scan of the sender's fds, work that competes for
	// the CPU with the ranks of a busy node.
	const bool peers_are_tuples = std::all_of(r.peers.begin(), r.peers.end(), [](const hint::Peer &p) { return p.is_tuple(); });
	std::vector<TargetSocket> targets;
	auto resolve_ns = std::chrono::nanoseconds::zero();
	auto resolve = [&] {
		const auto t0 = Clock::now();
		targets = resolve_targets(r, received);
		resolve_ns = Clock::now() - t0;
	};
	if (!peers_are_tuples)
		resolve();

	std::vector<PlannedPeer> planned(r.peers.size());
	for (size_t i = 0; i < r.peers.size(); ++i) {
		planned[i].remote = r.peers[i].remote;
		planned[i].remote.port = 0;
		planned[i].rank = r.peers[i].rank;
		if (r.peers[i].is_tuple()) {
			planned[i].local = r.peers[i].local;
			planned[i].local->port = 0;
		}
	}
	for (const TargetSocket &t : targets) {
		if (!planned[t.peer].local) {
			planned[t.peer].local = t.socket.local;
			planned[t.peer].local->port = 0;
		}
	}
	if (r.header.quiet_phases)
		take_quiet_summary(r);
	Plan plan = planner_->plan(r.header, planned, config_);
	if (peers_are_tuples && !plan.empty())
		resolve();
	r.sockets = targets.size();
	r.plan = plan.reason;
	r.predicted_us = plan.predicted_us;
	r.calibrated_us = plan.calibrated_us;
	r.rate_bps = plan.rate_bps;
	r.rto_min_us = plan.rto_min_us;
	ApplyRequest request{static_cast<pid_t>(r.sender.pid), planned, targets, &plan, &config_, r.header.bytes_per_peer,
			     one_at_a_time(r.header.algorithm)};
	const auto planned_at = Clock::now();
	backend_->apply(request, phase.applied, r.errors);
	if (config_.linger_idle_ms && (phase.applied.paced || phase.applied.rto))
		for (const TargetSocket &t : targets)
			phase.watched.push_back(t.socket);
	auto ns = [](auto d) { return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
	r.resolve_ns = ns(resolve_ns);
	r.backend_ns = ns(Clock::now() - planned_at);
	r.paced = phase.applied.paced;
	r.rto = phase.applied.rto;
	r.apply_latency_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - received).count());
	// Quiet advice: for a phase that needs nothing (inert), or one whose settings are in place
	// and would be the same for alike phases (holdable: they stay that long, end_phase).
	const bool hold = plan.holdable && config_.quiet_remedied_ms && (r.paced || r.rto);
	if ((hold || (plan.inert && config_.quiet_ms)) && r.header.signature && r.errors.empty()) {
		// A hint from the kernel has no way back: its sender's library keeps the daemon's
		// socket open for advice (same pid and uid, as SO_PEERCRED gave them).
		if (reply_fd < 0 && from_kernel)
			for (const auto &[fd, client] : hint_clients_)
				if (client.second.pid == r.sender.pid && client.second.uid == r.sender.uid) {
					reply_fd = fd;
					break;
				}
		if (reply_fd >= 0) {
			const uint32_t quiet_ms = hold ? config_.quiet_remedied_ms
						       : plan.quiet_ms ? std::min(plan.quiet_ms, config_.quiet_ms) : config_.quiet_ms;
			if (advise_quiet(reply_fd, r.header.signature, from_kernel, quiet_ms)) {
				r.quiet_advised_ms = quiet_ms;
				if (hold)
					phase.hold_until = Clock::now() + std::chrono::milliseconds(quiet_ms);
			}
			if (quiet_predictions_.size() >= kMaxQuietPredictions)
				quiet_predictions_.clear();	// senders long gone, mostly: they come back
			quiet_predictions_[{r.sender.pid, r.header.signature}] = {plan.predicted_us, plan.calibrated_us,
									     hold ? plan_kind(plan) : models::PlanKind::Nothing};
		}
	}
	counters_.apply_errors += r.errors.size();
	for (const std::string &e : r.errors)
		recent_errors_.push_back("pid " + std::to_string(r.sender.pid) + ": " + e);
	++counters_.phases_begun;
	LoggedPlan &logged = logged_plans_[r.sender.pid];
	const auto now = Clock::now();
	// The decision, not its explanation (whose predicted times move with calibration).
	std::string alike = std::to_string(r.header.kind) + " " + std::to_string(r.header.bytes_per_peer) + " " +
			    std::to_string(r.peers.size()) + " " + std::to_string(r.sockets) + " " +
			    std::to_string(r.paced) + " " + std::to_string(r.rto) + " " + std::to_string(r.rto_min_us);
	for (uint64_t rate : r.rate_bps)
		alike += " " + std::to_string(rate);
	if (r.errors.empty() && logged.plan == alike && now - logged.at < kLogRepeatEvery) {
		++logged.repeats;
	} else {
		if (logged.repeats)
			log(LOG_INFO, std::to_string(logged.repeats) + " more phase(s) of pid " + std::to_string(r.sender.pid) +
					      " with the plan logged before");
		logged = LoggedPlan{alike, now, 0};
		log_phase_begin(r);
	}
	phase.deadline = now + std::chrono::milliseconds(config_.phase_timeout_ms);
	phases_.emplace(key, std::move(phase));
}

// Tells a socket sender that phases like this one need nothing new for quiet_ms (nothing at
// all, or the settings held for them): its library skips their hints meanwhile, which is what
// makes small, frequent collectives cost nothing. A full socket loses the advice, not the hint:
// the sender just keeps sending.
bool Daemon::advise_quiet(int reply_fd, uint64_t signature, bool from_kernel, uint32_t quiet_ms)
{
	std::array<uint8_t, hint::kAdviceMaxSize> buffer{};
	// The summary comes back on the carrier the hint came by.
	const bool summary = !from_kernel || kernel_takes_quiet_summary_;
	const size_t len = hint::encode_advice(buffer, 0, hint::Advice{signature, quiet_ms, summary});
	if (::send(reply_fd, buffer.data(), len, MSG_DONTWAIT | MSG_NOSIGNAL) != static_cast<ssize_t>(len))
		return false;
	++counters_.advice_sent;
	return true;
}

// The phases skipped under quiet advice are most of an inert key's phases (all but one per
// quiet period). Their mean time is one calibration sample of the prediction they were advised
// under: without it, the key's correction rests on the few phases that reach the daemon.
void Daemon::take_quiet_summary(PhaseRecord &r)
{
	counters_.quiet_phases_reported += r.header.quiet_phases;
	const auto it = quiet_predictions_.find({r.sender.pid, r.header.signature});
	if (it == quiet_predictions_.end() || it->second.predicted_us <= 0)
		return;
	r.quiet_predicted_us = it->second.predicted_us;
	r.quiet_calibrated_us = it->second.calibrated_us;
	planner_->observe_quiet(r.header, r.quiet_predicted_us, r.header.quiet_phases, r.header.quiet_ns, it->second.kind);
}

void Daemon::log_phase_begin(const PhaseRecord &r) const
{
	const char *kind = hint::kind_name(r.header.kind);
	log(LOG_INFO, "phase " + std::to_string(r.header.phase_id) + " of pid " + std::to_string(r.sender.pid) + " uid " +
			      std::to_string(r.sender.uid) + ": " + (kind ? kind : "?") + " " +
			      std::to_string(r.header.bytes_per_peer) + " B x " + std::to_string(r.peers.size()) +
			      " peers, " + std::to_string(r.sockets) + " sockets: " + r.plan + "; applied " +
			      std::to_string(r.paced) + " pacing, " + std::to_string(r.rto) + " rto" +
			      (r.errors.empty() ? "" : ", " + std::to_string(r.errors.size()) + " errors (" + r.errors.front() + ")"));
}

void Daemon::end_phase(uint64_t pid, uint64_t phase_id, uint64_t duration_ns, const char *why)
{
	auto it = phases_.find({pid, phase_id});
	if (it == phases_.end()) {
		++counters_.unknown_ends;
		return;
	}
	Phase &phase = it->second;
	std::vector<std::string> errors;
	// Settings held for the alike phases their sender skips (quiet advice) stay until its
	// advice runs out, and `linger` longer: the next hinted phase finds them in place.
	const auto now = Clock::now();
	const bool held = phase.hold_until > now;
	if (std::strcmp(why, "end") == 0 && (config_.linger_ms || !phase.watched.empty() || held) &&
	    (phase.applied.paced || phase.applied.rto)) {
		const auto until = std::max(now, phase.hold_until) + std::chrono::milliseconds(config_.linger_ms);
		lingering_.push_back({pid, std::move(phase.applied), until,
				      until + std::chrono::milliseconds(config_.linger_idle_ms), std::move(phase.watched), {}});
	} else
		backend_->revert(phase.applied, errors);
	counters_.apply_errors += errors.size();
	for (const std::string &e : errors) {
		log(LOG_WARNING, "revert of phase " + std::to_string(phase_id) + ": " + e);
		recent_errors_.push_back(e);
	}
	PhaseRecord record = std::move(phase.record);
	record.ended = why;
	record.header.duration_ns = duration_ns;
	if (std::strcmp(why, "end") == 0 && duration_ns) {
		// What the phase really ran with: a plan that found no socket to change ran as nothing.
		Plan applied;
		if (record.paced)
			applied.rate_bps = record.rate_bps;
		applied.rto_min_us = record.rto ? record.rto_min_us : 0;
		planner_->observe(record.header, record.predicted_us, duration_ns, applied);
	}
	record.errors.insert(record.errors.end(), errors.begin(), errors.end());
	if (std::strcmp(why, "end") == 0)
		++counters_.phases_ended;
	else if (std::strcmp(why, "timeout") == 0)
		++counters_.phases_timed_out;
	else if (std::strcmp(why, "sender-exit") == 0)
		++counters_.phases_sender_gone;
	if (std::strcmp(why, "end") != 0)
		log(LOG_NOTICE, "phase " + std::to_string(phase_id) + " of pid " + std::to_string(pid) + " reverted: " + why);
	phases_.erase(it);
	if (config_.history) {
		history_.push_back(std::move(record));
		while (history_.size() > config_.history)
			history_.pop_front();
	}
}

namespace {

// Whether a lingering phase's connections carried nothing new since the first check (which
// only takes the baseline). A socket gone, or unreadable, counts as not idle.
bool still_idle(std::map<uint64_t, uint64_t> &baseline, std::span<const stock::TcpSocket> watched,
		const Expected<std::map<uint64_t, uint64_t>> &now)
{
	if (!now)
		return false;
	const bool first = baseline.empty();
	for (const stock::TcpSocket &socket : watched) {
		const uint64_t inode = socket.inode;
		const auto it = now->find(inode);
		if (it == now->end())
			return false;
		if (first)
			baseline[inode] = it->second;
		else if (baseline[inode] != it->second)
			return false;
	}
	return true;
}

} // namespace

template <class Lookup>
std::invoke_result_t<Lookup, stock::SocketTable &> Daemon::with_socket_table(Lookup &&lookup)
{
	if (!socket_table_) {
		auto opened = stock::SocketTable::open();
		if (!opened)
			return opened.error();
		socket_table_.emplace(std::move(*opened));
	}
	auto result = lookup(*socket_table_);
	if (!result)
		socket_table_.reset(); // a fresh socket for the next, whatever this one's state
	return result;
}

Expected<std::vector<stock::TcpSocket>> Daemon::find_established(std::span<const stock::TcpSocket> tuples)
{
	if (tuples.empty())
		return std::vector<stock::TcpSocket>{};
	return with_socket_table([&](stock::SocketTable &table) { return table.find_established(tuples); });
}

Expected<std::map<uint64_t, uint64_t>> Daemon::written_bytes(std::span<const stock::TcpSocket> sockets)
{
	if (sockets.empty())
		return std::map<uint64_t, uint64_t>{};
	return with_socket_table([&](stock::SocketTable &table) { return table.written_bytes(sockets); });
}

namespace {

// The setting a backend key names, without the hold ("pacing PID INODE#7" -> "pacing PID INODE").
std::string_view setting_of(std::string_view key)
{
	return key.substr(0, key.find(kBackendHoldSeparator));
}

} // namespace

std::vector<bool> Daemon::superseded_lingering(Clock::time_point now) const
{
	std::vector<bool> superseded(lingering_.size());
	// Only the senders of phases that would be checked: past `linger`, within `linger_idle`.
	std::map<uint64_t, std::set<std::string_view>> held_by_newer;
	for (const Lingering &l : lingering_)
		if (now >= l.until && now < l.idle_until && !l.watched.empty())
			held_by_newer.try_emplace(l.pid);
	if (held_by_newer.empty())
		return superseded;
	// Walked from the newest lingering phase to the oldest, with what the sender's running
	// phases and its later lingering ones hold.
	for (const auto &[key, phase] : phases_)
		if (auto held = held_by_newer.find(key.first); held != held_by_newer.end())
			for (const std::string &k : phase.applied.keys)
				held->second.insert(setting_of(k));
	for (size_t i = lingering_.size(); i-- > 0;) {
		const Lingering &l = lingering_[i];
		const auto held = held_by_newer.find(l.pid);
		if (held == held_by_newer.end())
			continue;
		std::set<std::string_view> &newer = held->second;
		superseded[i] = !l.applied.keys.empty() &&
				std::all_of(l.applied.keys.begin(), l.applied.keys.end(),
					    [&](const std::string &k) { return newer.contains(setting_of(k)); });
		for (const std::string &k : l.applied.keys)
			newer.insert(setting_of(k));
	}
	return superseded;
}

void Daemon::release_lingering(std::optional<uint64_t> pid, bool expired_only)
{
	const auto now = Clock::now();
	std::vector<std::string> errors;
	// A phase lingering idle past `linger` is kept while its connections carry nothing new:
	// one read of the socket table for all of those, and only if one is asked about. Not for a
	// phase that a newer one of its sender supersedes (a running phase of it, or one that ended
	// later and lingers itself, holds every setting it holds): its release changes nothing, and
	// back-to-back collectives leave such a phase behind at every tick.
	const std::vector<bool> superseded =
		expired_only ? superseded_lingering(now) : std::vector<bool>(lingering_.size());
	auto idle_checked = [&](size_t i) {
		const Lingering &l = lingering_[i];
		return expired_only && now >= l.until && now < l.idle_until && !l.watched.empty() && !superseded[i] &&
		       (!pid || l.pid == *pid);
	};
	// Back-to-back phases of a rank linger on the same sockets: each is looked up once.
	std::map<uint64_t, stock::TcpSocket> watched;
	for (size_t i = 0; i < lingering_.size(); ++i)
		if (idle_checked(i))
			for (const stock::TcpSocket &s : lingering_[i].watched)
				watched.emplace(s.inode, s);
	std::optional<Expected<std::map<uint64_t, uint64_t>>> written;
	auto written_now = [&]() -> const Expected<std::map<uint64_t, uint64_t>> & {
		if (!written) {
			std::vector<stock::TcpSocket> unique;
			for (const auto &[inode, s] : watched)
				unique.push_back(s);
			written = written_bytes(unique);
			if (!*written)
				log(LOG_WARNING, "linger_idle: " + written->error().message);
		}
		return *written;
	};
	std::vector<Lingering> kept;
	for (size_t i = 0; i < lingering_.size(); ++i) {
		Lingering &l = lingering_[i];
		if ((pid && l.pid != *pid) || (expired_only && now < l.until) ||
		    (idle_checked(i) && still_idle(l.written, l.watched, written_now()))) {
			kept.push_back(std::move(l));
			continue;
		}
		if (superseded[i] && now < l.idle_until)
			++counters_.lingering_superseded;
		backend_->revert(l.applied, errors);
	}
	lingering_ = std::move(kept);
	counters_.apply_errors += errors.size();
	for (const std::string &e : errors) {
		log(LOG_WARNING, "revert: " + e);
		recent_errors_.push_back(e);
	}
}

void Daemon::revert_everything(const char *why)
{
	release_lingering(std::nullopt, false);
	std::vector<std::pair<uint64_t, uint64_t>> keys;
	for (const auto &[key, phase] : phases_)
		keys.push_back(key);
	for (const auto &[pid, id] : keys)
		end_phase(pid, id, 0, why);
	std::vector<std::string> errors;
	backend_->revert_all(errors);
	backend_->flush(errors);
	for (const std::string &e : errors)
		log(LOG_WARNING, "shutdown: " + e);
}

void Daemon::on_signal()
{
	signalfd_siginfo info{};
	while (::read(signal_fd_.get(), &info, sizeof(info)) == sizeof(info)) {
		if (info.ssi_signo == SIGHUP) {
			reload_config();
			continue;
		}
		log(LOG_INFO, std::string("signal ") + strsignal(static_cast<int>(info.ssi_signo)) + ": reverting " +
				      std::to_string(phases_.size()) + " phases and stopping");
		sd_notify(0, "STOPPING=1");
		revert_everything("shutdown");
		stopping_ = true;
		return;
	}
}

// `[daemon] realtime_priority`: SCHED_FIFO at that priority, or the normal scheduler at 0.
// Refused (no CAP_SYS_NICE, or a cgroup without a realtime budget) is logged and shown, not
// fatal: the daemon works, only later under CPU load. SCHED_RESET_ON_FORK: nothing it might
// start inherits the priority.
void Daemon::apply_scheduling()
{
	const uint32_t priority = config_.realtime_priority;
	sched_param param{};
	param.sched_priority = static_cast<int>(priority);
	const int policy = (priority ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK;
	const std::string wanted = priority ? "SCHED_FIFO priority " + std::to_string(priority) : "normal";
	if (::sched_setscheduler(0, policy, &param) == 0) {
		if (scheduling_ != wanted)
			log(LOG_INFO, "scheduling: " + wanted);
		scheduling_ = wanted;
		return;
	}
	const std::string refused = wanted + " refused: " + std::strerror(errno);
	const int running = ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;
	const std::string kept = running == SCHED_FIFO || running == SCHED_RR ? "realtime, as before" : "normal";
	scheduling_ = kept + " (" + refused + ")";
	recent_errors_.push_back("scheduling: " + refused);
	log(LOG_WARNING, "scheduling: " + refused + "; running " + kept);
}

void Daemon::reload_config()
{
	sd_notify(0, "RELOADING=1");
	auto next = load_config(options_.config_path);
	if (!next && next.error().err == ENOENT && !options_.config_required)
		next = Config{};
	// The planner (and its parameter file) is part of the config: both or neither change.
	Expected<std::unique_ptr<Planner>> planner = make_error(EINVAL, "no config");
	if (next) {
		planner = make_planner(*next);
		if (!planner)
			next = planner.error();
	}
	if (next && next->rto_stock_floor == StockFloor::Socket && std::string_view(backend_->name()) == "stock" &&
	    !stock::socket_rto_min().available)
		next = make_error(ENOPROTOOPT, "[rto] stock_floor = \"socket\": this kernel has no TCP_RTO_MIN_US "
					       "(Linux 6.15+); use \"auto\" or \"route\"");
	if (!next) {
		++counters_.config_errors;
		recent_errors_.push_back("reload: " + next.error().message);
		log(LOG_ERR, "reload refused, keeping the running config: " + next.error().message);
	} else {
		planner_ = std::move(*planner);
		if (next->backend != config_.backend || next->hints_socket != config_.hints_socket ||
		    next->control_socket != config_.control_socket || next->state_file != config_.state_file)
			log(LOG_WARNING, "reload: backend and socket/state paths change only with a restart");
		Config kept = std::move(*next);
		kept.backend = config_.backend;
		kept.hints_socket = config_.hints_socket;
		kept.control_socket = config_.control_socket;
		kept.state_file = config_.state_file;
		config_ = std::move(kept);
		apply_scheduling();
		++counters_.config_reloads;
		log(LOG_INFO, "config reloaded from " + config_.source);
	}
	sd_notify(0, "READY=1");
}

void Daemon::on_tick()
{
	uint64_t expirations;
	while (::read(timer_fd_.get(), &expirations, sizeof(expirations)) > 0) {
	}
	const auto now = Clock::now();
	std::vector<std::tuple<uint64_t, uint64_t, const char *>> expired;
	for (const auto &[key, phase] : phases_) {
		if (now >= phase.deadline)
			expired.emplace_back(key.first, key.second, "timeout");
		else if (::kill(static_cast<pid_t>(key.first), 0) < 0 && errno == ESRCH)
			expired.emplace_back(key.first, key.second, "sender-exit");
	}
	for (const auto &[pid, id, why] : expired)
		end_phase(pid, id, 0, why);
	release_lingering(std::nullopt, true);
	std::erase_if(resolved_, [&](const auto &entry) { return entry.second.until <= now; });
	for (auto it = logged_plans_.begin(); it != logged_plans_.end();) {
		if (now - it->second.at < kLogRepeatEvery) {
			++it;
			continue;
		}
		if (it->second.repeats)
			log(LOG_INFO, std::to_string(it->second.repeats) + " more phase(s) of pid " + std::to_string(it->first) +
					      " with the plan logged before");
		it = logged_plans_.erase(it);
	}
	flush_backend("tick");
}

void Daemon::flush_backend(const char *when)
{
	std::vector<std::string> errors;
	backend_->flush(errors);
	counters_.apply_errors += errors.size();
	for (const std::string &e : errors) {
		log(LOG_WARNING, std::string(when) + ": " + e);
		recent_errors_.push_back(e);
	}
	// Ticks come without hints too (a state file that cannot be written fails on each).
	while (recent_errors_.size() > kRecentErrors)
		recent_errors_.pop_front();
}

void Daemon::on_accept_control()
{
	for (int round = 0; round < 16; ++round) {
		UniqueFd client(::accept4(control_listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
		if (!client)
			return;
		// The state names other users' processes: root and the daemon's own uid only (an
		// abstract socket has no file mode to say so).
		ucred cred{};
		socklen_t len = sizeof(cred);
		if (::getsockopt(client.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
		    (cred.uid != 0 && cred.uid != ::getuid()))
			continue;
		const int fd = client.get();
		watch(fd);
		control_clients_.emplace(fd, std::move(client));
	}
}

void Daemon::on_control_client(int fd)
{
	char request[256];
	ssize_t n = ::recv(fd, request, sizeof(request) - 1, MSG_DONTWAIT);
	if (n < 0 && errno == EAGAIN)
		return;
	std::string reply;
	if (n > 0) {
		std::string_view text(request, static_cast<size_t>(n));
		while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
			text.remove_suffix(1);
		if (text == "show")
			reply = show_json();
		else
			reply = "{\"error\":\"unknown request; the only request is \\\"show\\\"\"}";
		reply += "\n";
		// The client is waiting for this one reply: write it out, bounded in time.
		int flags = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
		timeval limit{1, 0};
		::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
		size_t off = 0;
		while (off < reply.size()) {
			ssize_t w = ::send(fd, reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
			if (w <= 0)
				break;
			off += static_cast<size_t>(w);
		}
	}
	unwatch(fd);
	control_clients_.erase(fd);
}

std::string Daemon::show_json() const
{
	JsonWriter j;
	j.begin_object();
	j.key("daemon").begin_object();
	j.field("pid", static_cast<int64_t>(::getpid()));
	j.field("backend", backend_->name()).field("planner", planner_->name()).field("config", config_.source);
	j.field("uptime_ms", static_cast<uint64_t>(
				     std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count()));
	j.field("kernel_hints", kernel_hints_.has_value()).field("hints_socket", config_.hints_socket);
	j.field("netns", own_netns_);
	j.field("scheduling", scheduling_);
	j.end_object();
	j.key("planner").begin_object();
	j.field("name", planner_->name());
	planner_->describe(j);
	j.end_object();
	j.key("counters").begin_object();
	const Counters &c = counters_;
	j.field("hints_received", c.hints_received).field("hints_kernel", c.hints_kernel);
	j.field("hints_socket", c.hints_socket).field("hints_malformed", c.hints_malformed);
	j.field("hints_refused", c.hints_refused).field("hints_dropped", c.hints_dropped);
	j.field("advice_sent", c.advice_sent).field("quiet_phases_reported", c.quiet_phases_reported);
	j.field("phases_begun", c.phases_begun).field("phases_ended", c.phases_ended);
	j.field("phases_timed_out", c.phases_timed_out).field("phases_sender_gone", c.phases_sender_gone);
	j.field("unknown_ends", c.unknown_ends).field("apply_errors", c.apply_errors);
	j.field("lingering_superseded", c.lingering_superseded);
	j.field("config_reloads", c.config_reloads).field("config_errors", c.config_errors);
	j.field("resolutions_cached", c.resolutions_cached);
	j.field("phases_active", static_cast<uint64_t>(phases_.size()));
	j.field("phases_lingering", static_cast<uint64_t>(lingering_.size()));
	j.end_object();
	j.key("phases").begin_array();
	for (const auto &[key, phase] : phases_)
		write_record(j, phase.record);
	j.end_array();
	j.key("history").begin_array();
	for (const PhaseRecord &r : history_)
		write_record(j, r);
	j.end_array();
	j.key("settings").begin_object();
	for (const auto &[key, value] : backend_->live())
		j.field(key, value);
	j.end_object();
	j.key("recent_errors").begin_array();
	for (const std::string &e : recent_errors_)
		j.value(e);
	j.end_array();
	j.end_object();
	return j.str();
}

} // namespace gp::daemon
