// Golden tests: tests/golden/<tracer>/<case>/input.events.jsonl is replayed through the
// analyzer and both renderers; the outputs must equal expected.txt / expected.json.
// UPDATE_GOLDENS=1 rewrites the expected files (review the diff before committing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "looptrace/loader/recording.h"
#include "looptrace/tracers/analyzer.h"
#include "looptrace/tracers/render.h"

namespace looptrace {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> GoldenCases() {
  std::vector<fs::path> cases;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(LOOPTRACE_SOURCE_DIR) / "tests/golden"))
    if (entry.path().filename() == "input.events.jsonl") cases.push_back(entry.path().parent_path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

// args file: "top=N" lines.
AnalysisOptions ReadArgs(const fs::path& dir, RenderOptions* render) {
  AnalysisOptions options;
  std::ifstream in(dir / "args");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("top=")) {
      options.looper.top_n = std::stoul(line.substr(4));
      render->top_n = options.looper.top_n;
    }
  }
  return options;
}

TEST(Golden, ReportsMatchExpectedFiles) {
  auto cases = GoldenCases();
  ASSERT_FALSE(cases.empty());
  const bool update = std::getenv("UPDATE_GOLDENS") != nullptr;
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.string());
    RenderOptions render;
    Analyzer analyzer(ReadArgs(dir, &render));
    Stats replay_stats;
    auto ok = loader::ReplayRecording((dir / "input.events.jsonl").string(), analyzer, &replay_stats);
    ASSERT_TRUE(ok) << ok.error().message;
    if (replay_stats.AnyNonZero()) analyzer.OnEvent(LossCounters{replay_stats});
    Report report = analyzer.TakeReport();
    for (auto [format, file] : {std::pair{OutputFormat::kText, "expected.txt"},
                                std::pair{OutputFormat::kJson, "expected.json"}}) {
      std::ostringstream out;
      MakeRenderer(format, render)->Render(report, out);
      if (update) {
        std::ofstream(dir / file) << out.str();
        continue;
      }
      EXPECT_EQ(out.str(), ReadFile(dir / file)) << "golden " << (dir / file)
                                                 << " differs; rerun with UPDATE_GOLDENS=1 to review";
    }
  }
}

}  // namespace
}  // namespace looptrace
