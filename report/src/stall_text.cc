#include "stall_text.h"

#include <fmt/format.h>

#include "looptrace/report/render.h"
#include "text_common.h"

namespace looptrace {
namespace {

void RenderThread(const ThreadSnapshot& t, uint64_t at_ns, const std::vector<ThreadSnapshot>& all, std::ostream& out) {
  std::string since = t.state_since_ns && t.state_since_ns <= at_ns
                          ? fmt::format(" for {}", FormatDuration(at_ns - t.state_since_ns))
                          : "";
  out << fmt::format("\"{}\" tid={} {} ({}{})\n", Esc(t.name), t.tid, Esc(std::string(1, t.state)),
                     Esc(ThreadStateText(t.state)), since);
  if (!t.java_state.empty()) out << fmt::format("  java.lang.Thread.State: {}\n", Esc(t.java_state));
  if (!t.wchan.empty() && t.wchan != "0") out << fmt::format("  | wchan={}\n", Esc(t.wchan));
  if (t.futex_address) {
    std::string owner = "unknown owner";
    if (t.futex_owner_tid) {
      owner = fmt::format("held by tid {}", t.futex_owner_tid);
      for (const auto& o : all)
        if (o.tid == t.futex_owner_tid) owner += fmt::format(" \"{}\"", Esc(o.name));
    }
    out << fmt::format("  - waiting on futex {:#x} ({})\n", t.futex_address, owner);
  }
  for (size_t i = 0; i < t.kernel_stack.size() && i < 12; ++i)
    out << fmt::format("  kernel: {}\n", Esc(t.kernel_stack[i]));
  for (size_t i = 0; i < t.user_stack.size() && i < 24; ++i)
    out << fmt::format("  native: #{:02} {}\n", i, Esc(t.user_stack[i]));
  if (!t.user_stack_stop.empty()) out << fmt::format("  native: (stack ends: {})\n", Esc(t.user_stack_stop));
}

}  // namespace

void RenderStallsText(const Report& report, std::ostream& out) {
  const uint64_t base = report.session.begin_ns;
  for (const StallReport& s : report.stalls) {
    const Message& m = s.message;
    out << fmt::format("\n----- {} pid {} at {} s -----\n", s.anr ? "ANR" : "LAG", report.session.pid,
                       Relative(s.snapshot.ts_ns, base));
    const SessionInfo& session = report.session;
    out << fmt::format("Cmd line: {}\n", Esc(session.command_line.empty() ? session.command : session.command_line));
    out << fmt::format("Cause: {} running for {} on thread {} (threshold {}): {}\n", MessageLabel(m),
                       FormatDuration(s.snapshot.ts_ns - m.begin_ns), ThreadLabel(report, m.tid),
                       FormatDuration(s.threshold_ns), Esc(s.stuck_reason));
    if (!s.deadlock_cycle.empty()) {
      std::string cycle;
      for (uint32_t tid : s.deadlock_cycle) {
        std::string name;
        for (const auto& t : s.snapshot.threads)
          if (t.tid == tid) name = t.name;
        cycle += fmt::format("tid {} \"{}\" -> ", tid, Esc(name));
      }
      cycle += fmt::format("tid {}", s.deadlock_cycle.front());
      out << fmt::format("Deadlock: {} (each waits on a mutex the next holds)\n", cycle);
    }
    out << fmt::format("Cost: {} ({})\n", FormatDuration(m.cost_ns()),
                       s.finished ? "the message ended" : "still running when the session ended");
    if (!s.scene.empty()) out << fmt::format("Scene: {}\n", Esc(s.scene));
    if (!s.frame.empty()) out << fmt::format("Frame: {}\n", Esc(s.frame));
    if (s.snapshot.process_cpu_percent >= 0)
      out << fmt::format("CPU: {:.1f}% of one core over the last {}\n", s.snapshot.process_cpu_percent,
                         FormatDuration(s.snapshot.cpu_window_ns));
    if (!s.snapshot.memory_kb.empty()) {
      std::string mem;
      for (const auto& [k, v] : s.snapshot.memory_kb)
        mem += fmt::format("{}{} {} kB", mem.empty() ? "" : ", ", Esc(k), v);
      out << "Memory: " << mem << "\n";
    }
    out << fmt::format("Off-CPU during the message: ");
    if (s.off_cpu_by_reason.empty()) out << "none";
    for (size_t i = 0; i < s.off_cpu_by_reason.size(); ++i)
      out << fmt::format("{}{} {} ({}x)", i ? ", " : "", s.off_cpu_by_reason[i].reason,
                         FormatDuration(s.off_cpu_by_reason[i].total_ns), s.off_cpu_by_reason[i].count);
    out << fmt::format("; on CPU {}\n", FormatDuration(s.on_cpu_ns));
    RenderCauses(s.causes, base, "", out);
    for (size_t i = 0; i < s.off_cpu.size() && i < 5; ++i) {
      const auto& iv = s.off_cpu[i];
      out << fmt::format("  {:>12} {:<9} from {} s{}{}\n", FormatDuration(iv.end_ns - iv.begin_ns), iv.reason,
                         Relative(iv.begin_ns, base),
                         iv.waker_tid ? fmt::format(", woken by tid {} \"{}\"", iv.waker_tid, Esc(iv.waker_comm)) : "",
                         iv.open ? ", still waiting" : "");
    }
    if (s.tree.size() == 1) {
      out << "No instrumented method was running at the snapshot\n";
    } else if (!s.tree.empty()) {
      out << fmt::format("Methods running at the snapshot (stackKey {}):\n", Esc(s.stack_key));
      RenderCallTree(s.tree, m.name, "  ", out);
    }
    out << "\n";
    for (const ThreadSnapshot& t : s.snapshot.threads) {
      RenderThread(t, s.snapshot.ts_ns, s.snapshot.threads, out);
      // The stalled thread's interpreted stack (method beats), next to its native one.
      if (t.tid == m.tid)
        for (size_t i = 0; i < s.interpreted_stack.size() && i < 24; ++i)
          out << fmt::format("  interpreted: #{:02} {}\n", i, s.interpreted_stack[i]);
      out << "\n";
    }
    out << fmt::format("----- end {} -----\n", report.session.pid);
  }
}

}  // namespace looptrace
