// Messages (the MessagesTracer over the span tracker's message spans), through the pipeline.
#include "looptrace/tracers/messages.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "event_script.h"

namespace looptrace {
namespace {

using testing::EventScript;

ProbeEvent Begin(uint32_t tid, uint64_t ts, uint64_t id, std::string name = "") {
  std::vector<EventArg> args = {testing::U("id", id)};
  if (!name.empty()) args.push_back(testing::S("name", name));
  return testing::Probe(Role::kDispatchBegin, ts, std::move(args), tid, 100);
}

ProbeEvent End(uint32_t tid, uint64_t ts, uint64_t id) {
  return testing::Probe(Role::kDispatchEnd, ts, {testing::U("id", id)}, tid, 100);
}

Report RunEvents(std::vector<ProbeEvent> events, uint64_t end_ns, size_t top_n = 10) {
  AnalysisOptions options;
  options.common.top_n = top_n;
  EventScript script;
  for (auto& e : events) script.Add(std::move(e));
  return script.Run(options, end_ns);
}

TEST(Messages, PairsBeginAndEndPerThread) {
  Report r =
      RunEvents({Begin(100, 1000, 1, "a"), Begin(200, 1500, 7, "w"), End(200, 1600, 7), End(100, 3000, 1)}, 10'000);
  const MessagesReport& report = r.messages;
  ASSERT_EQ(report.messages.size(), 2u);
  EXPECT_EQ(report.messages[0].tid, 100u);
  EXPECT_EQ(report.messages[0].cost_ns(), 2000u);
  EXPECT_EQ(report.messages[0].name, "a");
  EXPECT_EQ(report.messages[1].tid, 200u);
  EXPECT_EQ(report.messages[1].cost_ns(), 100u);
  ASSERT_EQ(report.threads.size(), 2u);
  EXPECT_EQ(report.threads[0].busy_ns, 2000u);
  EXPECT_EQ(report.definition, "dispatch");
  EXPECT_FALSE(r.stats.AnyNonZero());
}

TEST(Messages, NestedMessagesAreNotDoubleCountedAsBusy) {
  Report r = RunEvents({Begin(1, 1, 1), Begin(1, 10, 2), End(1, 20, 2), End(1, 100, 1)}, 200);
  ASSERT_EQ(r.messages.messages.size(), 2u);
  EXPECT_EQ(r.messages.messages[0].depth, 0u);
  EXPECT_EQ(r.messages.messages[1].depth, 1u);
  EXPECT_EQ(r.messages.threads[0].busy_ns, 99u);
}

TEST(Messages, ATimersDueTimeGivesItsEventLoopDelay) {
  // due_ms is the loop's CLOCK_MONOTONIC milliseconds: 40 ms late, on time (early by the
  // millisecond's rounding: 0), and a message without a due time.
  auto timer = [](uint64_t id, uint64_t ts, uint64_t due_ms) {
    return testing::Probe(Role::kDispatchBegin, ts, {testing::U("id", id), testing::U("due_ms", due_ms)}, 1, 100);
  };
  Report r = RunEvents({timer(1, 1'040'000'000, 1'000), End(1, 1'050'000'000, 1), timer(2, 1'999'500'000, 2'000),
                        End(1, 2'000'000'000, 2), Begin(1, 2'100'000'000, 3), End(1, 2'200'000'000, 3)},
                       3'000'000'000);
  const MessagesReport& m = r.messages;
  ASSERT_EQ(m.messages.size(), 3u);
  EXPECT_EQ(m.messages[0].loop_delay_ns, 40'000'000u);
  EXPECT_EQ(m.messages[1].loop_delay_ns, 0u);
  EXPECT_FALSE(m.messages[2].loop_delay_ns);
  EXPECT_EQ(m.loop_delay.count, 2u);
  EXPECT_EQ(m.loop_delay.max_ns, 40'000'000u);
  EXPECT_EQ(m.loop_delay.p50_ns, 0u);
}

TEST(Messages, CountsUnmatchedEndsMismatchedIdsAndUnfinished) {
  Report r = RunEvents({End(1, 5, 9),                    // end of a message that began before tracing
                        Begin(1, 10, 1), End(1, 20, 2),  // id differs
                        End(1, 25, 2),                   // nothing open: lost begin
                        Begin(1, 30, 3)},                // still running at the end
                       50);
  EXPECT_EQ(r.stats.Get(StatId::messages_running_at_start), 1u);
  EXPECT_EQ(r.stats.Get(StatId::unmatched_dispatch_end), 1u);
  EXPECT_EQ(r.stats.Get(StatId::dispatch_id_mismatch), 1u);
  EXPECT_EQ(r.stats.Get(StatId::unfinished_messages), 1u);
  ASSERT_EQ(r.messages.unfinished.size(), 1u);
  EXPECT_EQ(r.messages.unfinished[0].cost_ns(), 20u);
}

// Issue 30 item 9: a slow message nested in a slow one (GLib's callback inside its
// g_main_context_dispatch) is one slow message: listed under its holder, not ranked beside
// it; ranked alone when its holder never ended.
TEST(Messages, SlowestCountNestedMessagesOnce) {
  std::vector<ProbeEvent> events = {Begin(1, 1, 1),   Begin(1, 10, 2, "cb"),    End(1, 90, 2),
                                    End(1, 100, 1),   Begin(1, 200, 3, "b"),    End(1, 260, 3),
                                    Begin(1, 300, 4), Begin(1, 310, 5, "late"), End(1, 380, 5)};
  for (size_t top_n : {10u, 2u}) {
    SCOPED_TRACE(top_n);
    Report r = RunEvents(events, 1000, top_n);
    std::vector<std::string> slowest;
    for (const Message& m : r.messages.slowest) slowest.push_back(fmt::format("{}:{}", m.begin_ns, m.cost_ns()));
    const std::vector<std::string> expected =
        top_n == 2 ? std::vector<std::string>{"1:99", "310:70"} : std::vector<std::string>{"1:99", "310:70", "200:60"};
    EXPECT_EQ(slowest, expected);
    ASSERT_EQ(r.messages.slowest_nested.size(), 1u);
    EXPECT_EQ(r.messages.slowest_nested[0].name, "cb");
    ASSERT_EQ(r.messages.unfinished.size(), 1u);  // the late one's holder
  }
}

TEST(Messages, SlowestAreOrderedByCostThenBegin) {
  std::vector<ProbeEvent> events;
  uint64_t t = 1;
  for (uint64_t cost : {5, 9, 9, 1}) {
    events.push_back(Begin(1, t, t));
    events.push_back(End(1, t + cost, t));
    t += 100;
  }
  Report r = RunEvents(events, t, /*top_n=*/2);
  ASSERT_EQ(r.messages.slowest.size(), 2u);
  EXPECT_EQ(r.messages.slowest[0].begin_ns, 101u);
  EXPECT_EQ(r.messages.slowest[1].begin_ns, 201u);
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

TEST(Pipeline, StreamWithoutSessionEndClosesAtLastEvent) {
  AnalysisOptions options;
  Pipeline pipeline(options);
  SessionStart start;
  start.ts_ns = 1000;
  start.pid = 100;
  start.probes.push_back({0, Role::kDispatchBegin, "uprobe", "/x", "b", 0});
  pipeline.OnEvent(start);
  pipeline.OnEvent(Begin(100, 2000, 1));
  Report report = pipeline.TakeReport();
  EXPECT_EQ(report.session.end_reason, "end-of-recording");
  EXPECT_EQ(report.session.end_ns, 2000u);
  EXPECT_TRUE(report.messages.enabled);
  EXPECT_EQ(report.messages.unfinished.size(), 1u);
}

}  // namespace
}  // namespace looptrace
