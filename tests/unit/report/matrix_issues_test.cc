// Matrix issues as report data (report/matrix_issues.h): stack strings rebuilt into the call
// tree model, issues grouped in bounded memory, percentiles, merged trees.
#include "looptrace/report/matrix_issues.h"

#include <gtest/gtest.h>

#include <sstream>

#include "looptrace/report/json_records.h"
#include "looptrace/report/render.h"

namespace looptrace {
namespace {

std::vector<std::pair<std::string, std::string>> warnings;

std::vector<NamedCallNode> Parse(std::string_view stack) {
  warnings.clear();
  return ParseMatrixStack(stack, [](std::string_view name, std::string_view line) {
    warnings.emplace_back(std::string(name), std::string(line));
  });
}

MatrixIssue Evil(int64_t cost, std::string stack_key, std::string stack, std::string scene = "S") {
  MatrixIssue issue;
  issue.tag = "Trace_EvilMethod";
  issue.detail = "NORMAL";
  issue.cost_ms = cost;
  issue.stack_key = std::move(stack_key);
  issue.scene = std::move(scene);
  issue.tree = Parse(stack);
  return issue;
}

TEST(MatrixIssuesTest, StackLinesBecomeTheTreeModel) {
  auto tree = Parse("0,1048574,1,1006\n1,243,1,1000\n");
  ASSERT_EQ(tree.size(), 2u);
  EXPECT_EQ(tree[0].node.id, kDispatchMethodId);
  EXPECT_EQ(tree[1].node.depth, 1u);
  EXPECT_EQ(tree[1].node.cost_ns, 1000'000'000u);
  EXPECT_TRUE(warnings.empty());
}

TEST(MatrixIssuesTest, BadLinesAndDepthsAreNamedWarnings) {
  auto tree = Parse("1,5,1,10\n0,1,1,100\n2,2,1,50\n-1,3,1,5\n1,4,1\n1,4,1,5,6\n 1 , 7 , 2 , 9 \r\n");
  // "1,5" first (not 0) and "2,2" after depth 0 are clamped; -1, three and five fields are skipped.
  ASSERT_EQ(tree.size(), 4u);
  EXPECT_EQ(tree[0].node.depth, 0u);
  EXPECT_EQ(tree[2].node.depth, 1u);
  EXPECT_EQ(tree[3].node.id, 7u);
  EXPECT_EQ(tree[3].node.count, 2u);
  size_t depth = 0, line = 0;
  for (const auto& [name, text] : warnings) (name == "matrix_stack_bad_depth" ? depth : line)++;
  EXPECT_EQ(depth, 2u);
  EXPECT_EQ(line, 3u);
}

TEST(MatrixIssuesTest, AHostileDeepStackIsCut) {
  std::string stack;
  for (int depth = 0; depth < 600; ++depth) stack += std::to_string(depth) + ",7,1,10\n";
  auto tree = Parse(stack);
  EXPECT_EQ(tree.size(), static_cast<size_t>(kMaxMatrixStackDepth + 1));
  EXPECT_EQ(warnings.size(), 600 - tree.size());
  MatrixFleetBuilder builder;
  MatrixIssue issue = Evil(10, "7|", stack);
  builder.Add(std::move(issue));
  EXPECT_EQ(builder.Finish().groups.at(0).merged.size(), tree.size());
}

TEST(MatrixIssuesTest, GroupsCountPercentilesAndMergeTrees) {
  MatrixFleetBuilder builder(1);
  for (int i = 1; i <= 100; ++i) {
    MatrixIssue issue = Evil(700 + i, "2|", "0,1048574,1,800\n1,1,1,790\n2,2,1,700\n");
    issue.time_ms = 1000 + i;
    EXPECT_TRUE(builder.Add(std::move(issue)));
  }
  EXPECT_TRUE(builder.Add(Evil(701, "2|", "0,1048574,1,800\n1,1,1,790\n2,2,1,700\n")));  // no time: another issue
  builder.Add(Evil(5000, "9|", "0,1048574,1,5000\n1,9,1,4990\n", "T"));
  MatrixIssuesReport report = builder.Finish();
  EXPECT_EQ(report.issues, 102u);
  EXPECT_EQ(report.duplicates, 0u);
  EXPECT_EQ(report.listed.size(), 1u);
  EXPECT_EQ(report.not_listed, 101u);
  ASSERT_EQ(report.groups.size(), 2u);
  const MatrixIssueGroup& g = report.groups[0];
  EXPECT_EQ(g.key, "2|");
  EXPECT_EQ(g.issues, 101u);
  EXPECT_EQ(g.cost.count, 101u);
  EXPECT_EQ(g.cost.p50_ms, 750);
  EXPECT_EQ(g.cost.p99_ms, 799);
  EXPECT_EQ(g.cost.max_ms, 800);
  EXPECT_EQ(g.first_time_ms, 1001);
  EXPECT_EQ(g.last_time_ms, 1100);
  ASSERT_EQ(g.merged.size(), 3u);
  EXPECT_EQ(g.merged[2].node.cost_ns, 101 * 700'000'000ull);
  EXPECT_EQ(g.merged[2].node.count, 101u);
  EXPECT_EQ(g.scenes, (MatrixTally{{"S", 101}}));
}

TEST(MatrixIssuesTest, SameContentTwiceCountsOnce) {
  MatrixFleetBuilder builder;
  MatrixIssue a = Evil(900, "1|", "0,1048574,1,900\n1,1,1,800\n");
  a.time_ms = 5;
  MatrixIssue b = a;
  b.source = "elsewhere:9";  // where it was read is not what it is
  EXPECT_TRUE(builder.Add(std::move(a)));
  EXPECT_FALSE(builder.Add(std::move(b)));
  auto report = builder.Finish();
  EXPECT_EQ(report.issues, 1u);
  EXPECT_EQ(report.duplicates, 1u);
}

TEST(MatrixIssuesTest, ThreadStackIssuesGroupByTheirFirstAppFrame) {
  MatrixIssue lag;
  lag.tag = "Trace_EvilMethod";
  lag.detail = "LAG";
  lag.thread_stack = {"java.lang.Thread.sleep(Native Method)", "android.os.Handler.dispatchMessage(Handler.java:99)",
                      "com.example.Feed.bind(Feed.java:77)"};
  EXPECT_EQ(MatrixGroupKey(lag).first, "thread:com.example.Feed.bind(Feed.java:77)");
  EXPECT_EQ(lag.Category(), "lag");
}

TEST(MatrixIssuesTest, RenderersProjectTheSection) {
  MatrixFleetBuilder builder;
  builder.Add(Evil(900, "1|", "0,1048574,1,900\n1,1,1,800\n"));
  builder.Warn("matrix_stack_bad_line", "f:3: 1,,1");
  Report report;
  report.matrix = builder.Finish();
  std::ostringstream json, html;
  MakeRenderer("json")->Render(report, json);
  EXPECT_EQ(json.str().rfind("{", 0), 0u);
  EXPECT_NE(json.str().find("\"type\":\"matrix_input\""), std::string::npos);
  EXPECT_NE(json.str().find("\"type\":\"matrix_data_quality\""), std::string::npos);
  EXPECT_NE(json.str().find("\"stack\":\"0,1048574,1,900\\n1,1,1,800\\n\""), std::string::npos) << json.str();
  EXPECT_EQ(json.str().find("\"type\":\"session\""), std::string::npos);
  MakeRenderer("html")->Render(report, html);
  EXPECT_NE(html.str().find("Matrix issues (1)"), std::string::npos);
  EXPECT_NE(html.str().find("matrix_group"), std::string::npos);
}

// The content hash is what ClickHouse ingests deduplicate by: an issue ingested by an
// earlier version must hash the same now (values computed by the first version).
TEST(MatrixIssuesTest, ContentHashesStayThoseOfEarlierVersions) {
  MatrixIssue evil;
  evil.tag = "Trace_EvilMethod";
  evil.detail = "NORMAL";
  evil.process = "com.example";
  evil.scene = "Main";
  evil.time_ms = 1700000000123;
  evil.cost_ms = 754;
  evil.stack_key = "121|";
  NamedCallNode node;
  node.node.id = 121;
  node.node.depth = 1;
  node.node.count = 1;
  node.node.cost_ns = 754000000;
  node.name = "x";
  evil.tree.push_back(node);
  evil.other_json = R"({"mem":4000000123})";
  MatrixIssue fps;
  fps.tag = "Trace_FPS";
  fps.scene = "Feed";
  fps.fps = 52.5;
  fps.drop_level[0] = 100;
  fps.drop_level[3] = 2;
  fps.drop_sum[1] = 12.5;
  fps.drop_sum[3] = 1e15;
  MatrixIssue cold;
  cold.tag = "Trace_StartUp";
  cold.application_create_ms = 42;
  cold.first_activity_create_ms = 244;
  cold.startup_duration_ms = 2306;
  cold.warm = false;
  MatrixIssue warm;
  warm.tag = "Trace_StartUp";
  warm.warm = true;
  EXPECT_EQ(MatrixContentHash(evil), 3752542163937200417ULL);
  EXPECT_EQ(MatrixContentHash(fps), 1033462234696425989ULL);
  EXPECT_EQ(MatrixContentHash(cold), 17005809375364614023ULL);
  EXPECT_EQ(MatrixContentHash(warm), 12770489624789631623ULL);
}

}  // namespace
}  // namespace looptrace
