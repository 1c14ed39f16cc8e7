// gapctl's control-plane commands: `hint` (a manual collective-phase hint through libgapctl,
// exactly as an MPI runtime sends one) and `daemon show` (gappaced's live state).
#pragma once

#include "commands.hpp"

namespace gp {

int hint_send(const Invocation &invocation, Args args);
int daemon_show(const Invocation &invocation, Args args);

// The control socket of gappaced: GAPPACE_CONTROL_SOCK, else /run/gappace/control.sock.
std::string default_control_socket();
// Sends "show" and returns the daemon's JSON reply (bounded: 2 s).
Expected<std::string> query_daemon(const std::string &socket_path);

} // namespace gp
