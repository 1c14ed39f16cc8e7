// gp-traffic: traffic generator and sink for gappace tests inside the guest VM. See usage_text().
#include <cstdio>
#include <exception>
#include <variant>

#include "args.hpp"
#include "modes.hpp"

namespace gp::traffic {
namespace {

struct Dispatch {
	int operator()(const HelpArgs &) const
	{
		std::fputs(usage_text().c_str(), stdout);
		return kExitDone;
	}
	int operator()(const UdpSendArgs &args) const { return run_udp_send(args); }
	int operator()(const UdpSinkArgs &args) const { return run_udp_sink(args); }
	int operator()(const TcpSendArgs &args) const { return run_tcp_send(args); }
	int operator()(const TcpSinkArgs &args) const { return run_tcp_sink(args); }
	int operator()(const TcpRrArgs &args) const { return run_tcp_rr(args); }
	int operator()(const TcpRrServerArgs &args) const { return run_tcp_rr_server(args); }
	int operator()(const MarkerArgs &args) const { return run_marker(args); }
};

int run(int argc, char *argv[])
{
	const auto command = parse_arguments(argc, argv);
	if (!command) {
		std::fprintf(stderr, "gp-traffic: %s\n%s", command.error().message.c_str(), usage_text().c_str());
		return kExitUsage;
	}
	return std::visit(Dispatch{}, *command);
}

} // namespace
} // namespace gp::traffic

int main(int argc, char *argv[])
{
	try {
		return gp::traffic::run(argc, argv);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "gp-traffic: %s\n", e.what());
		return gp::traffic::kExitFailure;
	}
}
