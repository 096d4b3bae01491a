// Messages named by the callable a runtime found in their stacks (StackSample::callable):
// the profile's phase, then the outermost function of the program's own that ran
// ("timers: renderReport app.js:9"), in every report part that names messages; a nested
// message takes its own samples, so the one around it is named by the rest only.
#include <gtest/gtest.h>

#include "event_script.h"
#include "looptrace/tracers/event_json.h"
#include "looptrace/tracers/pipeline.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kMain = 100;
constexpr uint64_t kMs = 1'000'000;

StackSample Sample(uint64_t ts, std::string callable) {
  StackSample s;
  s.ts_ns = ts;
  s.tid = kMain;
  s.frames = {"compute", callable.empty() ? "processTimers" : callable, "uv_run", "main"};
  s.callable = std::move(callable);
  return s;
}

SessionStart Start() {
  SessionStart s;
  s.pid = kMain;
  s.sample_hz = 1000;
  return s;
}

std::map<std::string, uint64_t> CountsByName(const Report& r) {
  std::map<std::string, uint64_t> counts;
  for (const NamedMessages& n : r.messages.by_name) counts[n.name] = n.cost.count;
  return counts;
}

TEST(MessageCallable, AMessageIsNamedByItsPhaseAndTheCallableMostOfItsSamplesRan) {
  AnalysisOptions options;
  Pipeline pipeline(options);
  pipeline.OnEvent(Start());
  pipeline.OnEvent(Sample(12 * kMs, "renderReport app.js:9"));  // before its begin arrives
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 10 * kMs, {U("id", 1), S("name", "timers")}, kMain));
  pipeline.OnEvent(Sample(14 * kMs, "formatRow app.js:30"));
  pipeline.OnEvent(Sample(16 * kMs, "renderReport app.js:9"));
  pipeline.OnEvent(Sample(17 * kMs, ""));  // Node's own code only
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 20 * kMs, {U("id", 1)}, kMain));
  // A request's read callback: "io" of "io: stream".
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 30 * kMs, {U("id", 2), S("name", "io: stream")}, kMain));
  pipeline.OnEvent(Sample(31 * kMs, "onRequest server.js:12"));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 35 * kMs, {U("id", 2)}, kMain));
  // No sample: the phase alone.
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 40 * kMs, {U("id", 3), S("name", "timers")}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 41 * kMs, {U("id", 3)}, kMain));
  // A sample between messages names none; a message the profile leaves unnamed stays so.
  pipeline.OnEvent(Sample(45 * kMs, "idle app.js:1"));
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 50 * kMs, {U("id", 4)}, kMain));
  pipeline.OnEvent(Sample(51 * kMs, "tick app.js:50"));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 52 * kMs, {U("id", 4)}, kMain));
  Report r = pipeline.TakeReport();
  ASSERT_EQ(r.messages.messages.size(), 4u);
  EXPECT_EQ(r.messages.messages[0].name, "timers: renderReport app.js:9");
  EXPECT_EQ(r.messages.messages[1].name, "io: onRequest server.js:12");
  EXPECT_EQ(r.messages.messages[2].name, "timers");
  EXPECT_EQ(r.messages.messages[3].name, "");
  auto counts = CountsByName(r);
  EXPECT_EQ(counts["timers: renderReport app.js:9"], 1u);
  EXPECT_EQ(counts["io: onRequest server.js:12"], 1u);
  EXPECT_EQ(counts["timers"], 1u);
  EXPECT_EQ(counts.size(), 3u);
}

TEST(MessageCallable, ANestedMessageTakesItsSamplesAndTheOneAroundItKeepsTheRest) {
  AnalysisOptions options;
  Pipeline pipeline(options);
  pipeline.OnEvent(Start());
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 10 * kMs, {U("id", 1), S("name", "iteration")}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 11 * kMs, {U("id", 2), S("name", "timers")}, kMain));
  pipeline.OnEvent(Sample(12 * kMs, "renderReport app.js:9"));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 13 * kMs, {U("id", 2)}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 14 * kMs, {U("id", 3), S("name", "check")}, kMain));
  pipeline.OnEvent(Sample(15 * kMs, "flush app.js:40"));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 16 * kMs, {U("id", 3)}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 17 * kMs, {U("id", 1)}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 20 * kMs, {U("id", 4), S("name", "iteration")}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 21 * kMs, {U("id", 5), S("name", "timers")}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 22 * kMs, {U("id", 5)}, kMain));
  pipeline.OnEvent(Sample(23 * kMs, "tick app.js:50"));  // outside the nested one
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 24 * kMs, {U("id", 4)}, kMain));
  Report r = pipeline.TakeReport();
  auto counts = CountsByName(r);
  EXPECT_EQ(counts["timers: renderReport app.js:9"], 1u);
  EXPECT_EQ(counts["check: flush app.js:40"], 1u);
  EXPECT_EQ(counts["iteration"], 1u);
  EXPECT_EQ(counts["timers"], 1u);
  EXPECT_EQ(counts["iteration: tick app.js:50"], 1u);
}

TEST(MessageCallable, ARecordingKeepsTheCallableOfItsSamples) {
  StackSample sample = Sample(12 * kMs, "renderReport app.js:9");
  auto read = EventFromJsonLine(EventToJsonLine(sample));
  ASSERT_TRUE(read.has_value() && read->has_value());
  EXPECT_EQ(std::get<StackSample>(**read).callable, "renderReport app.js:9");
  // Samples of runtimes that name no callable are written as before.
  EXPECT_EQ(EventToJsonLine(Sample(12 * kMs, "")).find("callable"), std::string::npos);
}

}  // namespace
}  // namespace looptrace
