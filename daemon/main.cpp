// gappaced: plans pacing and RTO floors for MPI collective phases from libgapctl's hints.
#include <cstdio>
#include <cstring>
#include <string>

#include "daemon.hpp"

namespace {

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: gappaced [--config FILE] [--check-config]\n"
		     "  --config FILE    configuration (default /etc/gappace/gappaced.toml; absent = defaults)\n"
		     "  --check-config   validate the configuration and exit (0: valid)\n"
		     "Signals: SIGTERM/SIGINT revert every setting and stop; SIGHUP reloads the configuration.\n"
		     "State: `gapctl daemon show`.\n");
}

} // namespace

int main(int argc, char **argv)
{
	gp::daemon::Options options;
	bool check_only = false;
	for (int i = 1; i < argc; ++i) {
		std::string arg = argv[i];
		if (arg == "--config" && i + 1 < argc) {
			options.config_path = argv[++i];
			options.config_required = true;
		} else if (arg == "--check-config") {
			check_only = true;
		} else if (arg == "-h" || arg == "--help") {
			usage(stdout);
			return 0;
		} else {
			std::fprintf(stderr, "gappaced: unknown argument \"%s\"\n", arg.c_str());
			usage(stderr);
			return 2;
		}
	}
	if (check_only) {
		auto config = gp::daemon::load_config(options.config_path);
		if (!config) {
			std::fprintf(stderr, "gappaced: %s\n", config.error().message.c_str());
			return 1;
		}
		std::printf("%s: valid (%zu bottlenecks, %zu link overrides, backend %s)\n", config->source.c_str(),
			    config->bottlenecks.size(), config->links.size(), gp::daemon::backend_name(config->backend));
		return 0;
	}
	auto daemon = gp::daemon::Daemon::create(options);
	if (!daemon) {
		std::fprintf(stderr, "gappaced: error: %s\n", daemon.error().message.c_str());
		return 1;
	}
	return (*daemon)->run();
}
