#include "session_profile_text.h"

#include <fmt/format.h>

#include "looptrace/report/render.h"
#include "looptrace/util/text_safety.h"
#include "sampled_render.h"

namespace looptrace {
namespace {

// Threads shown in full; the rest are summed up in one line.
constexpr size_t kThreadsShown = 6;
// A thread with less than this share of the session's samples is only counted.
constexpr double kMinThreadShare = 0.01;

std::string ThreadName(const Report& report, uint32_t tid) {
  auto it = report.thread_names.find(tid);
  return it == report.thread_names.end() ? fmt::format("thread {}", tid)
                                         : fmt::format("thread {} \"{}\"", tid, EscapeForTerminal(it->second));
}

}  // namespace

void RenderSessionProfileText(const Report& report, std::ostream& out) {
  const auto& threads = report.session_profile.threads;
  if (threads.empty()) return;
  uint64_t total = 0;
  for (const ThreadProfile& t : threads) total += t.samples;
  out << fmt::format(
      "\nwhere the threads ran (no messages to hang them on: every on-CPU sample of the session, by thread, "
      "at {}):\n",
      SampleRateText(threads.front().tree));
  size_t shown = 0;
  uint64_t rest_samples = 0, rest_threads = 0;
  for (const ThreadProfile& t : threads) {
    if (shown == kThreadsShown || static_cast<double>(t.samples) < kMinThreadShare * static_cast<double>(total)) {
      rest_samples += t.samples;
      ++rest_threads;
      continue;
    }
    ++shown;
    const double n = static_cast<double>(t.samples);
    out << fmt::format("\n  {}: {} sample{} on CPU (about {})\n", ThreadName(report, t.tid), t.samples,
                       t.samples == 1 ? "" : "s", FormatDuration(t.tree.on_cpu_ns));
    out << fmt::format("    {:>6} {:>6}  {}\n", "self", "total", "method (top by self)");
    for (const MethodShare& m : t.top)
      out << fmt::format("    {:>5.1f}% {:>5.1f}%  {}\n", 100.0 * m.self_samples / n, 100.0 * m.total_samples / n,
                         EscapeForTerminal(m.name));
    RenderSampledTree(t.tree, "[thread] " + ThreadName(report, t.tid), "    ", out);
  }
  if (rest_threads)
    out << fmt::format("\n  {} more thread{} with {} sample{} (-f json or -f folded --folded-scope session has them)\n",
                       rest_threads, rest_threads == 1 ? "" : "s", rest_samples, rest_samples == 1 ? "" : "s");
}

}  // namespace looptrace
