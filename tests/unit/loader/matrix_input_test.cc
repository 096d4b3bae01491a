// Matrix issues read back (loader/session/matrix_input.h): the write-ups' real examples, every
// kind the trace canary emits, looptrace's own --matrix-compat output (a round trip), and
// hostile input, each problem a counted, named warning.
#include "loader/session/matrix_input.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loader/decode/mapping_namer.h"
#include "looptrace/report/json_records.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/matrix_compat.h"

namespace looptrace::loader {
namespace {

const std::string kDir = std::string(LOOPTRACE_SOURCE_DIR) + "/tests/fixtures/matrix/";

struct Read {
  MatrixIssuesReport report;
  std::vector<MatrixInputRead> inputs;
};

Read ReadAll(const std::vector<std::string>& paths, const std::string& mapping = "", size_t keep = 200) {
  std::unique_ptr<MappingNamer> namer;
  if (!mapping.empty()) {
    auto loaded = MappingNamer::Load(mapping);
    EXPECT_TRUE(loaded.has_value());
    namer = std::move(*loaded);
  }
  MatrixFleetBuilder builder(keep);
  Read out;
  for (const std::string& path : paths) {
    auto read = ReadMatrixInput(path, MatrixNaming{namer.get(), nullptr}, builder);
    EXPECT_TRUE(read.has_value()) << (read ? "" : read.error().message);
    if (read) out.inputs.push_back(*read);
  }
  out.report = builder.Finish();
  return out;
}

uint64_t WarningCount(const MatrixIssuesReport& report, std::string_view name) {
  for (const MatrixWarning& w : report.warnings)
    if (w.name == name) return w.count;
  return 0;
}

class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& suffix = ".txt") {
    path_ = std::filesystem::temp_directory_path() /
            ("lt_matrix_" + std::to_string(getpid()) + "_" + std::to_string(counter_++) + suffix);
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

std::string Render(const MatrixIssuesReport& matrix, const std::string& format) {
  Report report;
  report.matrix = matrix;
  std::ostringstream out;
  MakeRenderer(format)->Render(report, out);
  return out.str();
}

// The write-up's Trace_EvilMethod of the demo's TestTraceMainActivity, as printed there
// (pretty-printed, raw line breaks inside `stack`), named by its methodMapping.txt lines.
TEST(MatrixInputTest, WriteUpEvilMethodIsRebuiltAndNamed) {
  Read r = ReadAll({kDir + "seed_evil_method.json"}, kDir + "seed_methodMapping.txt");
  ASSERT_EQ(r.report.issues, 1u);
  EXPECT_TRUE(r.report.warnings.empty()) << r.report.warnings.front().name << ": " << r.report.warnings.front().first;
  const MatrixIssue& issue = r.report.listed.at(0);
  EXPECT_EQ(issue.tag, "Trace_EvilMethod");
  EXPECT_EQ(issue.detail, "NORMAL");
  EXPECT_EQ(issue.cost_ms, 2262);
  EXPECT_EQ(issue.process, "sample.tencent.matrix");
  EXPECT_EQ(issue.time_ms, 1620523013050);
  EXPECT_EQ(issue.stack_key_name, "sample.tencent.matrix.trace.TestTraceMainActivity.A()V");
  ASSERT_EQ(issue.tree.size(), 14u);
  const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, std::string>> want = {
      {0, 1048574, 2262, ""},
      {1, 117, 2254, "sample.tencent.matrix.trace.TestTraceMainActivity.testJankiess(Landroid.view.View;)V"},
      {2, 121, 2254, "sample.tencent.matrix.trace.TestTraceMainActivity.A()V"},
      {3, 124, 384, "sample.tencent.matrix.trace.TestTraceMainActivity.B()V"},
      {4, 125, 165, "sample.tencent.matrix.trace.TestTraceMainActivity.C()V"},
      {5, 126, 21, "sample.tencent.matrix.trace.TestTraceMainActivity.D()V"},
      {5, 127, 21, "sample.tencent.matrix.trace.TestTraceMainActivity.E()V"},
      {5, 128, 19, "sample.tencent.matrix.trace.TestTraceMainActivity.F()V"},
      {4, 129, 24, "sample.tencent.matrix.trace.TestTraceMainActivity.G()V"},
      {3, 130, 65, "sample.tencent.matrix.trace.TestTraceMainActivity.H()V"},
      {4, 131, 21, "sample.tencent.matrix.trace.TestTraceMainActivity.I()V"},
      {4, 132, 6, "sample.tencent.matrix.trace.TestTraceMainActivity.J()V"},
      {4, 133, 8, "sample.tencent.matrix.trace.TestTraceMainActivity.K()V"},
      {3, 134, 1004, "sample.tencent.matrix.trace.TestTraceMainActivity.L()V"}};
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& [depth, id, cost_ms, name] = want[i];
    EXPECT_EQ(issue.tree[i].node.depth, depth) << i;
    EXPECT_EQ(issue.tree[i].node.id, id) << i;
    EXPECT_EQ(issue.tree[i].node.count, 1u) << i;
    EXPECT_EQ(issue.tree[i].node.cost_ns, cost_ms * 1'000'000) << i;
    EXPECT_EQ(issue.tree[i].name, name) << i;
  }
  // Keys looptrace does not model stay as written (v<=2.0.8's "usage", the device block).
  auto other = nlohmann::json::parse(issue.other_json);
  EXPECT_EQ(other["usage"], "0.35%");
  EXPECT_EQ(other["mem"], 1567367168);

  const std::string text = Render(r.report, "text");
  EXPECT_NE(text.find("sample.tencent.matrix.trace.TestTraceMainActivity.A()V  [121|]  1 issue"), std::string::npos)
      << text;
  EXPECT_NE(text.find("stackKey 121| = sample.tencent.matrix.trace.TestTraceMainActivity.A()V"), std::string::npos);
  EXPECT_NE(text.find("1.004 s"), std::string::npos) << text;
  const std::string json = Render(r.report, "json");
  EXPECT_NE(json.find("\"usage\":\"0.35%\""), std::string::npos);
  EXPECT_NE(json.find("\"type\":\"matrix_group\""), std::string::npos);
  const std::string folded = Render(r.report, "folded");
  EXPECT_NE(folded.find(";sample.tencent.matrix.trace.TestTraceMainActivity.A()V;"
                        "sample.tencent.matrix.trace.TestTraceMainActivity.L()V 1004000"),
            std::string::npos)
      << folded;
}

TEST(MatrixInputTest, WriteUpStartupLogcatLineIsAStartup) {
  Read r = ReadAll({kDir + "seed_startup_logcat.txt"});
  ASSERT_EQ(r.report.issues, 1u);
  const MatrixIssue& issue = r.report.listed.at(0);
  EXPECT_EQ(issue.tag, "Trace_StartUp");
  EXPECT_EQ(issue.application_create_ms, 42);
  EXPECT_EQ(issue.first_activity_create_ms, 244);
  EXPECT_EQ(issue.startup_duration_ms, 2306);
  EXPECT_EQ(issue.warm, false);
  EXPECT_EQ(r.report.startup.cold.count, 1u);
  EXPECT_EQ(r.report.startup.cold.p50_ms, 2306);
}

TEST(MatrixInputTest, LogcatLinesOfEveryForm) {
  Read r = ReadAll({kDir + "logcat.txt"}, kDir + "seed_methodMapping.txt");
  EXPECT_EQ(r.inputs.at(0).kind, InputKind::kLogcat);
  // The startup [report] lines (2.1.0 appends ", createScene:N"), the listener's
  // Issue.toString() and FrameTracer's JSON; the "maybe happens Jankiness" line and other
  // components' lines are no issue.
  EXPECT_EQ(r.report.issues, 4u);
  EXPECT_EQ(r.report.by_category["startup"], 2u);
  EXPECT_EQ(r.report.startup.warm.count, 1u);
  EXPECT_EQ(r.report.startup.warm.max_ms, 812);
  EXPECT_EQ(r.report.by_category["slow_method"], 1u);
  EXPECT_EQ(r.report.by_category["fps"], 1u);
  EXPECT_TRUE(r.report.warnings.empty()) << r.report.warnings.front().name;
  ASSERT_EQ(r.report.fps_scenes.size(), 1u);
  EXPECT_EQ(r.report.fps_scenes[0].frames, 596u);
  EXPECT_NEAR(r.report.fps_scenes[0].mean_fps, 39.21, 1e-9);
}

TEST(MatrixInputTest, EveryKindOfTheTraceCanaryIsGrouped) {
  Read r = ReadAll({kDir + "fleet.jsonl"}, kDir + "fleet_methodMapping.txt");
  EXPECT_TRUE(r.report.warnings.empty()) << r.report.warnings.front().name << ": " << r.report.warnings.front().first;
  EXPECT_EQ(r.report.issues, 17u);
  EXPECT_EQ(r.report.by_category["slow_method"], 3u);
  EXPECT_EQ(r.report.by_category["anr"], 3u);
  EXPECT_EQ(r.report.by_category["lag"], 3u);
  EXPECT_EQ(r.report.by_category["startup_stack"], 1u);
  EXPECT_EQ(r.report.by_category["thread_priority"], 2u);
  EXPECT_EQ(r.report.by_category["fps"], 2u);
  EXPECT_EQ(r.report.by_category["startup"], 3u);

  const MatrixIssueGroup* load = nullptr;
  const MatrixIssueGroup* store = nullptr;
  for (const MatrixIssueGroup& g : r.report.groups) {
    if (g.category == "slow_method" && g.key == "2|") load = &g;
    if (g.category == "anr" && g.key == "thread:com.example.db.Store.query(Store.java:88)") store = &g;
  }
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->name, "com.example.Feed.load()V");
  EXPECT_EQ(load->issues, 2u);
  EXPECT_EQ(load->cost.count, 2u);
  EXPECT_EQ(load->cost.p50_ms, 900);
  EXPECT_EQ(load->cost.max_ms, 1500);
  EXPECT_EQ(load->app_versions, (MatrixTally{{"5.1.0", 2}}));
  EXPECT_EQ(load->devices, (MatrixTally{{"Pixel 7", 1}, {"Redmi 9A", 1}}));
  EXPECT_EQ(load->representative_source, kDir + "fleet.jsonl:2");
  // Merged: root, onResume, load, then query (600 + 1000 ms, 3 + 2 calls), decode, bind.
  ASSERT_EQ(load->merged.size(), 6u);
  EXPECT_EQ(load->merged[3].name, "com.example.db.Store.query(Ljava.lang.String;)Landroid.database.Cursor;");
  EXPECT_EQ(load->merged[3].node.cost_ns, 1600'000'000u);
  EXPECT_EQ(load->merged[3].node.count, 5u);
  ASSERT_NE(store, nullptr);  // SIGNAL_ANR and its native-backtrace variant: one signature
  EXPECT_EQ(store->issues, 2u);
  EXPECT_EQ(store->cost.count, 0u);  // neither has a cost

  EXPECT_EQ(r.report.startup.cold.count, 2u);
  EXPECT_EQ(r.report.startup.warm.count, 1u);
  EXPECT_EQ(r.report.startup.cold.max_ms, 4100);
  ASSERT_EQ(r.report.fps_scenes.size(), 1u);
  EXPECT_EQ(r.report.fps_scenes[0].worst_devices.front().first, "Redmi 9A");

  const std::string text = Render(r.report, "text");
  for (const char* want : {"slow methods (Trace_EvilMethod NORMAL) by stackKey", "ANRs (ANR, SIGNAL_ANR)",
                           "lags (LAG, LAG_IDLE_HANDLER, LAG_TOUCH)", "FPS by scene", "cold starts: 2",
                           "warm starts: 1", "at com.example.Feed.load(Feed.java:42)", "merged tree"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
}

// looptrace's own --matrix-compat output (the golden's JSON) read back gives its trees.
TEST(MatrixInputTest, MatrixCompatOutputRoundTrips) {
  const std::string golden = std::string(LOOPTRACE_SOURCE_DIR) + "/tests/golden/evil/matrix-compat/expected.json";
  Read r = ReadAll({golden}, std::string(LOOPTRACE_SOURCE_DIR) + "/tests/golden/evil/methodMapping.txt", 1000);
  std::ifstream in(golden);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "evil_method") records.push_back(j);
  }
  ASSERT_FALSE(records.empty());
  std::vector<const MatrixIssue*> evil;
  for (const MatrixIssue& issue : r.report.listed)
    if (issue.detail == "NORMAL") evil.push_back(&issue);
  ASSERT_EQ(evil.size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& tree = records[i]["tree"];
    ASSERT_EQ(evil[i]->tree.size(), tree.size()) << i;
    for (size_t k = 0; k < tree.size(); ++k) {
      EXPECT_EQ(evil[i]->tree[k].node.depth, tree[k]["depth"]);
      EXPECT_EQ(evil[i]->tree[k].node.id, tree[k]["id"]);
      EXPECT_EQ(evil[i]->tree[k].node.count, tree[k]["count"]);
      EXPECT_EQ(evil[i]->tree[k].node.cost_ns, tree[k]["cost_ns"]);
      EXPECT_EQ(evil[i]->tree[k].name, tree[k]["name"]);
    }
    EXPECT_EQ(evil[i]->stack_key, records[i]["stackKey"]);
    EXPECT_EQ(evil[i]->stack_key_name, records[i]["stack_key_name"]);
  }
  // Its other records (session, messages) are no issues: skipped, and said so.
  EXPECT_GT(WarningCount(r.report, "looptrace_records_skipped"), 0u);
  // And our own JSON output read back once more gives the same issues (re-ingest).
  TempFile again(Render(r.report, "json"), ".jsonl");
  Read r2 = ReadAll({again.path()}, std::string(LOOPTRACE_SOURCE_DIR) + "/tests/golden/evil/methodMapping.txt", 1000);
  ASSERT_EQ(r2.report.listed.size(), r.report.listed.size());
  for (size_t i = 0; i < r.report.listed.size(); ++i) {
    ASSERT_EQ(r2.report.listed[i].tree.size(), r.report.listed[i].tree.size());
    for (size_t k = 0; k < r.report.listed[i].tree.size(); ++k) {
      const CallNode& a = r2.report.listed[i].tree[k].node;
      const CallNode& b = r.report.listed[i].tree[k].node;
      EXPECT_EQ(std::tuple(a.depth, a.id, a.count, a.cost_ns), std::tuple(b.depth, b.id, b.count, b.cost_ns));
    }
  }
}

// An issue written the way TraceDataUtils writes it (matrix_compat.h reproduces it) is read
// back item for item: the reference's vector V1 (the sample scenario).
TEST(MatrixInputTest, TraceDataUtilsStackReadsBackItemForItem) {
  using matrix::EncodeRecord;
  const int d = matrix::kMethodIdDispatch;
  std::vector<int64_t> buffer;
  auto in = [&](int id, int64_t t) { buffer.push_back(EncodeRecord(true, id, t)); };
  auto out = [&](int id, int64_t t) { buffer.push_back(EncodeRecord(false, id, t)); };
  in(d, 1000), in(1, 1000), in(2, 1000), in(3, 1000), in(4, 1000), out(4, 1020), in(5, 1020), out(5, 1040);
  in(6, 1040), out(6, 1060), out(3, 1160), in(7, 1160), out(7, 1180), out(2, 1380), in(8, 1380), in(9, 1400);
  out(9, 1420), in(10, 1420), out(10, 1426), in(11, 1426), out(11, 1436), out(8, 1436), in(12, 1436);
  out(12, 11436), out(1, 12236), out(d, 12236);
  std::vector<matrix::MethodItem> stack = matrix::StructuredDataToStack(buffer, true, 12236);
  matrix::TrimStack(stack, matrix::kTargetEvilMethodStack);
  int64_t max_ms = 0;
  const std::string stack_text = matrix::StackToString(stack, &max_ms);
  nlohmann::json issue{{"tag", "Trace_EvilMethod"},
                       {"detail", "NORMAL"},
                       {"cost", max_ms},
                       {"stack", stack_text},
                       {"stackKey", matrix::GetTreeKey(stack, max_ms)}};
  TempFile file(issue.dump() + "\n");
  Read r = ReadAll({file.path()});
  ASSERT_EQ(r.report.listed.size(), 1u);
  const MatrixIssue& read = r.report.listed[0];
  ASSERT_EQ(read.tree.size(), stack.size());
  for (size_t i = 0; i < stack.size(); ++i) {
    EXPECT_EQ(read.tree[i].node.depth, static_cast<uint32_t>(stack[i].depth));
    EXPECT_EQ(read.tree[i].node.id, static_cast<uint64_t>(stack[i].method_id));
    EXPECT_EQ(read.tree[i].node.count, static_cast<uint32_t>(stack[i].count));
    EXPECT_EQ(read.tree[i].node.cost_ns, static_cast<uint64_t>(stack[i].duration_ms) * 1'000'000);
  }
  EXPECT_EQ(read.stack_key, "12|");
  EXPECT_EQ(MatrixStackString(read.tree), stack_text);
}

TEST(MatrixInputTest, HostileIssuesAreCountedAndTheRestRead) {
  std::string text;
  text +=
      R"({"tag":"Trace_EvilMethod","detail":"NORMAL","cost":900,"stack":"0,1048574,1,900\n3,1,1,800\n","stackKey":"1|"})"
      "\n";
  text +=
      R"({"tag":"Trace_EvilMethod","detail":"NORMAL","cost":901,"stack":"0,1048574,1,901\n1,,1,800\n1,2,1,x\n1,3,1,700\n","stackKey":"3|"})"
      "\n";
  text += R"({"tag":"Trace_EvilMethod","detail":"NORMAL","cost":)"
          "\n";  // cut short: not JSON
  text += "{\"tag\":\"Trace_EvilMethod\",\"detail\":\"NORMAL\",\"cost\":902,\"scene\":\"bad\xff\xfe utf8\"}\n";
  text += R"({"tag":"SQLiteLint","sql":"select 1"})"
          "\n";
  text += R"({"tag":"Trace_EvilMethod","detail":"NORMAL","cost":"not a number"})"
          "\n";
  text += R"([1, 2, "three"])"
          "\n";
  text += R"({"tag":"Trace_FPS","scene":"A","fps":50,"dropLevel":{"DROPPED_BEST":"12"}})"
          "\n";
  text += R"({"tag":"Trace_FPS","scene":"A","fps":50,"dropLevel":{"DROPPED_BEST":"12"}})"
          "\n";  // again
  text += "{\"tag\":\"Trace_EvilMethod\",\"stack\":\"" + std::string(kMaxMatrixIssueBytes + 10, '0') + "\"}\n";
  text += R"({"tag":"Trace_StartUp","startup_duration":100})"
          "\n";
  TempFile file(text);
  Read r = ReadAll({file.path()});
  EXPECT_EQ(WarningCount(r.report, "matrix_stack_bad_depth"), 1u);  // 3 after 0
  EXPECT_EQ(WarningCount(r.report, "matrix_stack_bad_line"), 2u);   // a missing id, a cost "x"
  EXPECT_EQ(WarningCount(r.report, "matrix_invalid_utf8"), 1u);
  EXPECT_EQ(WarningCount(r.report, "matrix_other_plugin"), 1u);
  EXPECT_EQ(WarningCount(r.report, "matrix_field_bad_type"), 1u);
  EXPECT_EQ(WarningCount(r.report, "matrix_issue_too_large"), 1u);
  // The cut-short issue: the next line's `{"` begins the next issue, which is read.
  EXPECT_EQ(WarningCount(r.report, "matrix_not_json"), 1u);
  EXPECT_EQ(r.report.duplicates, 1u);
  const MatrixIssue& first = r.report.listed.at(0);
  ASSERT_EQ(first.tree.size(), 2u);
  EXPECT_EQ(first.tree[1].node.depth, 1u);  // placed one deeper than the root
  const MatrixIssue& second = r.report.listed.at(1);
  ASSERT_EQ(second.tree.size(), 2u);
  EXPECT_EQ(second.tree[1].node.id, 3u);
  // The last issue after all of it is still read.
  EXPECT_EQ(r.report.listed.back().tag, "Trace_StartUp");
  EXPECT_EQ(r.report.startup.cold.count, 1u);
  // Every warning is in the data quality, by name, with where it was first.
  const std::string report_text = Render(r.report, "text");
  EXPECT_NE(report_text.find("matrix_stack_bad_depth"), std::string::npos);
  EXPECT_NE(report_text.find(file.path() + ":1:"), std::string::npos) << report_text;
}

TEST(MatrixInputTest, ArraysPrettyPrintingAndGzipAreOneStream) {
  Read lines = ReadAll({kDir + "fleet.jsonl"});
  std::ifstream in(kDir + "fleet.jsonl");
  nlohmann::json array = nlohmann::json::array();
  for (std::string line; std::getline(in, line);) array.push_back(nlohmann::json::parse(line));
  TempFile pretty(array.dump(2));
  Read from_array = ReadAll({pretty.path()});
  EXPECT_EQ(from_array.report.issues, lines.report.issues);
  EXPECT_TRUE(from_array.report.warnings.empty());
  // The same issues twice (a file sent again, or its array copy): each counted once.
  Read both = ReadAll({kDir + "fleet.jsonl", pretty.path()});
  EXPECT_EQ(both.report.issues, lines.report.issues);
  EXPECT_EQ(both.report.duplicates, lines.report.issues);

  const std::string gz_path =
      std::filesystem::temp_directory_path() / ("lt_matrix_gz_" + std::to_string(getpid()) + ".gz");
  gzFile gz = gzopen(gz_path.c_str(), "wb");
  const std::string text = array.dump();
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  Read from_gz = ReadAll({gz_path});
  std::filesystem::remove(gz_path);
  EXPECT_EQ(from_gz.report.issues, lines.report.issues);
}

TEST(MatrixInputTest, KindIsToldByContent) {
  EXPECT_EQ(DetectInputKind(R"({"type":"recording","format":"looptrace-events","version":3})"), InputKind::kRecording);
  EXPECT_EQ(DetectInputKind(R"({"tag":"Trace_FPS"})"), InputKind::kMatrixJson);
  EXPECT_EQ(DetectInputKind("\xEF\xBB\xBF  [{"), InputKind::kMatrixJson);
  EXPECT_EQ(DetectInputKind("05-09 09:16:52.345  4242  4287 I Matrix.StartupTracer: x"), InputKind::kLogcat);
  EXPECT_EQ(DetectInputKind("   "), InputKind::kEmpty);
}

uint64_t PeakRssKb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stoull(line.substr(6));
  return 0;
}

// 100 MB of issues on one line (a JSON array nobody split): read in bounded memory, every
// issue grouped, only --keep-issues listed.
// Keys looptrace does not model are kept as written, as one JSON object: byte for byte what
// the reference parser (nlohmann::json) makes of them, sorted keys, the last of a repeated
// key, nested values, numbers of every kind, escapes.
TEST(MatrixInputTest, UnknownKeysAreKeptAsTheReferenceParserWritesThem) {
  const std::string issue =
      R"({"tag":"Trace_EvilMethod","zeta":1,"alpha":{"b":[1,2.5,"x\ny\"\\\u0001é"],"a":null,"a":false},)"
      R"("big":18446744073709551615,"neg":-7,"tiny":1e-300,"whole":3.0,"zeta":2,"cost":"12","stack":"0,1,1,12\n"})";
  TempFile file(issue + "\n");
  Read r = ReadAll({file.path()});
  ASSERT_EQ(r.report.listed.size(), 1u);
  nlohmann::json expected = nlohmann::json::parse(issue);
  for (const char* modelled : {"tag", "cost", "stack"}) expected.erase(modelled);
  EXPECT_EQ(r.report.listed[0].other_json, expected.dump());
  EXPECT_EQ(r.report.listed[0].cost_ms, 12);  // a stringified number
}

TEST(MatrixInputTest, HundredMegabytesInBoundedMemory) {
  const std::string path = std::filesystem::temp_directory_path() / ("lt_matrix_big_" + std::to_string(getpid()));
  uint64_t issues = 0;
  {
    std::ofstream out(path, std::ios::binary);
    out << '[';
    uint64_t bytes = 0;
    while (bytes < 100 * (uint64_t{1} << 20)) {
      // With a 2 KB key of the app's own (kept as written): fewer, larger issues, as phones send.
      std::string issue = fmt::format(
          R"({{"tag":"Trace_EvilMethod","detail":"NORMAL","cost":{},"scene":"S{}","stack":"0,1048574,1,{}\n1,{},1,{}\n2,7,2,300\n","stackKey":"{}|","process":"p","time":{},"breadcrumbs":"{}"}},)",
          700 + issues % 900, issues % 7, 700 + issues % 900, issues % 13, 650 + issues % 900, issues % 13,
          1700000000000 + issues, std::string(2048, 'b'));
      bytes += issue.size();
      out << issue;
      ++issues;
    }
    out << R"({"tag":"Trace_StartUp","startup_duration":100}])";
    ++issues;
  }
  const uint64_t peak_before = PeakRssKb();
  Read r = ReadAll({path}, "", 50);
  std::filesystem::remove(path);
  EXPECT_LT(PeakRssKb(), peak_before + 64 * 1024) << "the peak grew by more than 64 MiB reading 100 MB";
  EXPECT_EQ(r.report.issues, issues);
  EXPECT_EQ(r.report.listed.size(), 50u);
  EXPECT_EQ(r.report.not_listed, issues - 50);
  EXPECT_EQ(r.report.groups.size(), 13u);
  EXPECT_TRUE(r.report.warnings.empty()) << r.report.warnings.front().name;
}

}  // namespace
}  // namespace looptrace::loader
