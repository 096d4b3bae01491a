// Golden tests: tests/golden/<tracer>/<case>/input.events.jsonl is replayed through the
// analyzer and both renderers; the outputs must equal expected.txt / expected.json.
// UPDATE_GOLDENS=1 rewrites the expected files (review the diff before committing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "golden_case.h"
#include "loader/decode/mapping_namer.h"
#include "loader/session/recording.h"
#include "looptrace/report/render.h"

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

TEST(Golden, ReportsMatchExpectedFiles) {
  auto cases = GoldenCases();
  ASSERT_FALSE(cases.empty());
  const bool update = std::getenv("UPDATE_GOLDENS") != nullptr;
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.string());
    RenderOptions render;
    Report report = testing::ReplayGoldenCase(dir, &render);
    // Every case renders as text and JSON; a case may add other formats by their files.
    for (auto [format, file] : {std::pair{"text", "expected.txt"}, std::pair{"json", "expected.json"},
                                std::pair{"chrome", "expected.chrome.json"}}) {
      if (std::string(format) == "chrome" && !fs::exists(dir / file) && !update) continue;
      std::ostringstream out;
      MakeRenderer(format, render)->Render(report, out);
      if (update) {
        std::ofstream(dir / file) << out.str();
        continue;
      }
      const std::string expected = ReadFile(dir / file);
      if (out.str() == expected) continue;
      // Name the first differing line instead of dumping both files.
      std::istringstream got_lines(out.str()), want_lines(expected);
      std::string got, want;
      int line = 0;
      while (true) {
        ++line;
        bool more_got = static_cast<bool>(std::getline(got_lines, got));
        bool more_want = static_cast<bool>(std::getline(want_lines, want));
        if (!more_got && !more_want) break;
        if (got != want || more_got != more_want) break;
      }
      ADD_FAILURE() << "golden " << (dir / file) << " differs at line " << line << "\n  got:  " << got.substr(0, 400)
                    << "\n  want: " << want.substr(0, 400) << "\nrerun with UPDATE_GOLDENS=1 and review the diff";
    }
  }
}

}  // namespace
}  // namespace looptrace
