#include "text_short.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "looptrace/report/cost_text.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

std::string Seconds(uint64_t ns) { return fmt::format("{:.3f} s", ns / 1e9); }

}  // namespace

std::string IncompleteStacksHint(const IncompleteStacks& incomplete) {
  if (!incomplete.fixable || incomplete.dwarf) return "";
  const auto& modules = incomplete.modules;
  std::vector<std::string> names;
  for (size_t i = 0; i < modules.size() && i < 2; ++i) names.push_back(EscapeForTerminal(modules[i], 60));
  const std::string which = modules.size() <= 2
                                ? fmt::format("{}", fmt::join(names, ", "))
                                : fmt::format("{} and {} more", fmt::join(names, ", "), modules.size() - 2);
  return fmt::format("hint: --dwarf-unwind completes {} of {} incomplete stack{} ({} keep{} no frame pointers)\n",
                     incomplete.fixable, incomplete.total, incomplete.total == 1 ? "" : "s", which,
                     modules.size() == 1 ? "s" : "");
}

std::string IncompleteStacksLine(const IncompleteStacks& incomplete) {
  if (!incomplete.total) return "";
  auto reasons = incomplete.reasons;
  std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr size_t kShown = 3;
  std::string text;
  for (size_t i = 0; i < reasons.size() && i < kShown; ++i)
    text +=
        fmt::format("{}{} {}", text.empty() ? "" : ", ", EscapeForTerminal(reasons[i].first, 120), reasons[i].second);
  if (reasons.size() > kShown) text += fmt::format(", {} other reasons", reasons.size() - kShown);
  return fmt::format("  incomplete stacks: {} ({})\n", incomplete.total, text);
}

std::string QualityLine(const Stats& stats) {
  std::vector<std::string> info;
  for (int i = 0; i < kStatCount; ++i) {
    const auto id = static_cast<StatId>(i);
    if (StatSeverityOf(id) == StatSeverity::kInfo && stats.Get(id))
      info.push_back(fmt::format("{} {}", StatName(id), stats.Get(id)));
  }
  if (info.empty()) return "\ndata quality: complete (no losses counted)\n";
  constexpr size_t kShown = 3;
  std::string text = fmt::format("{}", fmt::join(info.begin(), info.begin() + std::min(info.size(), kShown), ", "));
  if (info.size() > kShown) text += fmt::format(" and {} more", info.size() - kShown);
  return fmt::format("\ndata quality: complete (no losses counted; {})\n", text);
}

std::string CostLine(const Stats& stats, uint64_t session_ns) {
  if (CostText(stats, session_ns).empty()) return "";
  const CostBreakdown cost = CostOf(stats);
  const bool bpf_times = stats.Get(StatId::cost_probe_hits) || stats.Get(StatId::cost_sched_runs);
  // Shares are of what ran after the start and the files first met (each paid once).
  const auto share = [&](uint64_t ns) {
    const uint64_t running = ns - cost.once_ns();
    if (!session_ns) return std::string();
    std::string text = fmt::format(", {:.2f}% of one CPU", 100.0 * running / session_ns);
    if (cost.loader_start_ns) text += fmt::format(" after {} to start", Seconds(cost.loader_start_ns));
    if (cost.loader_first_use_ns)
      text += fmt::format("{} {} on files first met", cost.loader_start_ns ? " and" : " after",
                          Seconds(cost.loader_first_use_ns));
    return text;
  };
  if (!bpf_times)
    return fmt::format("\nlooptrace cost: loader {} of CPU{} (BPF run times unavailable)\n", Seconds(cost.loader_ns),
                       share(cost.loader_ns));
  return fmt::format("\nlooptrace cost: {} of CPU{} (loader {}, probe hits {}, scheduler programs {})\n",
                     Seconds(cost.total_ns()), share(cost.total_ns()), Seconds(cost.loader_ns), Seconds(cost.probes_ns),
                     Seconds(cost.scheduler_ns));
}

std::string CutsLine(const std::vector<std::string>& cuts) {
  if (cuts.empty()) return "";
  return fmt::format("\n{} more section{} with -v/--full or --html: {}\n", cuts.size(), cuts.size() == 1 ? "" : "s",
                     fmt::join(cuts, ", "));
}

}  // namespace looptrace
