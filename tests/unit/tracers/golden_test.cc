// Golden tests: each case directory tests/golden/<kind>/<case>/ is one test,
// Golden/GoldenCase.RendersTheExpectedFiles/<kind>_<case>. Its recording (input.events.jsonl)
// is replayed with the options of its args file and rendered in every format with a file:
//   expected.txt          -f text --full, line by line
//   expected.short.txt    -f text (the default short view), line by line, where the case has one
//   expected.json         -f json, record by record, compared by value
//   expected.chrome.json  -f chrome, by value
//   expected.html.json    -f html: the page's meta block, by value, but for its counter
//                         table, the same on every page (tests/golden/html/counters.json);
//                         its data block must equal expected.json by value in every case
//                         (the page's bytes, script and style are not compared)
//   expected.folded       -f folded, line by line; a case without one renders no stack
// UPDATE_GOLDENS=1 rewrites every expected file (review the diff before committing).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "golden_case.h"
#include "golden_compare.h"
#include "looptrace/report/html_renderer.h"
#include "looptrace/report/render.h"

namespace looptrace {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CompareJson;
using testing::CompareJsonLines;
using testing::CompareText;

const fs::path& GoldenRoot() {
  static const fs::path root = fs::path(LOOPTRACE_SOURCE_DIR) / "tests/golden";
  return root;
}

std::vector<fs::path> GoldenCases() {
  std::vector<fs::path> cases;
  for (const auto& entry : fs::recursive_directory_iterator(GoldenRoot()))
    if (entry.path().filename() == "input.events.jsonl") cases.push_back(entry.path().parent_path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

// A case's test name: its directory under tests/golden with '_' for anything a test name
// cannot hold ("evil/id-hooks" -> "evil_id_hooks").
std::string CaseName(const fs::path& dir) {
  std::string name = fs::relative(dir, GoldenRoot()).string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Render(const Report& report, const std::string& format, const RenderOptions& render) {
  std::ostringstream out;
  MakeRenderer(format, render)->Render(report, out);
  return out.str();
}

// The text between <script ... id="ID"> and its </script> (nothing if the page has none).
std::optional<std::string> ScriptBlock(const std::string& html, std::string_view id) {
  const std::string open = "id=\"" + std::string(id) + "\">";
  const size_t begin = html.find(open);
  if (begin == std::string::npos) return std::nullopt;
  const size_t end = html.find("</script>", begin + open.size());
  if (end == std::string::npos) return std::nullopt;
  return html.substr(begin + open.size(), end - begin - open.size());
}

class GoldenCase : public ::testing::TestWithParam<fs::path> {
 protected:
  void SetUp() override {
    update_ = std::getenv("UPDATE_GOLDENS") != nullptr;
    report_ = testing::ReplayGoldenCase(GetParam(), &render_);
  }

  fs::path File(const char* name) const { return GetParam() / name; }

  // Writes `got` to the expected file `path` under UPDATE_GOLDENS=1; otherwise fails with
  // what `compare` says differs.
  template <typename Compare>
  void Expect(const fs::path& path, const std::string& got, Compare compare) {
    if (update_) {
      std::ofstream(path) << got;
      return;
    }
    ASSERT_TRUE(fs::exists(path)) << path << " is missing: run with UPDATE_GOLDENS=1 to write it";
    if (auto diff = compare(got, ReadFile(path)))
      ADD_FAILURE() << "golden " << path.string() << ": " << *diff
                    << "\nrerun with UPDATE_GOLDENS=1 and review the diff";
  }

  bool update_ = false;
  RenderOptions render_;
  Report report_;
};

TEST_P(GoldenCase, RendersTheExpectedFiles) {
  Expect(File("expected.txt"), Render(report_, "text", render_), CompareText);
  if (fs::exists(File("expected.short.txt"))) {
    RenderOptions short_view = render_;
    short_view.full = false;
    Expect(File("expected.short.txt"), Render(report_, "text", short_view), CompareText);
  }
  const std::string json_report = Render(report_, "json", render_);
  Expect(File("expected.json"), json_report, CompareJsonLines);
  Expect(File("expected.chrome.json"), Render(report_, "chrome", render_), CompareJson);

  // HTML: the data the page embeds, not its bytes. The data block is the JSON report (the
  // page thins only the timeline of sessions far longer than a golden case).
  const std::string html = Render(report_, "html", render_);
  const auto data = ScriptBlock(html, kHtmlDataId);
  const auto meta = ScriptBlock(html, kHtmlMetaId);
  ASSERT_TRUE(data && meta) << "the page has no data or meta block";
  if (!update_) {
    if (auto diff = CompareJsonLines(*data, ReadFile(File("expected.json"))))
      ADD_FAILURE() << "the page's data block against " << File("expected.json").string() << ": " << *diff;
  }
  std::string error;
  auto meta_json = testing::ParseJson(*meta, &error);
  ASSERT_TRUE(meta_json && meta_json->is_object()) << "the page's meta block is not a JSON object: " << error;
  // The counter table (names, severities, descriptions) is the same on every page: one file
  // for all cases, html/counters.json.
  const json counters = meta_json->value("counters", json());
  meta_json->erase("counters");
  Expect(File("expected.html.json"), testing::ReadableJson(*meta_json) + "\n", CompareJson);
  Expect(GoldenRoot() / "html/counters.json", testing::ReadableJson(counters) + "\n", CompareJson);

  // Folded stacks exist only where the case has stack samples, or asks for the
  // instrumented trees (folded-source=instrumented).
  const std::string folded = Render(report_, "folded", render_);
  if (update_ && folded.empty()) {
    fs::remove(File("expected.folded"));
  } else if (!update_ && !fs::exists(File("expected.folded"))) {
    EXPECT_EQ(folded, "") << "folded stacks, but no " << File("expected.folded").string()
                          << ": run with UPDATE_GOLDENS=1 to write it";
  } else {
    Expect(File("expected.folded"), folded, CompareText);
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenCase, ::testing::ValuesIn(GoldenCases()),
                         [](const ::testing::TestParamInfo<fs::path>& info) { return CaseName(info.param); });

// (Two directories with one test name stop the binary before any test runs: gtest checks.)
TEST(GoldenCases, AreFound) { EXPECT_GE(GoldenCases().size(), 15u); }

}  // namespace
}  // namespace looptrace
