// The subcommands of gapctl: a static table of {object, verb, handler, usage} and the
// dispatcher that picks an entry from the command line.
#pragma once

#include <array>
#include <cstdio>
#include <span>
#include <string_view>

#include "cli.hpp"

namespace gp {

// Exit codes: like iproute2, 1 for a failed operation; 2 for a command line we do not understand.
inline constexpr int kExitSuccess = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Command;

// What a handler gets besides its arguments.
struct Invocation {
	OutputFormat format = OutputFormat::Text;
	const Command *command = nullptr; // the entry being run, for its usage line
	FILE *out = stdout;
	FILE *err = stderr;
};

using Handler = int (*)(const Invocation &invocation, Args args);

struct Command {
	std::string_view object;
	std::string_view verb; // empty: the object takes its arguments directly ("gapctl stats dev X")
	Handler handler;
	std::string_view usage; // without the leading "gapctl "
};

extern const std::array<Command, 16> kCommands;

// Runs OBJECT [VERB] ARGS...; returns the exit code.
int dispatch(const GlobalOptions &options, std::span<const std::string_view> words, FILE *out = stdout,
	     FILE *err = stderr);

// Prints the usage of every command (of one object, if given).
void print_usage(FILE *to, std::string_view object = {});

} // namespace gp
