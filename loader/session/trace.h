// The two ways to trace: attach to a running process (record) or start a command with
// probes attached before its first instruction (run). Both stream into a pipeline.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/session/session.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// record -p PID
Result<void> RecordProcess(pid_t pid, const SessionOptions& options, int signal_fd, Pipeline& pipeline);

// A running process with probes attached and the session started: what record -p does
// before it streams, and what a background session (live_session.h) keeps.
struct AttachedProcess {
  std::unique_ptr<Session> session;
  UniqueFd pid_fd;      // readable once the process exits
  std::string command;  // its comm
  std::string profile;
  std::string start_cost;  // "0.41 s (0.30 s CPU)": from the request to the probes attached
};
Result<AttachedProcess> AttachProcess(pid_t pid, const SessionOptions& options, int signal_fd, Pipeline& pipeline);

struct RunResult {
  pid_t pid = 0;
  std::optional<int> exit_status;  // set when the child exited during the session
  std::optional<int> exit_signal;
};

// run -- CMD ARGS: starts the command with probes attached before it executes.
Result<RunResult> RunCommand(const std::vector<std::string>& argv, const SessionOptions& options, int signal_fd,
                             Pipeline& pipeline);

}  // namespace looptrace::loader
