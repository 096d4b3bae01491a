#include "looptrace/tracers/looper_monitor.h"

#include <gtest/gtest.h>

#include "looptrace/tracers/analyzer.h"

namespace looptrace {
namespace {

ProbeEvent Begin(uint32_t tid, uint64_t ts, uint64_t id, std::string name = "") {
  ProbeEvent e;
  e.ts_ns = ts;
  e.pid = 100;
  e.tid = tid;
  e.role = Role::kDispatchBegin;
  e.args.push_back({"id", id, std::nullopt, false});
  if (!name.empty()) e.args.push_back({"name", 0x1000, name, true});
  return e;
}

ProbeEvent End(uint32_t tid, uint64_t ts, uint64_t id) {
  ProbeEvent e;
  e.ts_ns = ts;
  e.pid = 100;
  e.tid = tid;
  e.role = Role::kDispatchEnd;
  e.args.push_back({"id", id, std::nullopt, false});
  return e;
}

TEST(LooperMonitor, PairsBeginAndEndPerThread) {
  Stats stats;
  LooperMonitor monitor({}, &stats);
  monitor.OnProbe(Begin(100, 1000, 1, "a"));
  monitor.OnProbe(Begin(200, 1500, 7, "w"));
  monitor.OnProbe(End(100, 3000, 1));
  monitor.OnProbe(End(200, 1600, 7));
  monitor.Finish(10'000);
  MessagesReport report;
  monitor.Contribute(&report);
  ASSERT_EQ(report.messages.size(), 2u);
  EXPECT_EQ(report.messages[0].tid, 100u);
  EXPECT_EQ(report.messages[0].cost_ns(), 2000u);
  EXPECT_EQ(report.messages[0].name, "a");
  EXPECT_EQ(report.messages[1].tid, 200u);
  EXPECT_EQ(report.messages[1].cost_ns(), 100u);
  ASSERT_EQ(report.threads.size(), 2u);
  EXPECT_EQ(report.threads[0].busy_ns, 2000u);
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(LooperMonitor, NestedMessagesAreNotDoubleCountedAsBusy) {
  Stats stats;
  LooperMonitor monitor({}, &stats);
  monitor.OnProbe(Begin(1, 0, 1));
  monitor.OnProbe(Begin(1, 10, 2));
  monitor.OnProbe(End(1, 20, 2));
  monitor.OnProbe(End(1, 100, 1));
  monitor.Finish(200);
  MessagesReport report;
  monitor.Contribute(&report);
  ASSERT_EQ(report.messages.size(), 2u);
  EXPECT_EQ(report.messages[0].depth, 0u);
  EXPECT_EQ(report.messages[1].depth, 1u);
  EXPECT_EQ(report.threads[0].busy_ns, 100u);
}

TEST(LooperMonitor, CountsUnmatchedEndsMismatchedIdsAndUnfinished) {
  Stats stats;
  LooperMonitor monitor({}, &stats);
  monitor.OnProbe(End(1, 5, 9));     // end of a message that began before tracing
  monitor.OnProbe(Begin(1, 10, 1));
  monitor.OnProbe(End(1, 20, 2));    // id differs
  monitor.OnProbe(End(1, 25, 2));    // nothing open: lost begin
  monitor.OnProbe(Begin(1, 30, 3));  // still running at the end
  monitor.Finish(50);
  MessagesReport report;
  monitor.Contribute(&report);
  EXPECT_EQ(stats.Get(StatId::messages_running_at_start), 1u);
  EXPECT_EQ(stats.Get(StatId::unmatched_dispatch_end), 1u);
  EXPECT_EQ(stats.Get(StatId::dispatch_id_mismatch), 1u);
  EXPECT_EQ(stats.Get(StatId::unfinished_messages), 1u);
  ASSERT_EQ(report.unfinished.size(), 1u);
  EXPECT_EQ(report.unfinished[0].cost_ns(), 20u);
}

TEST(LooperMonitor, SlowestAreOrderedByCostThenBegin) {
  Stats stats;
  LooperMonitor monitor({.top_n = 2}, &stats);
  uint64_t t = 0;
  for (uint64_t cost : {5, 9, 9, 1}) {
    monitor.OnProbe(Begin(1, t, t));
    monitor.OnProbe(End(1, t + cost, t));
    t += 100;
  }
  monitor.Finish(t);
  MessagesReport report;
  monitor.Contribute(&report);
  ASSERT_EQ(report.slowest.size(), 2u);
  EXPECT_EQ(report.slowest[0].begin_ns, 100u);
  EXPECT_EQ(report.slowest[1].begin_ns, 200u);
}

TEST(CostSummary, NearestRankPercentiles) {
  std::vector<uint64_t> costs;
  for (uint64_t i = 1; i <= 100; ++i) costs.push_back(i);
  CostSummary s = SummarizeCosts(costs);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.p50_ns, 50u);
  EXPECT_EQ(s.p90_ns, 90u);
  EXPECT_EQ(s.p99_ns, 99u);
  EXPECT_EQ(s.max_ns, 100u);
  EXPECT_EQ(s.min_ns, 1u);
  EXPECT_EQ(s.mean_ns, 50u);
  CostSummary one = SummarizeCosts({7});
  EXPECT_EQ(one.p50_ns, 7u);
  EXPECT_EQ(one.p99_ns, 7u);
  EXPECT_EQ(SummarizeCosts({}).count, 0u);
}

TEST(Analyzer, StreamWithoutSessionEndClosesAtLastEvent) {
  Analyzer analyzer({});
  SessionStart start;
  start.ts_ns = 1000;
  start.pid = 100;
  start.probes.push_back({0, Role::kDispatchBegin, "uprobe", "/x", "b", 0});
  analyzer.OnEvent(start);
  analyzer.OnEvent(Begin(100, 2000, 1));
  Report report = analyzer.TakeReport();
  EXPECT_EQ(report.session.end_reason, "end-of-recording");
  EXPECT_EQ(report.session.end_ns, 2000u);
  EXPECT_TRUE(report.messages.enabled);
  EXPECT_EQ(report.messages.unfinished.size(), 1u);
}

}  // namespace
}  // namespace looptrace
