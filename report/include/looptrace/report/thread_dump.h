// An on-demand thread dump of a traced process (`looptrace snapshot -p PID`), like the
// traces Android writes on `kill -3`: every thread's state, wait channel, futex owner and
// stacks, the message running on the main thread (with its method call tree so far), the
// frame in progress, CPU and memory. Taken now, without waiting for a threshold; not part
// of the session's report.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/report/call_tree.h"
#include "looptrace/report/live_status.h"
#include "looptrace/report/process.h"

namespace looptrace {

struct ThreadDump {
  uint32_t pid = 0;
  std::string command;
  std::string command_line;            // the whole command line ("" when unknown: `command` stands in)
  uint64_t wall_time_ns = 0;           // CLOCK_REALTIME of the snapshot
  StallSnapshot snapshot;              // anr = false; message_begin_ns = 0 when idle
  std::optional<LiveMessage> current;  // the main thread's running message
  uint64_t running_ns = 0;
  std::string frame;
  std::string scene;
  std::vector<NamedCallNode> tree;  // the running message's open method slice
  std::string stack_key;
  std::string main_state;  // e.g. "running", "lock wait", "sleep", "deadlock"
  std::vector<uint32_t> deadlock_cycle;
};

std::string RenderThreadDumpText(const ThreadDump& dump);
// The dump's one JSON record, {"type":"thread_dump", ...}: -f json prints it, other formats
// derive from it.
nlohmann::json ThreadDumpRecord(const ThreadDump& dump);
// The record as one line.
std::string RenderThreadDumpJson(const ThreadDump& dump);

}  // namespace looptrace
