// The commands' end of a session's control socket (control_policy.h, control_protocol.h):
// `status`, `snapshot`, `report -p`, `detach`, `sessions` and `top` call the daemon here.
#pragma once

#include <sys/types.h>

#include <string>

#include "loader/live/control_protocol.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

// Sends one request to the session of `pid` and reads the answer. Before connecting it
// checks the directory and the socket (owner root, no group/other access) and after, that
// the peer is root. No session: kSession (a stale socket is removed on the way); a socket
// it must not trust: kPermission.
Result<ControlResponse> CallSession(pid_t pid, const ControlRequest& request, int timeout_ms = 60'000);

// Connects to the socket file `path`; *error_number is the errno of a failed connect
// (ECONNREFUSED: nobody listens, a stale socket), else 0.
Result<UniqueFd> ConnectToSocket(const std::string& path, int* error_number);

}  // namespace looptrace::loader
