// gapctl: configure the gappace qdisc and its per-destination flow rules.
#include <cstdio>
#include <exception>
#include <span>

#include "commands.hpp"

int main(int argc, char **argv)
{
	// Nothing below throws on purpose; this only turns std::bad_alloc and the like into
	// an error message instead of std::terminate.
	try {
		auto line = gp::parse_command_line(std::span<const char *const>(argv, static_cast<size_t>(argc)));
		if (!line) {
			std::fprintf(stderr, "gapctl: %s\n", line.error().message.c_str());
			gp::print_usage(stderr);
			return gp::kExitUsage;
		}
		return gp::dispatch(line->options, line->words);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "gapctl: %s\n", e.what());
	} catch (...) {
		std::fprintf(stderr, "gapctl: unexpected internal error\n");
	}
	return gp::kExitFailure;
}
