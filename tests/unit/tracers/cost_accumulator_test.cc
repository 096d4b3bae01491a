// CostAccumulator and --keep-messages: exact summaries until the limit, then a histogram
// whose percentiles stay within 0.4%; the message list keeps the latest N.
#include "looptrace/tracers/cost_accumulator.h"

#include <gtest/gtest.h>

#include <random>

#include "event_script.h"
#include "looptrace/tracers/messages.h"

namespace looptrace {
namespace {

TEST(CostAccumulator, BucketsAreContiguousAndNarrow) {
  for (uint64_t v : std::initializer_list<uint64_t>{0ull, 1ull, 255ull, 256ull, 257ull, 1000ull, 123456789ull,
                                                    1ull << 40, (1ull << 63) + 12345, UINT64_MAX}) {
    uint32_t b = CostAccumulator::BucketOf(v);
    EXPECT_LE(CostAccumulator::BucketLow(b), v) << v;
    if (v != UINT64_MAX) {
      EXPECT_GT(CostAccumulator::BucketHigh(b), v) << v;
    }
    if (v >= 256) {
      EXPECT_LE(static_cast<double>(CostAccumulator::BucketHigh(b) - CostAccumulator::BucketLow(b)),
                static_cast<double>(v) / 128 + 1)
          << v;
    }
  }
  for (uint32_t b = 0; b < 2000; ++b) EXPECT_EQ(CostAccumulator::BucketHigh(b), CostAccumulator::BucketLow(b + 1));
}

TEST(CostAccumulator, ExactUntilTheLimitThenWithinHalfAPercent) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> cost(14, 1.5);  // ~1 ms median, long tail
  std::vector<uint64_t> all;
  CostAccumulator limited(1000), unlimited;
  for (int i = 0; i < 50'000; ++i) {
    uint64_t v = static_cast<uint64_t>(cost(rng));
    all.push_back(v);
    limited.Add(v);
    unlimited.Add(v);
    if (i == 999) {
      EXPECT_TRUE(limited.exact());
    }
  }
  EXPECT_FALSE(limited.exact());
  EXPECT_TRUE(unlimited.exact());
  CostSummary exact = SummarizeCosts(all), approx = limited.Summary();
  EXPECT_EQ(unlimited.Summary().p99_ns, exact.p99_ns);
  EXPECT_EQ(approx.count, exact.count);
  EXPECT_EQ(approx.total_ns, exact.total_ns);
  EXPECT_EQ(approx.min_ns, exact.min_ns);
  EXPECT_EQ(approx.max_ns, exact.max_ns);
  EXPECT_EQ(approx.mean_ns, exact.mean_ns);
  for (auto [a, e] :
       {std::pair{approx.p50_ns, exact.p50_ns}, {approx.p90_ns, exact.p90_ns}, {approx.p99_ns, exact.p99_ns}})
    EXPECT_NEAR(static_cast<double>(a), static_cast<double>(e), static_cast<double>(e) * 0.004);
}

// The histogram holds a window of buckets from the values it folded: later ones below and
// above it widen it both ways, and every percentile still comes out of the right bucket.
TEST(CostAccumulator, HistogramWidensToValuesBelowAndAboveTheFoldedOnes) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> all;
  CostAccumulator limited(100);
  auto add = [&](uint64_t v) {
    all.push_back(v);
    limited.Add(v);
  };
  for (int i = 0; i < 101; ++i) add(50'000 + rng() % 1000);  // folded: a window ~3 buckets wide
  ASSERT_FALSE(limited.exact());
  for (int i = 0; i < 3000; ++i) add(rng() % 300);  // below it, into the linear buckets
  for (int i = 0; i < 3000; ++i) add((uint64_t{1} << 50) + rng() % (uint64_t{1} << 48));  // far above
  add(0);
  add(UINT64_MAX / 4);
  const CostSummary exact = SummarizeCosts(all), approx = limited.Summary();
  EXPECT_EQ(approx.count, exact.count);
  EXPECT_EQ(approx.min_ns, 0u);
  EXPECT_EQ(approx.max_ns, UINT64_MAX / 4);
  for (auto [a, e] :
       {std::pair{approx.p50_ns, exact.p50_ns}, {approx.p90_ns, exact.p90_ns}, {approx.p99_ns, exact.p99_ns}})
    EXPECT_NEAR(static_cast<double>(a), static_cast<double>(e), static_cast<double>(e) * 0.004 + 1);
}

TEST(KeepMessages, ListsTheLatestAndCountsEveryMessage) {
  AnalysisOptions options;
  options.Mutable<MessagesOptions>("messages").keep_messages = 100;
  options.common.top_n = 3;
  testing::EventScript script;
  for (uint64_t i = 1; i <= 1000; ++i) {
    Message m;
    m.tid = 1;
    m.msg_id = i;
    m.name = i % 2 ? "odd" : "even";
    m.begin_ns = i * 10'000;
    m.end_ns = m.begin_ns + (i == 5 ? 9000 : i);  // message 5 is the slowest, long gone from the list
    script.AddMessage(m);
  }
  Report r = script.Run(options, 20'000'000);
  EXPECT_EQ(r.messages.messages.size(), 100u);
  EXPECT_EQ(*r.messages.messages.front().msg_id, 901u);
  EXPECT_EQ(r.messages.not_listed, 900u);
  ASSERT_EQ(r.messages.threads.size(), 1u);
  EXPECT_EQ(r.messages.threads[0].cost.count, 1000u);
  EXPECT_EQ(r.messages.threads[0].cost.max_ns, 9000u);
  EXPECT_TRUE(r.messages.approximate_percentiles);
  ASSERT_EQ(r.messages.slowest.size(), 3u);
  EXPECT_EQ(*r.messages.slowest[0].msg_id, 5u);
  EXPECT_EQ(*r.messages.slowest[1].msg_id, 1000u);
  ASSERT_EQ(r.messages.by_name.size(), 2u);
  EXPECT_EQ(r.messages.by_name[0].cost.count + r.messages.by_name[1].cost.count, 1000u);
}

// A message named per instance (asyncio's Task-N) counts under its group; the slowest list
// keeps each one's own name.
TEST(KeepMessages, MessagesByNameCountUnderTheGroupTheirNamerGave) {
  AnalysisOptions options;
  testing::EventScript script;
  for (uint64_t i = 1; i <= 4; ++i) {
    const uint64_t begin = i * 1'000'000;
    script.Add(testing::Probe(Role::kDispatchBegin, begin,
                              {testing::S("name", "Task-" + std::to_string(i) + " handle() at srv.py:3"),
                               testing::S("group", "Task-* handle() at srv.py:3")},
                              1));
    script.Add(testing::Probe(Role::kDispatchEnd, begin + i * 1000, {}, 1));
  }
  Report r = script.Run(options, 10'000'000);
  ASSERT_EQ(r.messages.by_name.size(), 1u);
  EXPECT_EQ(r.messages.by_name[0].name, "Task-* handle() at srv.py:3");
  EXPECT_EQ(r.messages.by_name[0].cost.count, 4u);
  EXPECT_EQ(r.messages.by_name[0].cost.max_ns, 4000u);
  ASSERT_FALSE(r.messages.slowest.empty());
  EXPECT_EQ(r.messages.slowest[0].name, "Task-4 handle() at srv.py:3");
}

TEST(KeepMessages, ZeroKeepsTheOldBehaviour) {
  AnalysisOptions options;
  testing::EventScript script;
  for (uint64_t i = 1; i <= 50; ++i) {
    Message m;
    m.tid = 1;
    m.msg_id = i;
    m.begin_ns = i * 1000;
    m.end_ns = m.begin_ns + 100 + (i * 37) % 500;
    script.AddMessage(m);
  }
  Report r = script.Run(options, 1'000'000);
  EXPECT_EQ(r.messages.messages.size(), 50u);
  EXPECT_EQ(r.messages.not_listed, 0u);
  EXPECT_FALSE(r.messages.approximate_percentiles);
  std::vector<uint64_t> costs;
  for (const auto& m : r.messages.messages) costs.push_back(m.cost_ns());
  CostSummary exact = SummarizeCosts(costs);
  EXPECT_EQ(r.messages.threads[0].cost.p90_ns, exact.p90_ns);
  EXPECT_EQ(r.messages.threads[0].cost.p50_ns, exact.p50_ns);
}

}  // namespace
}  // namespace looptrace
