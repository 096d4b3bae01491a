#include "looptrace/report/cost_text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>
#include <vector>

namespace looptrace {
namespace {

std::string Seconds(uint64_t ns) { return fmt::format("{:.3f} s", ns / 1e9); }

// "of one CPU" over the session: what a budget is written in.
std::string ShareOfCpu(uint64_t ns, uint64_t session_ns) {
  return session_ns ? fmt::format("{:.2f}% of one CPU", 100.0 * ns / session_ns) : "";
}

// BPF times are estimates: every run is counted, about one in 64 timed (bpf/events.h).
std::string PerRun(uint64_t ns, uint64_t runs) { return runs ? fmt::format("~{} ns each", ns / runs) : "no runs"; }

// What the early waits kept (stats.h early_waits_by_syscall and what follows it).
std::string EarlyWaitsText(uint64_t waits, uint64_t wait_stacks_after_ns, uint64_t late, uint64_t missed,
                           uint64_t at_switch_out) {
  if (!wait_stacks_after_ns)
    return fmt::format("; {} early waits with their user stack only, the reason from the system call", waits);
  return fmt::format(
      "; {} early waits by their system call, their user stack read only if one lasted {:.2f} ms ({} did{}{}; a "
      "shorter one's time is shown under its nearest sample's stack)",
      waits, wait_stacks_after_ns / 1e6, late + missed,
      missed ? fmt::format(", {} ran again before it was read", missed) : "",
      at_switch_out
          ? fmt::format("; {} taken at the switch-out while the loader read files it met first", at_switch_out)
          : "");
}

}  // namespace

CostBreakdown CostOf(const Stats& stats) {
  CostBreakdown cost;
  cost.loader_ns = stats.Get(StatId::cost_loader_cpu_ns);
  cost.loader_start_ns = std::min(stats.Get(StatId::cost_loader_start_cpu_ns), cost.loader_ns);
  cost.loader_first_use_ns =
      std::min(stats.Get(StatId::cost_loader_first_use_cpu_ns), cost.loader_ns - cost.loader_start_ns);
  // A hit's trap and dispatch (measured on an empty program) plus what the program did.
  cost.probes_ns =
      stats.Get(StatId::cost_probe_hits) * stats.Get(StatId::cost_uprobe_hit_ns) + stats.Get(StatId::cost_probe_bpf_ns);
  cost.scheduler_ns = stats.Get(StatId::cost_sched_bpf_ns);
  return cost;
}

std::string CostText(const Stats& stats, uint64_t session_ns) {
  bool any = false;
  for (int i = 0; i < kStatCount; ++i) {
    const auto id = static_cast<StatId>(i);
    any |= StatSeverityOf(id) == StatSeverity::kCost && stats.Get(id);
  }
  if (!any) return "";
  const uint64_t loader = stats.Get(StatId::cost_loader_cpu_ns);
  const uint64_t hits = stats.Get(StatId::cost_probe_hits), probe_bpf = stats.Get(StatId::cost_probe_bpf_ns);
  const uint64_t hit_ns = stats.Get(StatId::cost_uprobe_hit_ns);
  const uint64_t runs = stats.Get(StatId::cost_sched_runs), sched = stats.Get(StatId::cost_sched_bpf_ns);
  const uint64_t stacked = stats.Get(StatId::cost_switch_stacks), idle = stats.Get(StatId::switch_stacks_idle);
  const CostBreakdown cost = CostOf(stats);
  const uint64_t probes = cost.probes_ns;
  std::string out = "\nlooptrace cost (what tracing took from the target and the machine)\n";
  auto line = [&](std::string_view what, const std::string& amount, const std::string& how) {
    out += fmt::format("  {:<20} {:>10}  {}\n", what, amount, how);
  };
  // The start (BPF load, symbols, attach) is paid once, before the session's clock starts,
  // and so are the files first met after it: shares over the session are of the rest.
  const uint64_t start = cost.loader_start_ns, first_use = cost.loader_first_use_ns;
  const auto after_start = [&](uint64_t ns) {
    if (!start && !first_use) return ShareOfCpu(ns, session_ns);
    std::vector<std::string> once;
    if (start) once.push_back(fmt::format("{} of it to start: BPF load, symbols, probes", Seconds(start)));
    if (first_use)
      once.push_back(fmt::format("{} once, on files first met after it: symbols, unwind rows", Seconds(first_use)));
    return fmt::format("{} after starting ({})", ShareOfCpu(ns - cost.once_ns(), session_ns), fmt::join(once, "; "));
  };
  line("loader CPU", Seconds(loader), after_start(loader));
  if (hits)
    line("probe hits", Seconds(probes),
         hit_ns ? fmt::format("{} hits x {} ns (a uprobe hit here, measured at the start) + {} in BPF", hits, hit_ns,
                              PerRun(probe_bpf, hits))
                : fmt::format("{} hits, {} in BPF (the trap per hit was not measured)", hits, PerRun(probe_bpf, hits)));
  if (runs)
    line("scheduler programs", Seconds(sched),
         fmt::format("{} runs, {} (every CPU, filtered in BPF)", runs, PerRun(sched, runs)));
  if (hits || runs) line("total", Seconds(cost.total_ns()), after_start(cost.total_ns()));
  if (!hits && !runs && (loader || stacked)) out += "  (BPF run times unavailable: not in this recording)\n";
  if (const uint64_t budget = stats.Get(StatId::cost_budget_ns_per_s)) {
    const uint64_t lowered = stats.Get(StatId::cost_budget_lowered_ns);
    const uint64_t over = stats.Get(StatId::cost_budget_over_ns);
    const std::string lowering =
        fmt::format("sample rate lowered for {:.1f} s (down to {} Hz: sampled trees hold fewer samples then)",
                    lowered / 1e9, stats.Get(StatId::cost_budget_lowest_hz));
    std::string how;
    if (over)
      how = fmt::format("over it for {:.1f} s{}; probe hits and scheduler programs are not shed", over / 1e9,
                        lowered ? "; " + lowering : "");
    else
      how = lowered ? "kept, " + lowering : "kept at the full sample rate";
    line("cpu budget", fmt::format("{:.2f}%", budget / 1e7), how);
  }
  const uint64_t idle_samples = stats.Get(StatId::samples_idle);
  const uint64_t early = stats.Get(StatId::early_preemptions_unstacked);
  const uint64_t after_ns = stats.Get(StatId::cost_preempt_stacks_after_ns);
  const uint64_t waiting = stats.Get(StatId::switch_stacks_waiting);
  const uint64_t early_waits = stats.Get(StatId::early_waits_by_syscall);
  const uint64_t late_waits = stats.Get(StatId::early_wait_stacks_late);
  const uint64_t missed_waits = stats.Get(StatId::early_wait_stacks_missed);
  if (stacked || idle || idle_samples || early || waiting || early_waits) {
    std::string how = "taken at every switch-out";
    if (idle || idle_samples || early || after_ns || early_waits)
      how = fmt::format(
          "taken while a message is open{} ({} idle switch-outs, {} early preemptions, {} idle "
          "cpu-clock samples without{}{})",
          after_ns ? fmt::format(", once it is {:.2f} ms old", after_ns / 1e6) : "", idle, early, idle_samples,
          early || after_ns ? "; an early preemption's time is shown under its nearest sample's stack" : "",
          early_waits || after_ns
              ? EarlyWaitsText(early_waits, stats.Get(StatId::cost_wait_stacks_after_ns), late_waits, missed_waits,
                               stats.Get(StatId::early_wait_stacks_at_switch_out))
              : "");
    if (waiting)
      how += fmt::format("; other threads' waits: {} without, a snapshot reads a waiting thread's stacks", waiting);
    line("switch-out stacks", fmt::format("{}", stacked), how);
  }
  return out;
}

}  // namespace looptrace
