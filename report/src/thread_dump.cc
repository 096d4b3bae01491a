#include "looptrace/report/thread_dump.h"

#include <fmt/format.h>
#include <time.h>

#include <cmath>

#include "looptrace/report/json_codecs.h"
#include "looptrace/report/json_records.h"
#include "looptrace/report/render.h"
#include "looptrace/util/local_time.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

std::string MessageText(const LiveMessage& m) {
  std::string label = m.name.empty() ? "message" : "message \"" + m.name + "\"";
  if (m.msg_id) label += fmt::format(" (id {})", *m.msg_id);
  return label;
}

}  // namespace

std::string RenderThreadDumpText(const ThreadDump& d) {
  std::string out;
  const StallSnapshot& s = d.snapshot;
  out += fmt::format("----- pid {} at {} -----\n", d.pid, LocalTime(d.wall_time_ns, LocalTimeStyle::kDateTimeMillis));
  out += fmt::format("Cmd line: {}\n", EscapeForTerminal(d.command_line.empty() ? d.command : d.command_line));
  if (d.current)
    out += fmt::format("Main thread: {} running for {}: {}\n", MessageText(*d.current), FormatDuration(d.running_ns),
                       d.main_state);
  else
    out += fmt::format("Main thread: no message running: {}\n", d.main_state);
  if (!d.deadlock_cycle.empty()) {
    std::string cycle;
    for (uint32_t tid : d.deadlock_cycle) {
      std::string name;
      for (const auto& t : s.threads)
        if (t.tid == tid) name = t.name;
      cycle += fmt::format("tid {} \"{}\" -> ", tid, name);
    }
    out += fmt::format("Deadlock: {}tid {} (each waits on a mutex the next holds)\n", cycle, d.deadlock_cycle.front());
  }
  if (!d.scene.empty()) out += fmt::format("Scene: {}\n", d.scene);
  if (!d.frame.empty()) out += fmt::format("Frame: {}\n", d.frame);
  if (s.process_cpu_percent >= 0)
    out += fmt::format("CPU: {:.1f}% of one core over the last {}\n", s.process_cpu_percent,
                       FormatDuration(s.cpu_window_ns));
  if (!s.memory_kb.empty()) {
    std::string mem;
    for (const auto& [k, v] : s.memory_kb) mem += fmt::format("{}{} {} kB", mem.empty() ? "" : ", ", k, v);
    out += "Memory: " + mem + "\n";
  }
  if (d.tree.size() > 1) {
    out += fmt::format("Methods running now (stackKey {}):\n", d.stack_key);
    uint64_t root = 1;
    for (const auto& n : d.tree) root = std::max(root, n.node.cost_ns);
    for (const NamedCallNode& n : d.tree) {
      std::string label = n.node.depth == 0 ? "[message] " + (d.current ? d.current->name : std::string()) : n.name;
      if (n.node.count > 1) label += fmt::format("  x{}", n.node.count);
      if (n.node.unfinished) label += "  (running)";
      out += fmt::format("  {:>12} {:>6.1f}%  {}{}\n", FormatDuration(n.node.cost_ns), 100.0 * n.node.cost_ns / root,
                         std::string(2 * n.node.depth, ' '), label);
    }
  }
  out += "\n";
  for (const ThreadSnapshot& t : s.threads) {
    std::string since = t.state_since_ns && t.state_since_ns <= s.ts_ns
                            ? fmt::format(" for {}", FormatDuration(s.ts_ns - t.state_since_ns))
                            : "";
    out += fmt::format("\"{}\" tid={} {} ({}{})\n", t.name, t.tid, t.state, ThreadStateText(t.state), since);
    if (!t.java_state.empty()) out += fmt::format("  java.lang.Thread.State: {}\n", t.java_state);
    if (!t.wchan.empty() && t.wchan != "0") out += fmt::format("  | wchan={}\n", t.wchan);
    if (t.futex_address) {
      std::string owner = "unknown owner";
      if (t.futex_owner_tid) {
        owner = fmt::format("held by tid {}", t.futex_owner_tid);
        for (const auto& o : s.threads)
          if (o.tid == t.futex_owner_tid) owner += fmt::format(" \"{}\"", o.name);
      }
      out += fmt::format("  - waiting on futex {:#x} ({})\n", t.futex_address, owner);
    }
    for (size_t i = 0; i < t.kernel_stack.size() && i < 12; ++i)
      out += fmt::format("  kernel: {}\n", t.kernel_stack[i]);
    for (size_t i = 0; i < t.user_stack.size() && i < 24; ++i)
      out += fmt::format("  native: #{:02} {}\n", i, t.user_stack[i]);
    out += "\n";
  }
  out += fmt::format("----- end {} -----\n", d.pid);
  return out;
}

nlohmann::json ThreadDumpRecord(const ThreadDump& d) {
  using nlohmann::json;
  const StallSnapshot& s = d.snapshot;
  json j{{"type", "thread_dump"},
         {"pid", d.pid},
         {"command", d.command},
         {"ts_ns", s.ts_ns},
         {"wall_time_ns", d.wall_time_ns},
         {"main_state", d.main_state},
         {"deadlock_cycle", d.deadlock_cycle},
         {"frame", d.frame},
         {"scene", d.scene},
         {"process_cpu_percent", s.process_cpu_percent},
         {"priority", s.priority},
         {"nice", s.nice},
         {"stackKey", d.stack_key}};
  if (d.current) {
    j["message"] = {{"tid", d.current->tid},
                    {"begin_ns", d.current->begin_ns},
                    {"running_ns", d.running_ns},
                    {"msg_id", d.current->msg_id ? json(*d.current->msg_id) : json(nullptr)},
                    {"name", d.current->name.empty() ? json(nullptr) : json(d.current->name)}};
  } else {
    j["message"] = nullptr;
  }
  if (!d.command_line.empty()) j["command_line"] = d.command_line;
  j["memory_kb"] = MemoryKbJson(s.memory_kb);
  j["tree"] = CallTreeJson(d.tree, /*marks=*/false);
  j["threads"] = s.threads;
  return j;
}

std::string RenderThreadDumpJson(const ThreadDump& dump) {
  return ThreadDumpRecord(dump).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace looptrace
