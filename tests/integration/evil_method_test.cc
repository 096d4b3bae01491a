// End-to-end EvilMethod: the call tree looptrace reconstructs from method beats must have
// exactly the shape of the sample target's truth, every node within 1 ms (or 1 %).
#include <gtest/gtest.h>

#include <set>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

std::string Mapping() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app.methodMapping.txt"; }
std::string CygApp() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app-cyg"; }

class EvilMethodTest : public BpfTest {
 protected:
  // Methods of the truth's message `msg_id`, in call (pre-)order.
  static std::vector<json> TruthMethods(const std::vector<json>& truth, uint64_t msg_id) {
    std::vector<json> methods;
    for (const auto& m : OfType(truth, "method"))
      if (m["msg_id"] == msg_id) methods.push_back(m);
    std::stable_sort(methods.begin(), methods.end(), [](const json& a, const json& b) {
      return a["begin_ns"].get<uint64_t>() < b["begin_ns"].get<uint64_t>();
    });
    return methods;
  }

  // Compares a reported tree with the truth: same pre-order shape, identity and costs.
  static void ExpectTreeMatchesTruth(const json& report, const std::vector<json>& methods, bool by_name) {
    const auto& tree = report["tree"];
    ASSERT_EQ(tree.size(), methods.size() + 1) << report.dump(1);
    EXPECT_EQ(tree[0]["depth"], 0);
    int64_t max_error = 0;
    for (size_t i = 0; i < methods.size(); ++i) {
      const json& node = tree[i + 1];
      const json& truth = methods[i];
      SCOPED_TRACE(truth.dump());
      EXPECT_EQ(node["depth"].get<int>(), truth["depth"].get<int>() + 1);
      EXPECT_EQ(node["count"], 1);
      if (by_name) {
        EXPECT_EQ(node["name"], truth["demangled"]);
      } else {
        EXPECT_EQ(node["id"], truth["method_id"]);
        EXPECT_NE(node["name"].get<std::string>().find("." + truth["name"].get<std::string>() + "("), std::string::npos)
            << node["name"];
      }
      int64_t truth_cost = truth["end_ns"].get<int64_t>() - truth["begin_ns"].get<int64_t>();
      int64_t error = std::llabs(node["cost_ns"].get<int64_t>() - truth_cost);
      EXPECT_LE(error, std::max<int64_t>(1'000'000, truth_cost / 100));
      max_error = std::max(max_error, error);
    }
    std::cout << "tree of " << methods.size() << " methods, max node cost error " << max_error << " ns\n";
  }

  TempDir dir_;
};

TEST_F(EvilMethodTest, IdHooksTreeMatchesTruth) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json",
                       "--method-mapping", Mapping(), "--", SampleApp(), "--scenario", "evil", "--truth",
                       dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto truth = ReadJsonLines(dir_ / "truth.jsonl");
  auto reports = OfType(lines, "evil_method");
  ASSERT_EQ(reports.size(), 1u);
  const json& report = reports[0];
  EXPECT_EQ(report["name"], "evil.jank");
  EXPECT_EQ(report["tag"], "Trace_EvilMethod");
  EXPECT_EQ(report["detail"], "NORMAL");
  for (const char* key :
       {"machine", "cpu_app", "mem", "mem_free", "cost", "usage", "scene", "stack", "stackKey", "process", "time"})
    EXPECT_TRUE(report.contains(key)) << key;
  EXPECT_EQ(report["stackKey"], "1|");  // A: (1+1) * 2.24 s outweighs L: (2+1) * 1 s
  ExpectTreeMatchesTruth(report, TruthMethods(truth, report["msg_id"]), /*by_name=*/false);
  // Matrix's stack string: "depth,methodId,count,cost" per node, pre-order.
  EXPECT_TRUE(report["stack"].get<std::string>().starts_with("0,1048574,1,")) << report["stack"];
  EXPECT_NE(report["stack"].get<std::string>().find("\n1,1,1,"), std::string::npos);
  // The message is mostly asleep: its CPU time is a small fraction of its wall time.
  EXPECT_GT(report["cpu_ns"].get<uint64_t>(), 0u);
  EXPECT_LT(report["cpu_ns"].get<uint64_t>(), report["cost_ns"].get<uint64_t>() / 10);
}

TEST_F(EvilMethodTest, InstrumentFunctionsTreeMatchesTruth) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile("sample-cyg"), "-f", "json", "-o",
                       dir_ / "out.json", "--", CygApp(), "--scenario", "evil", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  EXPECT_EQ(OfType(lines, "session")[0]["profile"], "sample-cyg");
  auto reports = OfType(lines, "evil_method");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0]["method_id_kind"], "address");
  ExpectTreeMatchesTruth(reports[0], TruthMethods(ReadJsonLines(dir_ / "truth.jsonl"), reports[0]["msg_id"]),
                         /*by_name=*/true);
}

TEST_F(EvilMethodTest, MessageUnderTheThresholdHasNoReport) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json", "--",
                       SampleApp(), "--scenario", "evil-short"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(OfType(ReadJsonLines(dir_ / "out.json"), "evil_method").size(), 0u);

  // A lower threshold reports it, with the full tree.
  auto low = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "low.json",
                         "--evil-threshold", "150", "--method-mapping", Mapping(), "--", SampleApp(), "--scenario",
                         "evil-short", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(low.exit_code, 0) << low.err;
  auto reports = OfType(ReadJsonLines(dir_ / "low.json"), "evil_method");
  ASSERT_EQ(reports.size(), 1u);
  ExpectTreeMatchesTruth(reports[0], TruthMethods(ReadJsonLines(dir_ / "truth.jsonl"), reports[0]["msg_id"]),
                         /*by_name=*/false);
}

TEST_F(EvilMethodTest, MatrixCompatReproducesMatrixStackFormat) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json",
                       "--matrix-compat", "--", SampleApp(), "--scenario", "evil", "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto reports = OfType(ReadJsonLines(dir_ / "out.json"), "evil_method");
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_TRUE(reports[0]["matrix_compat"].get<bool>());
  // 13 lines: DISPATCH, A..L; ms costs within Matrix's integer truncation of the truth.
  std::string stack = reports[0]["stack"];
  EXPECT_EQ(std::count(stack.begin(), stack.end(), '\n'), 13) << stack;
  // L sleeps about 1000 ms (more on a loaded machine): its cost is the truth the target
  // writes, in Matrix's ms, which truncates both ends: the truth's whole ms or one more.
  uint64_t l_ns = 0;
  for (const auto& m : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "method"))
    if (m["name"] == "L" && m["msg_id"] == reports[0]["msg_id"])
      l_ns = m["end_ns"].get<uint64_t>() - m["begin_ns"].get<uint64_t>();
  ASSERT_GT(l_ns, 0u) << "no truth for L";
  const uint64_t l_ms = l_ns / 1'000'000;
  EXPECT_TRUE(stack.find("\n2,12,1," + std::to_string(l_ms) + "\n") != std::string::npos ||
              stack.find("\n2,12,1," + std::to_string(l_ms + 1) + "\n") != std::string::npos)
      << "L took " << l_ns << " ns\n"
      << stack;
  EXPECT_EQ(reports[0]["stackKey"], "1|");
}

// Sustained method beats: every beat of every slow message must reach the tree (no
// record lost or overwritten): the storm's leaf calls, merged into one node, must add up
// to the number of calls the target made.
TEST_F(EvilMethodTest, MethodStormLosesNoBeats) {
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json",
                       "--evil-threshold", "50", "--", SampleApp(), "--scenario", "method-storm", "--count", "3000",
                       "--truth", dir_ / "truth.jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  std::map<uint64_t, uint64_t> calls_by_msg;
  for (const auto& m : OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message"))
    if (m.contains("method_calls")) calls_by_msg[m["msg_id"]] = m["method_calls"];
  auto reports = OfType(lines, "evil_method");
  ASSERT_GE(reports.size(), 20u);
  uint64_t total = 0;
  for (const auto& report : reports) {
    EXPECT_EQ(report["beats_overwritten"], 0);
    ASSERT_EQ(report["tree"].size(), 2u) << report["tree"].dump();
    EXPECT_EQ(report["tree"][1]["count"].get<uint64_t>(), calls_by_msg[report["msg_id"]]);
    total += report["tree"][1]["count"].get<uint64_t>();
  }
  std::cout << total << " leaf calls (" << 2 * total << " beats) in " << reports.size() << " messages, none lost\n";
  EXPECT_EQ(Counter(lines, "method_beats_overwritten"), 0u);
  EXPECT_EQ(Counter(lines, "unmatched_method_exit"), 0u);
}

}  // namespace
}  // namespace looptrace::testing

namespace looptrace::testing {
namespace {

TEST_F(EvilMethodTest, MalformedMappingStaysUsableAndMissingIdsAreCounted) {
  std::string mapping = dir_ / "methodMapping.txt";
  {
    std::ifstream in(Mapping());
    std::ofstream out(mapping);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      if (line.starts_with("12,")) continue;                       // L has no name
      if (++n == 3) out << "this,is,not a mapping line at all\n";  // line 3 is malformed
      out << line << "\n";
    }
  }
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "-f", "json", "-o", dir_ / "out.json",
                       "--method-mapping", mapping, "--", SampleApp(), "--scenario", "evil", "--count", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(mapping + ":3:"), std::string::npos) << r.err;
  auto lines = ReadJsonLines(dir_ / "out.json");
  auto reports = OfType(lines, "evil_method");
  ASSERT_EQ(reports.size(), 1u);
  std::set<std::string> names;
  for (const auto& node : reports[0]["tree"]) names.insert(node["name"]);
  EXPECT_TRUE(names.contains("sample.app.TestTraceMainActivity.A()V"));
  EXPECT_TRUE(names.contains("method#12"));
  EXPECT_GT(Counter(lines, "method_names_unknown"), 0u);
}

}  // namespace
}  // namespace looptrace::testing
