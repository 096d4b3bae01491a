// Who may reach a background session, and where: one Unix stream socket per traced pid,
// RUN_DIR/PID.sock, through which `status`, `snapshot`, `report -p`, `detach` and `sessions`
// reach the daemon. RUN_DIR (/run/looptrace, or $LOOPTRACE_RUN_DIR) must be a real
// directory owned by root with mode 0700, a socket in it root's with mode 0600, and both
// ends talk only to root peers (SO_PEERCRED). The daemon never writes a file a request
// names (report bodies go back over the socket). Ended sessions leave a tombstone there.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <string>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::loader {

// /run/looptrace, or $LOOPTRACE_RUN_DIR when set (tests, containers).
std::string RunDirectory();
std::string ControlSocketPath(pid_t pid);
// Written when a session ends (reason, report path), so a `detach` that lost the race with
// the target's exit can still say where the report went.
std::string TombstonePath(pid_t pid);
// The tombstone of pid's ended session as a sentence (how it ended, where its report went),
// or "" if there is none.
std::string EndedSessionText(pid_t pid);

// The run directory must be a real directory (not a link) owned by root with mode 0700.
// `create`: make it if missing (the daemon); otherwise a missing directory is an error with
// kSession ("no session"), as the client sees it.
Result<void> CheckRunDirectory(bool create);

// A socket file either end may talk to or replace: a socket, root's, no group/other access.
Result<void> CheckSocketFile(const std::string& path, const struct stat& st);

// The uid of the process at the other end of a connected Unix socket; -1 if unknown.
int PeerUid(int fd);

// The address of the socket file `path`; a path too long for one is an error.
Result<sockaddr_un> SocketAddress(const std::string& path);

// The pids with a socket in the run directory (live or not), sorted.
std::vector<pid_t> SessionSockets();

}  // namespace looptrace::loader
