#include <cstdio>

#include "modes.hpp"

namespace gp::traffic {

void print_json(const JsonWriter &json)
{
	std::fputs(json.str().c_str(), stdout);
	std::fputc('\n', stdout);
	std::fflush(stdout); // the harness may read it while we keep running (tcp-sink)
}

int fail(const char *mode, const Error &error)
{
	std::fprintf(stderr, "gp-traffic: %s: %s\n", mode, error.message.c_str());
	return kExitFailure;
}

} // namespace gp::traffic
