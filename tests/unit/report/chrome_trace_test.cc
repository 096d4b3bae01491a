#include "looptrace/report/chrome_trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "looptrace/tracers/frames.h"
#include "tests/unit/tracers/event_script.h"

namespace looptrace {
namespace {

using nlohmann::json;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kUs = 1'000;
constexpr uint32_t kPid = 4242;
constexpr uint64_t kBegin = 5'000'000'000;  // session begin
constexpr uint64_t kInterval = 16'666'666;

using testing::U;

ProbeEvent Probe(Role role, uint64_t ts, std::vector<EventArg> args, uint32_t tid = kPid) {
  return testing::Probe(role, ts, std::move(args), tid, kPid);
}

struct Fixture {
  SessionInfo session;
  MessagesReport messages;
  FramesReport frames;
};

Report AsReport(const Fixture& f) {
  Report r;
  r.session = f.session;
  r.messages = f.messages;
  r.frames = f.frames;
  return r;
}

// 30 frames at 60 Hz in doFrame messages with five phases each; frame 10 takes 40 ms;
// a background message with a nested one; an unfinished message at the end; frames on a
// second looper thread with no messages.
Fixture Build() {
  Fixture f;
  f.session.pid = kPid;
  f.session.command = "sample \"app\"";
  f.session.begin_ns = kBegin;
  f.session.end_ns = kBegin + 2'000 * kMs;
  testing::EventScript script;
  uint64_t msg_id = 0;
  // A message as dispatch events; the thread ran half of it.
  auto message = [&](uint32_t tid, uint64_t begin, uint64_t end, std::string name) {
    const uint64_t id = ++msg_id;
    std::vector<EventArg> args = {U("id", id)};
    if (!name.empty()) args.push_back(testing::S("name", name));
    ProbeEvent b = Probe(Role::kDispatchBegin, begin, std::move(args), tid);
    b.thread_cpu_ns = 1'000'000'000;
    ProbeEvent e = Probe(Role::kDispatchEnd, end, {U("id", id)}, tid);
    e.thread_cpu_ns = 1'000'000'000 + (end - begin) / 2;
    script.Add(b);
    script.Add(e);
  };
  // A first message 1.234567 ms into the session.
  message(kPid, kBegin + 1'234'567, kBegin + 2 * kMs, "");
  uint64_t vsync = kBegin + 10 * kMs;
  for (uint64_t id = 1; id <= 30; ++id) {
    const uint64_t begin = vsync + 100 * kUs;
    const uint64_t end = begin + (id == 10 ? 40 * kMs : 3 * kMs);
    script.Add(Probe(Role::kVsync, vsync + 50 * kUs, {U("vsync_ns", vsync)}));
    script.Add(Probe(Role::kFrameBegin, begin, {U("frame_id", id), U("vsync_ns", vsync)}));
    const uint64_t step = (end - begin) / 5;
    for (uint32_t p = 0; p < 5; ++p) {
      script.Add(Probe(Role::kPhaseBegin, begin + p * step, {U("phase", p)}));
      script.Add(Probe(Role::kPhaseEnd, p == 4 ? end : begin + (p + 1) * step, {U("phase", p)}));
    }
    script.Add(Probe(Role::kFrameEnd, end, {U("frame_id", id)}));
    message(kPid, begin - 20 * kUs, end + 20 * kUs, "Choreographer#doFrame");
    vsync += kInterval * (id == 10 ? 3 : 1);
    if (id == 20) {
      // A background message with a nested one.
      message(kPid, end + 1 * kMs, end + 5 * kMs, "bg.work");
      message(kPid, end + 2 * kMs, end + 4 * kMs, "nested");
    }
  }
  // Frames on another looper thread, no messages there.
  for (uint64_t id = 100; id < 105; ++id) {
    const uint64_t v = kBegin + (id - 100) * kInterval;
    script.Add(Probe(Role::kFrameBegin, v + kMs, {U("frame_id", id), U("vsync_ns", v)}, kPid + 1));
    script.Add(Probe(Role::kFrameEnd, v + 2 * kMs, {U("frame_id", id)}, kPid + 1));
  }
  // Still running at the end of the session.
  script.Add(Probe(Role::kDispatchBegin, kBegin + 1'900 * kMs, {testing::S("name", "stuck")}));
  AnalysisOptions options;
  SessionStart start;
  start.pid = kPid;
  start.ts_ns = kBegin;
  start.command = f.session.command;
  start.probes.push_back({0, Role::kDispatchBegin, "uprobe", "/x", "b", 0});
  Report report = script.Run(options, f.session.end_ns, start);
  f.messages = report.messages;
  f.frames = report.frames;
  return f;
}

json Render(const Fixture& f, std::string* text = nullptr) {
  std::ostringstream out;
  RenderChromeTrace(AsReport(f), out);
  if (text) *text = out.str();
  return json::parse(out.str());
}

std::vector<json> Events(const json& trace, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

int64_t Ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

// Every thread's X events nest: sorted by (begin, longer first), each one ends within the
// innermost open slice it starts in.
void ExpectNested(const std::vector<json>& slices) {
  std::map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> by_tid;
  for (const auto& e : slices) {
    const int64_t b = Ns(e.at("ts"));
    by_tid[e.at("tid").get<uint64_t>()].push_back({b, b + Ns(e.at("dur"))});
  }
  for (auto& [tid, spans] : by_tid) {
    std::stable_sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
      return std::make_tuple(a.first, -a.second) < std::make_tuple(b.first, -b.second);
    });
    std::vector<int64_t> open;
    for (auto [b, e] : spans) {
      while (!open.empty() && open.back() <= b && !(open.back() == b && e == b)) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(e, open.back()) << "tid " << tid << " slice at " << b;
      }
      open.push_back(e);
    }
  }
}

TEST(ChromeTrace, ParsesWithTheExpectedEvents) {
  Fixture f = Build();
  std::string text;
  json trace = Render(f, &text);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  EXPECT_EQ(trace.at("metadata").at("pid"), kPid);
  EXPECT_EQ(trace.at("metadata").at("command"), "sample \"app\"");
  EXPECT_EQ(trace.at("metadata").at("ts_base_ns"), kBegin);

  ASSERT_EQ(f.frames.frames.size(), 35u);
  size_t phases = 0;
  for (const auto& fr : f.frames.frames) phases += fr.phases.size();
  EXPECT_EQ(phases, 150u);
  const auto x = Events(trace, "X");
  EXPECT_EQ(x.size(), f.messages.messages.size() + 1 + 35 + 150);
  size_t frames = 0, phase_slices = 0, messages = 0;
  for (const auto& e : x) {
    const std::string cat = e.at("cat");
    frames += cat == "frame";
    phase_slices += cat == "phase";
    messages += cat == "message";
    EXPECT_EQ(e.at("pid"), kPid);
    EXPECT_GE(e.at("dur").get<double>(), 0);
  }
  EXPECT_EQ(frames, 35u);
  EXPECT_EQ(phase_slices, 150u);
  EXPECT_EQ(messages, 30u + 3 + 1);

  // Process name, and a name and sort index per thread (two threads).
  EXPECT_EQ(Events(trace, "M").size(), 1u + 2 * 2);
  // One janky frame (40 ms): one instant.
  const auto instants = Events(trace, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].at("args").at("frame_id"), 10);
  EXPECT_EQ(instants[0].at("args").at("dropped"), 2);
  // FPS counters: two samples per window (35 frames of one scene: one window, flushed at
  // the end) and per scene.
  const auto counters = Events(trace, "C");
  ASSERT_EQ(f.frames.windows.size(), 1u);
  ASSERT_EQ(f.frames.scenes.size(), 1u);
  EXPECT_EQ(counters.size(), 2 * f.frames.windows.size() + 2 * f.frames.scenes.size());
  for (const auto& c : counters) EXPECT_GT(c.at("args").at("matrix_fps").get<double>(), 0);

  ExpectNested(x);
}

TEST(ChromeTrace, TimestampsAreMicrosecondsFromTheSessionBegin) {
  Fixture f = Build();
  std::string text;
  json trace = Render(f, &text);
  // The first message, 1.234567 ms in, lasting 0.765433 ms: exact decimals.
  EXPECT_NE(text.find("\"ts\":1234.567,\"dur\":765.433"), std::string::npos);
  for (const auto& e : Events(trace, "X")) {
    if (e.at("name") == "message") {
      EXPECT_EQ(e.at("args").at("cpu_ns"), 382716);
      EXPECT_EQ(e.at("args").at("msg_id"), 1);
    }
    if (e.at("name") == "Frame 1") {
      EXPECT_EQ(Ns(e.at("ts")), static_cast<int64_t>(10 * kMs + 100 * kUs));
      EXPECT_EQ(e.at("args").at("bucket"), "BEST");
      EXPECT_EQ(e.at("args").at("vsync_ns"), kBegin + 10 * kMs);
    }
    if (e.at("name") == "stuck") {
      EXPECT_EQ(e.at("args").at("unfinished"), true);
    }
    if (e.at("name") == "nested") {
      EXPECT_EQ(e.at("args").at("depth"), 1);
    }
  }
}

TEST(ChromeTrace, PhasesAreNestedInTheirFramesAndFramesInTheirMessages) {
  Fixture f = Build();
  json trace = Render(f);
  std::map<std::string, std::pair<int64_t, int64_t>> frame_span;
  for (const auto& e : Events(trace, "X"))
    if (e.at("cat") == "frame" && e.at("tid") == kPid)
      frame_span[std::to_string(e.at("args").at("frame_id").get<int>())] = {Ns(e.at("ts")),
                                                                            Ns(e.at("ts")) + Ns(e.at("dur"))};
  size_t checked = 0;
  for (const auto& e : Events(trace, "X")) {
    if (e.at("cat") != "phase" || e.at("tid") != kPid) continue;
    auto [b, end] = frame_span.at(std::to_string(e.at("args").at("frame_id").get<int>()));
    EXPECT_GE(Ns(e.at("ts")), b);
    EXPECT_LE(Ns(e.at("ts")) + Ns(e.at("dur")), end);
    ++checked;
  }
  EXPECT_EQ(checked, 150u);
  const std::vector<std::string> names = {"INPUT", "ANIMATION", "INSETS_ANIMATION", "TRAVERSAL", "COMMIT"};
  for (const auto& name : names) {
    size_t n = 0;
    for (const auto& e : Events(trace, "X")) n += e.at("name") == name;
    EXPECT_EQ(n, 30u) << name;
  }
}

TEST(ChromeTrace, OverlappingSlicesAreClippedToNest) {
  Fixture f;
  f.session.pid = kPid;
  f.session.begin_ns = kBegin;
  // A frame that ends after its message (bad input): clipped to the message.
  Message m{kPid, kBegin + 10 * kMs, kBegin + 20 * kMs, 1, "Choreographer#doFrame", 0, 0, std::nullopt};
  f.messages.messages.push_back(m);
  Message sibling{kPid, kBegin + 20 * kMs, kBegin + 30 * kMs, 2, "next", 0, 0, std::nullopt};
  f.messages.messages.push_back(sibling);
  FrameRecord fr;
  fr.tid = kPid;
  fr.frame_id = 1;
  fr.vsync_ns = kBegin + 9 * kMs;
  fr.begin_ns = kBegin + 11 * kMs;
  fr.end_ns = kBegin + 25 * kMs;
  fr.phases.push_back({kPhaseTraversal, "TRAVERSAL", kBegin + 12 * kMs, kBegin + 24 * kMs});
  f.frames.frames.push_back(fr);
  json trace = Render(f);
  const auto x = Events(trace, "X");
  ASSERT_EQ(x.size(), 4u);
  ExpectNested(x);
  for (const auto& e : x) {
    if (e.at("name") == "Frame 1") {
      EXPECT_EQ(e.at("args").at("clipped_end_ns"), kBegin + 25 * kMs);
      EXPECT_EQ(Ns(e.at("ts")) + Ns(e.at("dur")), static_cast<int64_t>(20 * kMs));
    }
    if (e.at("name") == "TRAVERSAL") {
      EXPECT_EQ(Ns(e.at("ts")) + Ns(e.at("dur")), static_cast<int64_t>(20 * kMs));
    }
  }
}

TEST(ChromeTrace, EmptyReportsAreValid) {
  Fixture f;
  f.session.pid = 7;
  json trace = Render(f);
  EXPECT_EQ(trace.at("traceEvents").size(), 1u);  // the process name
  EXPECT_EQ(trace.at("traceEvents")[0].at("name"), "process_name");
  EXPECT_EQ(trace.at("metadata").at("frames"), 0);
}

TEST(ChromeTrace, Deterministic) {
  std::ostringstream a, b;
  Fixture f = Build();
  RenderChromeTrace(AsReport(f), a);
  Fixture g = Build();
  RenderChromeTrace(AsReport(g), b);
  EXPECT_EQ(a.str(), b.str());
}

}  // namespace
}  // namespace looptrace
