// A golden case directory (tests/golden/<tracer>/<case>/): its recording replayed through
// the pipeline with the options of its args file.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "loader/decode/mapping_namer.h"
#include "loader/session/recording.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/pipeline.h"

namespace looptrace::testing {

// args file, one OPTION=VALUE a line: any analysis option by its command-line name (top,
// max-nodes, evil-threshold, anr-threshold, ...), plus method_mapping (a path relative to
// the case directory).
inline Report ReplayGoldenCase(const std::filesystem::path& dir, RenderOptions* render) {
  AnalysisOptions options;
  std::unique_ptr<loader::MappingNamer> namer;
  OptionSet declarations = options.Declarations();
  std::ifstream in(dir / "args");
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "method_mapping") {
      auto loaded = loader::MappingNamer::Load((dir / value).string());
      EXPECT_TRUE(loaded) << loaded.error().message;
      if (loaded) {
        namer = std::move(*loaded);
        options.namer = namer.get();
      }
      continue;
    }
    auto ok = declarations.Set(key, value);
    EXPECT_TRUE(ok) << dir << "/args: " << ok.error().message;
  }
  *render = options.Rendering();
  render->full = true;  // the goldens pin the whole report; expected.short.txt the default view
  Pipeline pipeline(options);
  Stats replay_stats;
  auto ok = loader::ReplayRecording((dir / "input.events.jsonl").string(), pipeline, &replay_stats);
  EXPECT_TRUE(ok) << ok.error().message;
  if (replay_stats.AnyNonZero()) pipeline.OnEvent(LossCounters{replay_stats});
  return pipeline.TakeReport();
}

}  // namespace looptrace::testing
