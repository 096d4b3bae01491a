#include "looptrace/tracers/method_tree.h"

#include <gtest/gtest.h>

namespace looptrace {
namespace {

constexpr uint64_t kMs = 1'000'000;

// "i5@10 o5@30" style beats in milliseconds.
MethodBeats Beats(uint64_t begin_ms, uint64_t end_ms,
                  std::initializer_list<std::tuple<char, uint64_t, uint64_t>> beats) {
  MethodBeats m;
  m.tid = 1;
  m.begin_ns = begin_ms * kMs;
  m.end_ns = end_ms * kMs;
  for (auto [kind, id, ms] : beats) m.beats.push_back({ms * kMs, id, kind == 'i'});
  return m;
}

// "depth,id,count,cost_ms" per node, pre-order (Matrix's stack lines).
std::vector<std::string> Lines(const std::vector<CallNode>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes)
    out.push_back(std::to_string(n.depth) + "," + std::to_string(n.id) + "," + std::to_string(n.count) + "," +
                  std::to_string(n.cost_ns / kMs) + (n.unfinished ? " unfinished" : "") + (n.lost_exit ? " lost" : ""));
  return out;
}

using Lines_t = std::vector<std::string>;

TEST(CallTree, BuildsThePreOrderTreeWithTheMessageAsRoot) {
  Stats stats;
  auto tree = BuildCallTree(
      Beats(0, 100, {{'i', 1, 0}, {'i', 2, 10}, {'o', 2, 30}, {'i', 3, 40}, {'o', 3, 45}, {'o', 1, 90}}), {}, &stats);
  EXPECT_EQ(Lines(tree), (Lines_t{"0,1048574,1,100", "1,1,1,90", "2,2,1,20", "2,3,1,5"}));
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(CallTree, MergesConsecutiveIdenticalLeavesOnly) {
  Stats stats;
  // Leaf 20 three times in a row merges; non-leaf 1{2} twice does not (Matrix V3/V3b).
  auto tree = BuildCallTree(Beats(0, 100,
                                  {{'i', 20, 0},
                                   {'o', 20, 10},
                                   {'i', 20, 10},
                                   {'o', 20, 25},
                                   {'i', 20, 25},
                                   {'o', 20, 30},
                                   {'i', 1, 30},
                                   {'i', 2, 30},
                                   {'o', 2, 35},
                                   {'o', 1, 40},
                                   {'i', 1, 40},
                                   {'i', 2, 40},
                                   {'o', 2, 50},
                                   {'o', 1, 50}}),
                            {}, &stats);
  EXPECT_EQ(Lines(tree), (Lines_t{"0,1048574,1,100", "1,20,3,30", "1,1,1,10", "2,2,1,5", "1,1,1,10", "2,2,1,10"}));
}

TEST(CallTree, MissingExitsCloseAtTheCallersExitAndAreKept) {
  Stats stats;
  // 2 and 3 never exit (an exception): Matrix V4 drops them, we keep them, flagged.
  auto tree = BuildCallTree(Beats(0, 60, {{'i', 1, 0}, {'i', 2, 0}, {'i', 3, 10}, {'o', 1, 50}}), {}, &stats);
  EXPECT_EQ(Lines(tree), (Lines_t{"0,1048574,1,60", "1,1,1,50", "2,2,1,50 lost", "3,3,1,40 lost"}));
  EXPECT_EQ(stats.Get(StatId::method_exit_missing), 2u);
}

TEST(CallTree, StrayExitsAreCountedAndIgnored) {
  Stats stats;
  auto tree = BuildCallTree(Beats(0, 50, {{'o', 9, 5}, {'i', 1, 5}, {'o', 1, 40}}), {}, &stats);
  EXPECT_EQ(Lines(tree), (Lines_t{"0,1048574,1,50", "1,1,1,35"}));
  EXPECT_EQ(stats.Get(StatId::unmatched_method_exit), 1u);
}

TEST(CallTree, OpenFramesEndAtTheSliceEnd) {
  Stats stats;
  auto tree = BuildCallTree(Beats(0, 5000, {{'i', 1, 0}, {'i', 2, 100}}), {}, &stats);
  EXPECT_EQ(Lines(tree), (Lines_t{"0,1048574,1,5000", "1,1,1,5000 unfinished", "2,2,1,4900 unfinished"}));
}

TEST(CallTree, FramesDeeperThanTheLimitAreCountedNotKept) {
  Stats stats;
  CallTreeOptions options;
  options.max_depth = 2;
  auto tree = BuildCallTree(
      Beats(0, 100, {{'i', 1, 0}, {'i', 2, 1}, {'i', 3, 2}, {'o', 3, 3}, {'o', 2, 4}, {'o', 1, 5}}), options, &stats);
  EXPECT_EQ(Lines(tree), (Lines_t{"0,1048574,1,100", "1,1,1,5", "2,2,1,3"}));
  EXPECT_EQ(stats.Get(StatId::method_depth_exceeded), 1u);
  EXPECT_EQ(stats.Get(StatId::unmatched_method_exit), 0u);
}

TEST(CallTree, DeepRecursionDoesNotOverflow) {
  Stats stats;
  MethodBeats m;
  m.begin_ns = 0;
  m.end_ns = 1'000'000;
  for (uint64_t i = 0; i < 100'000; ++i) m.beats.push_back({i, 7, true});
  for (uint64_t i = 0; i < 100'000; ++i) m.beats.push_back({100'000 + i, 7, false});
  CallTreeOptions options;
  options.max_depth = 1'000'000;
  auto tree = BuildCallTree(m, options, &stats);
  EXPECT_EQ(tree.size(), 100'001u);
  EXPECT_EQ(tree.back().depth, 100'000u);
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(CallTree, TrimFollowsMatrixOrder) {
  // Matrix T1 in nanoseconds: root + 34 children costing 1..34 ms -> 30 nodes.
  std::vector<CallNode> nodes = {{kDispatchMethodId, 0, 1, 0, 2000 * kMs, false, false}};
  for (uint64_t i = 1; i <= 34; ++i) nodes.push_back({i, 1, 1, 0, i * kMs, false, false});
  EXPECT_EQ(TrimCallTree(&nodes, 30), 5u);
  ASSERT_EQ(nodes.size(), 30u);
  EXPECT_EQ(nodes[1].id, 5u);
  EXPECT_EQ(nodes[5].id, 10u);  // 9 went in the second pass
  // T2: nothing cheap enough to filter: the first 30 are kept.
  std::vector<CallNode> heavy(40, CallNode{1, 1, 1, 0, 400 * kMs, false, false});
  TrimCallTree(&heavy, 30);
  EXPECT_EQ(heavy.size(), 30u);
}

TEST(CallTree, StackKeyPicksTheHeaviestWeightedNode) {
  // Matrix K1/K2 in ns: A and B tie on weight -> A (stable); B heavier -> B.
  std::vector<CallNode> nodes = {{kDispatchMethodId, 0, 1, 0, 1000 * kMs, false, false},
                                 {1, 1, 1, 0, 900 * kMs, false, false},
                                 {2, 2, 1, 0, 600 * kMs, false, false},
                                 {3, 2, 1, 0, 250 * kMs, false, false}};
  EXPECT_EQ(StackKeyNode(nodes, 1000 * kMs)->id, 1u);
  nodes[2].cost_ns = 610 * kMs;
  EXPECT_EQ(StackKeyNode(nodes, 1000 * kMs)->id, 2u);
  // Only the root qualifies: the root is the key (K3).
  std::vector<CallNode> root_only = {{kDispatchMethodId, 0, 1, 0, 1000 * kMs, false, false},
                                     {1, 1, 1, 0, 100 * kMs, false, false}};
  EXPECT_EQ(StackKeyNode(root_only, 1000 * kMs)->id, kDispatchMethodId);
  EXPECT_EQ(StackKeyNode({}, 0), nullptr);
}

}  // namespace
}  // namespace looptrace
