// Pipeline::Snapshot: the report so far, without ending the session. Over every golden
// recording: snapshots taken along the way change nothing, a snapshot after the end equals
// the final report, and one taken mid-way reports what ran so far with open spans unfinished.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "event_script.h"
#include "loader/decode/mapping_namer.h"
#include "loader/session/recording.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/tracers/registry.h"

namespace looptrace {
namespace {

namespace fs = std::filesystem;

class Collector : public EventSink {
 public:
  void OnEvent(const Event& event) override { events.push_back(event); }
  std::vector<Event> events;
};

struct Case {
  AnalysisOptions options;
  std::unique_ptr<loader::MappingNamer> namer;
  std::vector<Event> events;
};

void Load(const fs::path& dir, Case* c) {
  OptionSet declarations = c->options.Declarations();
  std::ifstream in(dir / "args");
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "method_mapping") {
      auto loaded = loader::MappingNamer::Load((dir / value).string());
      ASSERT_TRUE(loaded);
      c->namer = std::move(*loaded);
      c->options.namer = c->namer.get();
      continue;
    }
    ASSERT_TRUE(declarations.Set(key, value));
  }
  Collector collector;
  Stats stats;
  ASSERT_TRUE(loader::ReplayRecording((dir / "input.events.jsonl").string(), collector, &stats));
  c->events = std::move(collector.events);
}

std::string Json(const Report& r) {
  std::ostringstream out;
  MakeRenderer("json")->Render(r, out);
  return out.str();
}

std::vector<fs::path> GoldenCases() {
  std::vector<fs::path> cases;
  for (const auto& kind : fs::directory_iterator(fs::path(LOOPTRACE_SOURCE_DIR) / "tests/golden"))
    if (kind.is_directory())
      for (const auto& c : fs::directory_iterator(kind.path()))
        if (fs::exists(c.path() / "input.events.jsonl")) cases.push_back(c.path());
  std::sort(cases.begin(), cases.end());
  return cases;
}

TEST(PipelineSnapshot, ChangesNothingAndEqualsTheFinalReportAtTheEnd) {
  auto cases = GoldenCases();
  ASSERT_GE(cases.size(), 10u);
  for (const auto& dir : cases) {
    SCOPED_TRACE(dir.string());
    Case c;
    Load(dir, &c);
    Pipeline plain(c.options), snapped(c.options);
    for (const Event& e : c.events) plain.OnEvent(e);
    size_t i = 0;
    for (const Event& e : c.events) {
      snapped.OnEvent(e);
      if (++i % 7 == 0) {
        Report so_far = snapped.Snapshot(testing::TimeOf(e));
        if (!std::holds_alternative<SessionEnd>(e)) {
          EXPECT_FALSE(so_far.session.end_reason.empty());
        }
      }
    }
    const Report at_end = snapped.Snapshot(0);
    const std::string final_json = Json(snapped.TakeReport());
    EXPECT_EQ(final_json, Json(plain.TakeReport()));
    EXPECT_EQ(Json(at_end), final_json);
  }
}

TEST(PipelineSnapshot, ReportsOpenSpansAsRunningAndAddsLosses) {
  AnalysisOptions options;
  Pipeline p(options);
  SessionStart start;
  start.ts_ns = 1000;
  start.pid = 7;
  p.OnEvent(start);
  p.OnEvent(testing::Probe(Role::kDispatchBegin, 2000, {testing::U("id", 1)}, 7));
  p.OnEvent(testing::Probe(Role::kDispatchEnd, 3000, {testing::U("id", 1)}, 7));
  p.OnEvent(testing::Probe(Role::kDispatchBegin, 4000, {testing::U("id", 2)}, 7));
  Stats losses;
  losses.Add(StatId::records_full, 5);
  Report so_far = p.Snapshot(9000, losses);
  EXPECT_EQ(so_far.session.end_reason, "running");
  EXPECT_EQ(so_far.session.end_ns, 9000u);
  ASSERT_EQ(so_far.messages.messages.size(), 1u);
  ASSERT_EQ(so_far.messages.unfinished.size(), 1u);
  EXPECT_EQ(so_far.messages.unfinished[0].cost_ns(), 5000u);
  EXPECT_EQ(so_far.stats.Get(StatId::records_full), 5u);
  EXPECT_EQ(so_far.stats.Get(StatId::unfinished_messages), 1u);

  // The session goes on: the message ends, nothing of the snapshot stuck.
  p.OnEvent(testing::Probe(Role::kDispatchEnd, 10000, {testing::U("id", 2)}, 7));
  p.OnEvent(SessionEnd{11000, "duration", std::nullopt});
  Report r = p.TakeReport();
  EXPECT_EQ(r.messages.messages.size(), 2u);
  EXPECT_TRUE(r.messages.unfinished.empty());
  EXPECT_EQ(r.stats.Get(StatId::records_full), 0u);
  EXPECT_EQ(r.stats.Get(StatId::unfinished_messages), 0u);
  EXPECT_EQ(r.session.end_reason, "duration");
}

}  // namespace
}  // namespace looptrace

namespace looptrace {
namespace {

// Interim reports leave out a tracer that cannot be copied: every registered one can.
TEST(PipelineSnapshot, EveryRegisteredTracerIsCloned) {
  AnalysisOptions options;
  Stats stats;
  SpanTracker spans(&stats);
  TracerContext context;
  context.stats = &stats;
  context.spans = &spans;
  context.common = &options.common;
  for (const TracerEntry& entry : TracerRegistry()) {
    auto tracer = entry.make(options.Of(entry.name), context);
    EXPECT_NE(tracer->Clone(context), nullptr) << entry.name;
  }
}

}  // namespace
}  // namespace looptrace
