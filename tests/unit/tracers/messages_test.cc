// Messages (the MessagesTracer over the span tracker's message spans), through the pipeline.
#include "looptrace/tracers/messages.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "looptrace/tracers/cost_histogram.h"

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
  Report r = RunEvents({Begin(100, 1000, 1, "a"), Begin(200, 1500, 7, "w"), End(200, 1600, 7), End(100, 3000, 1)}, 10'000);
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

TEST(Messages, CountsUnmatchedEndsMismatchedIdsAndUnfinished) {
  Report r = RunEvents({End(1, 5, 9),      // end of a message that began before tracing
                  Begin(1, 10, 1),
                  End(1, 20, 2),     // id differs
                  End(1, 25, 2),     // nothing open: lost begin
                  Begin(1, 30, 3)},  // still running at the end
                 50);
  EXPECT_EQ(r.stats.Get(StatId::messages_running_at_start), 1u);
  EXPECT_EQ(r.stats.Get(StatId::unmatched_dispatch_end), 1u);
  EXPECT_EQ(r.stats.Get(StatId::dispatch_id_mismatch), 1u);
  EXPECT_EQ(r.stats.Get(StatId::unfinished_messages), 1u);
  ASSERT_EQ(r.messages.unfinished.size(), 1u);
  EXPECT_EQ(r.messages.unfinished[0].cost_ns(), 20u);
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

Report RunCapped(const std::vector<ProbeEvent>& events, uint64_t end_ns, size_t keep) {
  AnalysisOptions options;
  options.Mutable<MessagesOptions>("messages").keep_messages = keep;
  EventScript script;
  for (const auto& e : events) script.Add(e);
  return script.Run(options, end_ns);
}

// n messages on thread 1, one after the other, with pseudo-random costs 1 us .. 10 ms.
std::vector<ProbeEvent> RandomMessages(size_t n, std::vector<uint64_t>* costs, size_t names = 3) {
  std::mt19937_64 rng(7);
  std::vector<ProbeEvent> events;
  uint64_t t = 1000;
  for (size_t i = 0; i < n; ++i) {
    uint64_t cost = 1000 + rng() % 10'000'000;
    costs->push_back(cost);
    events.push_back(Begin(1, t, i + 1, "m" + std::to_string(i % names)));
    events.push_back(End(1, t + cost, i + 1));
    t += cost + 10;
  }
  return events;
}

TEST(Messages, KeepMessagesCapsTheDetailedListButNotTheAggregates) {
  std::vector<uint64_t> costs;
  auto events = RandomMessages(5000, &costs);
  const uint64_t end = 1ull << 50;
  Report capped = RunCapped(events, end, 100);
  Report full = RunCapped(events, end, 0);

  // Only the most recent 100 one by one; every one of the others counted.
  ASSERT_EQ(capped.messages.messages.size(), 100u);
  EXPECT_EQ(capped.messages.messages.back().msg_id, 5000u);
  EXPECT_EQ(capped.messages.messages.front().msg_id, 4901u);
  EXPECT_EQ(capped.messages.not_kept, 4900u);
  EXPECT_EQ(capped.stats.Get(StatId::messages_not_kept), 4900u);
  EXPECT_EQ(StatSeverityOf(StatId::messages_not_kept), StatSeverity::kInfo);
  EXPECT_TRUE(capped.messages.percentiles_from_histogram);
  ASSERT_EQ(full.messages.messages.size(), 5000u);
  EXPECT_FALSE(full.messages.percentiles_from_histogram);
  EXPECT_EQ(full.stats.Get(StatId::messages_not_kept), 0u);

  // Exact counts, totals, min, max, busy time; percentiles within 1%.
  ASSERT_EQ(capped.messages.threads.size(), 1u);
  const CostSummary& c = capped.messages.threads[0].cost;
  const CostSummary& f = full.messages.threads[0].cost;
  EXPECT_EQ(c.count, 5000u);
  EXPECT_EQ(c.count, f.count);
  EXPECT_EQ(c.total_ns, f.total_ns);
  EXPECT_EQ(c.min_ns, f.min_ns);
  EXPECT_EQ(c.max_ns, f.max_ns);
  EXPECT_EQ(c.mean_ns, f.mean_ns);
  EXPECT_EQ(capped.messages.threads[0].busy_ns, full.messages.threads[0].busy_ns);
  EXPECT_NEAR(double(c.p50_ns), double(f.p50_ns), 0.01 * f.p50_ns);
  EXPECT_NEAR(double(c.p90_ns), double(f.p90_ns), 0.01 * f.p90_ns);
  EXPECT_NEAR(double(c.p99_ns), double(f.p99_ns), 0.01 * f.p99_ns);

  // The slowest are the same messages whether or not they were kept.
  ASSERT_EQ(capped.messages.slowest.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(capped.messages.slowest[i].msg_id, full.messages.slowest[i].msg_id);
  std::sort(costs.rbegin(), costs.rend());
  EXPECT_EQ(capped.messages.slowest[0].cost_ns(), costs[0]);

  ASSERT_EQ(capped.messages.by_name.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(capped.messages.by_name[i].name, full.messages.by_name[i].name);
    EXPECT_EQ(capped.messages.by_name[i].cost.count, full.messages.by_name[i].cost.count);
    EXPECT_EQ(capped.messages.by_name[i].cost.total_ns, full.messages.by_name[i].cost.total_ns);
  }
}

TEST(Messages, DistinctNamesBeyondTheCapGoToOneRowAndAreCounted) {
  std::vector<uint64_t> costs;
  const size_t names = kMaxMessageNames + 200;
  auto events = RandomMessages(names * 2, &costs, names);
  for (size_t keep : {size_t{0}, size_t{10}}) {
    Report r = RunCapped(events, 1ull << 50, keep);
    ASSERT_EQ(r.messages.by_name.size(), kMaxMessageNames + 1) << keep;
    auto other = std::find_if(r.messages.by_name.begin(), r.messages.by_name.end(),
                              [](const NamedMessages& n) { return n.name == kOtherNamesRow; });
    ASSERT_NE(other, r.messages.by_name.end());
    EXPECT_EQ(other->cost.count, 400u);
    EXPECT_EQ(r.stats.Get(StatId::message_names_aggregated), 400u);
    uint64_t total = 0;
    for (const auto& n : r.messages.by_name) total += n.cost.count;
    EXPECT_EQ(total, names * 2);
  }
}

TEST(CostHistogram, PercentilesWithinOnePercentAndExactExtremes) {
  std::mt19937_64 rng(3);
  CostHistogram h;
  std::vector<uint64_t> values;
  for (int i = 0; i < 100'000; ++i) {
    uint64_t v = uint64_t(std::exp(std::uniform_real_distribution<double>(0, 30)(rng)));
    values.push_back(v);
    h.Add(v);
  }
  CostSummary exact = SummarizeCosts(values);
  CostSummary approx = h.Summary();
  EXPECT_EQ(approx.count, exact.count);
  EXPECT_EQ(approx.total_ns, exact.total_ns);
  EXPECT_EQ(approx.min_ns, exact.min_ns);
  EXPECT_EQ(approx.max_ns, exact.max_ns);
  EXPECT_NEAR(double(approx.p50_ns), double(exact.p50_ns), 0.01 * exact.p50_ns);
  EXPECT_NEAR(double(approx.p90_ns), double(exact.p90_ns), 0.01 * exact.p90_ns);
  EXPECT_NEAR(double(approx.p99_ns), double(exact.p99_ns), 0.01 * exact.p99_ns);
  // Small values are exact; buckets tile the range without gaps.
  for (uint64_t v = 0; v < 64; ++v) EXPECT_EQ(CostHistogram::Lower(CostHistogram::Index(v)), v);
  for (size_t i = 0; i + 1 < 3000; ++i) ASSERT_EQ(CostHistogram::Upper(i) + 1, CostHistogram::Lower(i + 1)) << i;
  EXPECT_EQ(CostHistogram::Upper(CostHistogram::Index(UINT64_MAX)), UINT64_MAX);
  // Memory does not grow with the count.
  const size_t bytes = h.bytes();
  for (int i = 0; i < 1'000'000; ++i) h.Add(values[i % values.size()]);
  EXPECT_EQ(h.bytes(), bytes);
}

TEST(Messages, RetainedMemoryStaysFlatWithTheCap) {
  AnalysisOptions options;
  options.Mutable<MessagesOptions>("messages").keep_messages = 1000;
  Stats stats;
  TracerContext context;
  context.stats = &stats;
  context.common = &options.common;
  MessagesTracer tracer(options.Mutable<MessagesOptions>("messages"), context);
  Span span;
  span.kind = SpanKind::kMessage;
  span.close = SpanClose::kEnded;
  size_t after_10k = 0;
  for (uint64_t i = 0; i < 200'000; ++i) {
    span.tid = 1;
    span.begin_ns = i * 1000;
    span.end_ns = i * 1000 + 500 + i % 300;
    tracer.OnSpanEnd(span);
    if (i == 10'000) after_10k = tracer.RetainedBytes();
  }
  EXPECT_LE(tracer.RetainedBytes(), after_10k + after_10k / 10);
  EXPECT_EQ(stats.Get(StatId::messages_not_kept), 200'000u - 1000u);
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
