// Leaving the terminal for a background session (`looptrace attach`). Daemonize forks: the
// child starts a session of its own (setsid), works from /, reads /dev/null and writes its
// stderr to a log; once its probes are attached it tells the parent over a pipe, one JSON
// line, that it is ready (with lines for the terminal) or why it failed. The parent waits
// for that word, forwarding Ctrl-C to the child, and exits with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

// The background process's end of the pipe to the terminal waiting for it. Empty in the
// foreground (nobody waits): telling then does nothing.
class ReadyChannel {
 public:
  ReadyChannel() = default;
  explicit ReadyChannel(UniqueFd fd) : fd_(std::move(fd)) {}
  // True while a terminal waits for the word.
  bool waiting() const { return fd_.valid(); }
  // The session is up: the terminal prints `lines` and exits 0.
  void Ready(const std::vector<std::string>& lines);
  // Attaching failed: the terminal reports `error` and exits with its code.
  void Failed(const Error& error);

 private:
  UniqueFd fd_;
};

// What Daemonize returns in each of the two processes.
struct Daemonized {
  // Set in the background process: its channel to the terminal.
  std::optional<ReadyChannel> child;
  // In the terminal's process: the lines the background session sent once ready, or why it
  // failed (also when the pipe or the fork failed).
  Result<std::vector<std::string>> parent;
};

// `log_path`: where the background process's stderr goes (timestamped). `signal_fd`: the
// termination signals, blocked, that the waiting parent forwards to the child as they came,
// SIGINT and SIGTERM (the child stops attaching, detaches what it attached and names the
// signal); SIGHUP is not forwarded. The child ignores SIGPIPE: it survives the parent's end.
Daemonized Daemonize(const std::string& log_path, int signal_fd);

}  // namespace looptrace::loader
