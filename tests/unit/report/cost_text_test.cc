#include "looptrace/report/cost_text.h"

#include <gtest/gtest.h>

namespace looptrace {
namespace {

TEST(CostText, NothingWithoutCostFigures) {
  Stats stats;
  stats.Set(StatId::records_full, 3);
  EXPECT_EQ(CostText(stats, 10'000'000'000), "");
}

TEST(CostText, SaysWhatTheSessionCostInPlainNumbers) {
  Stats stats;
  stats.Set(StatId::cost_loader_cpu_ns, 200'000'000);  // 0.2 s over 10 s: 2% of one CPU
  stats.Set(StatId::cost_probe_hits, 1000);
  stats.Set(StatId::cost_uprobe_hit_ns, 1000);
  stats.Set(StatId::cost_probe_bpf_ns, 150'000);
  stats.Set(StatId::cost_sched_runs, 4000);
  stats.Set(StatId::cost_sched_bpf_ns, 1'200'000);
  stats.Set(StatId::cost_switch_stacks, 12);
  stats.Set(StatId::switch_stacks_idle, 988);
  const std::string text = CostText(stats, 10'000'000'000);
  EXPECT_NE(text.find("  loader CPU              0.200 s  2.00% of one CPU\n"), std::string::npos) << text;
  // 1000 hits x 1000 ns + 150 us in BPF
  EXPECT_NE(text.find("  probe hits              0.001 s  1000 hits x 1000 ns"), std::string::npos) << text;
  EXPECT_NE(text.find("+ ~150 ns each in BPF"), std::string::npos) << text;
  EXPECT_NE(text.find("  scheduler programs      0.001 s  4000 runs, ~300 ns each"), std::string::npos) << text;
  EXPECT_NE(text.find("  total                   0.202 s  2.02% of one CPU"), std::string::npos) << text;
  EXPECT_NE(text.find("12  taken while a message is open (988 idle switch-outs, 0 early preemptions, 0 idle cpu-clock "
                      "samples without)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("unavailable"), std::string::npos) << text;
}

TEST(CostText, SaysHowTheCpuBudgetWasKept) {
  Stats stats;
  stats.Set(StatId::cost_loader_cpu_ns, 200'000'000);
  stats.Set(StatId::cost_budget_ns_per_s, 20'000'000);
  EXPECT_NE(CostText(stats, 10'000'000'000).find("  cpu budget                2.00%  kept at the full sample rate\n"),
            std::string::npos);
  stats.Set(StatId::cost_budget_lowered_ns, 4'500'000'000);
  stats.Set(StatId::cost_budget_lowest_hz, 124);
  stats.Set(StatId::cost_budget_over_ns, 2'000'000'000);
  const std::string text = CostText(stats, 10'000'000'000);
  EXPECT_NE(text.find("  cpu budget                2.00%  over it for 2.0 s; sample rate lowered for 4.5 s (down to "
                      "124 Hz: sampled trees hold fewer samples then); probe hits and scheduler programs are not "
                      "shed\n"),
            std::string::npos)
      << text;
  stats.Set(StatId::cost_budget_over_ns, 0);
  EXPECT_NE(CostText(stats, 10'000'000'000)
                .find("  cpu budget                2.00%  kept, sample rate lowered for 4.5 s (down to 124 Hz: "),
            std::string::npos);
}

TEST(CostText, SharesAreOfWhatRanAfterTheStart) {
  // 1.2 s of loader CPU, 1 s of it loading BPF and attaching before the 10 s session began:
  // the session ran at 2% of one CPU, not 12%.
  Stats stats;
  stats.Set(StatId::cost_loader_cpu_ns, 1'200'000'000);
  stats.Set(StatId::cost_loader_start_cpu_ns, 1'000'000'000);
  stats.Set(StatId::cost_sched_runs, 4000);
  stats.Set(StatId::cost_sched_bpf_ns, 100'000'000);
  const std::string text = CostText(stats, 10'000'000'000);
  EXPECT_NE(text.find("  loader CPU              1.200 s  2.00% of one CPU after starting (1.000 s of it to start: "
                      "BPF load, symbols, probes)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  total                   1.300 s  3.00% of one CPU after starting"), std::string::npos) << text;
  const CostBreakdown cost = CostOf(stats);
  EXPECT_EQ(cost.total_ns(), 1'300'000'000u);
  EXPECT_EQ(cost.running_ns(), 300'000'000u);
}

TEST(CostText, SharesLeaveOutFilesFirstMetAfterTheStart) {
  // 0.5 s after the start went to reading the symbols and unwind rows of modules a stack
  // reached for the first time: paid once, like the start, and not by the running session.
  Stats stats;
  stats.Set(StatId::cost_loader_cpu_ns, 1'700'000'000);
  stats.Set(StatId::cost_loader_start_cpu_ns, 1'000'000'000);
  stats.Set(StatId::cost_loader_first_use_cpu_ns, 500'000'000);
  stats.Set(StatId::cost_sched_runs, 4000);
  stats.Set(StatId::cost_sched_bpf_ns, 100'000'000);
  const std::string text = CostText(stats, 10'000'000'000);
  EXPECT_NE(text.find("  loader CPU              1.700 s  2.00% of one CPU after starting (1.000 s of it to start: "
                      "BPF load, symbols, probes; 0.500 s once, on files first met after it: symbols, unwind rows)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  total                   1.800 s  3.00% of one CPU after starting"), std::string::npos) << text;
  const CostBreakdown cost = CostOf(stats);
  EXPECT_EQ(cost.once_ns(), 1'500'000'000u);
  EXPECT_EQ(cost.running_ns(), 300'000'000u);
  // A figure over what the loader spent after its start (a stale counter) is capped there.
  stats.Set(StatId::cost_loader_first_use_cpu_ns, 900'000'000);
  EXPECT_EQ(CostOf(stats).loader_first_use_ns, 700'000'000u);
}

TEST(CostText, SaysWhenPreemptionsAndWaitsGetStacks) {
  Stats stats;
  stats.Set(StatId::cost_switch_stacks, 5);
  stats.Set(StatId::early_preemptions_unstacked, 7);
  stats.Set(StatId::early_waits_by_syscall, 12);
  stats.Set(StatId::cost_preempt_stacks_after_ns, 70'000'000);
  const std::string text = CostText(stats, 1'000'000'000);
  EXPECT_NE(text.find("taken while a message is open, once it is 70.00 ms old (0 idle switch-outs, 7 early "
                      "preemptions, 0 idle cpu-clock samples without; an early preemption's time is shown under its "
                      "nearest sample's stack; 12 early waits with their user stack only, the reason from the system "
                      "call)"),
            std::string::npos)
      << text;
}

// Early waits whose user stacks were left for later: how many lasted long enough to be read.
TEST(CostText, SaysWhichEarlyWaitsGotTheirStacksLate) {
  Stats stats;
  stats.Set(StatId::cost_switch_stacks, 5);
  stats.Set(StatId::early_waits_by_syscall, 5000);
  stats.Set(StatId::early_wait_stacks_late, 29);
  stats.Set(StatId::early_wait_stacks_missed, 2);
  stats.Set(StatId::cost_preempt_stacks_after_ns, 4'000'000);
  stats.Set(StatId::cost_wait_stacks_after_ns, 4'000'000);
  std::string text = CostText(stats, 1'000'000'000);
  EXPECT_NE(text.find("; 5000 early waits by their system call, their user stack read only if one lasted 4.00 ms (31 "
                      "did, 2 ran again before it was read; a shorter one's time is shown under its nearest sample's "
                      "stack))"),
            std::string::npos)
      << text;
  // Those stacked at their switch-out while the loader was busy with a file it met first.
  stats.Set(StatId::early_wait_stacks_at_switch_out, 40);
  text = CostText(stats, 1'000'000'000);
  EXPECT_NE(text.find("(31 did, 2 ran again before it was read; 40 taken at the switch-out while the loader read "
                      "files it met first; a shorter one's"),
            std::string::npos)
      << text;
}

TEST(CostText, SaysOtherThreadsWaitsAreReadAtSnapshots) {
  Stats stats;
  stats.Set(StatId::cost_switch_stacks, 5);
  stats.Set(StatId::switch_stacks_idle, 3);
  stats.Set(StatId::switch_stacks_waiting, 4000);
  const std::string text = CostText(stats, 1'000'000'000);
  EXPECT_NE(text.find("cpu-clock samples without); other threads' waits: 4000 without, a snapshot reads a waiting "
                      "thread's stacks"),
            std::string::npos)
      << text;
}

TEST(CostText, SaysWhenBpfRunTimesAreMissing) {
  Stats stats;
  stats.Set(StatId::cost_loader_cpu_ns, 1'000'000);
  EXPECT_NE(CostText(stats, 1'000'000'000).find("BPF run times unavailable"), std::string::npos);
}

}  // namespace
}  // namespace looptrace
