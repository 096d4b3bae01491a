// Names a hostile target controls (invalid UTF-8, terminal escapes, 100 kB, NULs) through
// every string path of the tracers: event sanitizing, recordings and every renderer.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "looptrace/report/chrome_trace.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/cost_accumulator.h"
#include "looptrace/tracers/event_json.h"
#include "looptrace/tracers/event_sanitize.h"
#include "looptrace/tracers/text_pool.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

using namespace std::string_literals;
using nlohmann::json;

// Retitles the terminal, clears it, rings, moves the cursor; then bytes that are not UTF-8,
// a C1 CSI, a right-to-left override, a newline and a NUL.
const std::string kEscapes = "\x1b]0;pwned\x07\x1b[2J\x1b[H\a\r\x7f";
const std::string kHostile = "evil" + kEscapes +
                             "\xFF\xFE\xC3"
                             "\xC2\x9B"
                             "1m\xE2\x80\xAE"
                             "txt\nline2\0nul"s;
const std::string kHuge = std::string(100'000, 'A') + "\x1b[31m";

// No byte a terminal would act on, apart from the report's own newlines and tabs.
void ExpectNoRawControlBytes(const std::string& text) {
  EXPECT_TRUE(IsValidUtf8(text));
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t') continue;
    ASSERT_FALSE(c < 0x20 || c == 0x7F) << "raw byte " << int(c) << " at " << i
                                        << " near: " << EscapeForTerminal(text.substr(i > 40 ? i - 40 : 0, 80));
  }
  EXPECT_EQ(text.find("\xC2\x9B"), std::string::npos);      // C1 CSI
  EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos);  // RLO
}

std::vector<NamedCallNode> Tree(const std::string& name) {
  NamedCallNode root;
  root.node.cost_ns = 3'000'000'000;
  root.name = name;
  NamedCallNode child;
  child.node.depth = 1;
  child.node.cost_ns = 2'000'000'000;
  child.name = name;
  return {root, child};
}

Report HostileReport(const std::string& name) {
  Report r;
  r.session.pid = 42;
  r.session.command = name;
  r.session.profile = name;
  r.session.begin_ns = 1'000'000'000;
  r.session.end_ns = 20'000'000'000;
  r.session_stacks.push_back({{"main", name}, 2'000'000});
  r.session.end_reason = "interrupted";
  r.session.probe_roles.push_back("dispatch.begin");
  Message m;
  m.tid = 42;
  m.begin_ns = 2'000'000'000;
  m.end_ns = 9'000'000'000;
  m.msg_id = 7;
  m.name = name;
  r.messages.enabled = true;
  r.messages.messages = {m};
  r.messages.threads = {{42, SummarizeCosts({m.cost_ns()}), m.cost_ns()}};
  r.messages.slowest = {m};
  r.messages.by_name = {{name, SummarizeCosts({m.cost_ns()})}};
  r.messages.unfinished = {m};
  EvilMethodReport evil;
  evil.message = m;
  evil.has_beats = true;
  evil.tree = Tree(name);
  evil.stack_key = name;
  evil.stack_key_name = name;
  evil.matrix_stack = name;
  evil.sampled.folded = {{{"main", name}, 2'000'000}};  // what -f folded draws by default
  r.evil_methods = {evil};
  StallReport stall;
  stall.anr = true;
  stall.threshold_ns = 5'000'000'000;
  stall.message = m;
  stall.stuck_reason = "lock wait";
  stall.snapshot.ts_ns = 7'000'000'000;
  stall.snapshot.tid = 42;
  ThreadSnapshot t;
  t.tid = 42;
  t.name = name;
  t.state = 'S';
  t.wchan = name;
  t.futex_address = 0x1000;
  t.futex_owner_tid = 43;
  t.kernel_stack = {name};
  t.user_stack = {name, name};
  ThreadSnapshot owner = t;
  owner.tid = 43;
  stall.snapshot.threads = {t, owner};
  stall.snapshot.memory_kb = {{name, 1}};
  stall.tree = Tree(name);
  stall.stack_key = name;
  stall.off_cpu = {{7'000'000'000, 8'000'000'000, "lock", 1, {name}, 43, name, false}};
  stall.off_cpu_by_reason = {{"lock", 1'000'000'000, 1}};
  stall.deadlock_cycle = {42, 43};
  stall.frame = name;
  stall.scene = name;
  r.stalls = {stall};
  SignalAnrReport sig;
  sig.signal.sender_comm = name;
  sig.signal.signal = 3;
  sig.stalled = true;
  sig.message = m;
  sig.scene = name;
  r.signal_anrs = {sig};
  r.span_lags = {{"idle_lag", 42, 2'000'000'000, 5'000'000'000, name, Tree(name), name}};
  r.startup.seen = true;
  r.startup.milestones = {{"activity.launch", 2'000'000'000, name, false}};
  r.startup.care_scene = name;
  r.startup.app_create_scene = name + "x";
  r.startup.missing = {name};
  r.startup.tree = Tree(name);
  WarmStart warm;
  warm.activity = name;
  warm.launch_ns = 3'000'000'000;
  warm.focus_ns = 4'000'000'000;
  warm.tree = Tree(name);
  r.startup.warm_starts = {warm};
  r.frames.enabled = true;
  FrameRecord frame;
  frame.tid = 42;
  frame.begin_ns = 2'000'000'000;
  frame.vsync_ns = frame.intended_vsync_ns = 2'000'000'000;
  frame.end_ns = 3'000'000'000;
  frame.interval_ns = 16'666'666;
  frame.refresh_hz = 60;
  frame.bucket = "FROZEN";
  frame.scene = name;
  frame.tree = Tree(name);
  r.frames.frames = {frame};
  FpsSummary fps;
  fps.scene = name;
  fps.frames = 1;
  fps.drop_level = {{"FROZEN", 1}};
  r.frames.scenes = {fps};
  r.frames.windows = {fps};
  r.frames.worst = {0};
  r.frames.refresh_rates = {60};
  return r;
}

std::string Render(std::string_view format, const Report& report) {
  std::ostringstream out;
  auto renderer = MakeRenderer(format);
  EXPECT_NE(renderer, nullptr) << format;
  if (renderer) renderer->Render(report, out);
  return out.str();
}

// Even raw, unsanitized names (a renderer fed directly) never reach the terminal as
// control bytes, and never make the JSON writer throw.
TEST(HostileStrings, TextReportEscapesEveryName) {
  const std::string text = Render("text", HostileReport(kHostile));
  ExpectNoRawControlBytes(text);
  EXPECT_NE(text.find("evil\\x1b]0;pwned\\x07\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u202etxt\\nline2\\x00nul"), std::string::npos) << text;
  // Names are one line each: the newline inside a name is escaped, so no report line starts
  // with the name's second half.
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_FALSE(line.starts_with("line2")) << line;
}

TEST(HostileStrings, JsonReportIsValidJsonWithoutThrowing) {
  std::string out;
  ASSERT_NO_THROW(out = Render("json", HostileReport(kHostile)));
  std::istringstream lines(out);
  size_t parsed = 0;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(json::accept(line)) << line.substr(0, 200);
    ++parsed;
    for (unsigned char c : line) ASSERT_FALSE(c < 0x20) << "raw control byte in a JSON line";
  }
  EXPECT_GT(parsed, 5u);
  ExpectNoRawControlBytes(out);  // C1 controls and bidi overrides are \u escapes too
  EXPECT_NE(out.find("\\u009b1m\\u202etxt"), std::string::npos);
  EXPECT_NE(out.find("\\u001b]0;pwned\\u0007"), std::string::npos);
  EXPECT_NE(out.find("\xEF\xBF\xBD"), std::string::npos);  // invalid bytes became U+FFFD
}

TEST(HostileStrings, ChromeTraceIsValidJson) {
  Report report = HostileReport(kHostile);
  std::string out;
  ASSERT_NO_THROW(out = Render("chrome", report));
  json parsed = json::parse(out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << out.substr(0, 300);
  EXPECT_TRUE(parsed.contains("traceEvents"));
  ExpectNoRawControlBytes(out);
}

// Every registered renderer, today's and tomorrow's: no exception, no raw control byte.
TEST(HostileStrings, EveryRendererIsTerminalSafe) {
  ASSERT_FALSE(RendererRegistry().empty());
  for (const std::string& name : {kHostile, kHuge}) {
    Report report = HostileReport(name);
    for (const RendererEntry& entry : RendererRegistry()) {
      SCOPED_TRACE(entry.name);
      std::string out;
      ASSERT_NO_THROW(out = Render(entry.name, report));
      EXPECT_FALSE(out.empty());
      ExpectNoRawControlBytes(out);
    }
  }
}

std::vector<Event> HostileEvents(const std::string& name) {
  SessionStart start;
  start.command = name;
  start.profile = name;
  start.probes.push_back({0, Role::kDispatchBegin, "uprobe", name, name, 0});
  ProbeEvent probe;
  probe.role = Role::kDispatchBegin;
  EventArg arg;
  arg.name = "name";
  arg.is_string = true;
  arg.text = TextPool::Intern(name);
  probe.args.push_back(arg);
  MethodBeats beats;
  beats.names = {{1, name}, {2, "fine"}};
  ThreadSwitch sw;
  sw.off_cpu = true;
  sw.kernel_stack = {name};
  Wakeup wake;
  wake.waker_comm = name;
  SignalSent sig;
  sig.sender_comm = name;
  StallSnapshot snap;
  ThreadSnapshot t;
  t.name = name;
  t.wchan = name;
  t.kernel_stack = {name};
  t.user_stack = {name};
  snap.threads = {t};
  snap.memory_kb = {{name, 1}};
  ProcessExec exec;
  exec.comm = name;
  SessionEnd end;
  end.reason = name;
  return {start, probe, beats, sw, wake, sig, snap, exec, end, LossCounters{}};
}

TEST(HostileStrings, SanitizeEventMakesEveryStringValidAndBounded) {
  for (const std::string& name : {kHostile, kHuge}) {
    for (Event event : HostileEvents(name)) {
      const bool has_strings = !std::holds_alternative<LossCounters>(event);
      EXPECT_EQ(IsEventSafe(event), !has_strings);
      EXPECT_EQ(SanitizeEvent(&event), has_strings);
      EXPECT_TRUE(IsEventSafe(event));
      // Everything in the sanitized event serializes without loss or error.
      const std::string line = EventToJsonLine(event);
      EXPECT_LT(line.size(), 6 * (kMaxNameBytes + 200));  // at most 5 names in one event
      auto back = EventFromJsonLine(line);
      ASSERT_TRUE(back) << back.error().message;
      ASSERT_TRUE(*back);
      EXPECT_EQ(EventToJsonLine(**back), line);
    }
  }
}

// The recording writer gets the raw event if someone forgot the sanitizer: it still writes
// valid JSON (U+FFFD), and a replayed line is made safe again.
TEST(HostileStrings, RecordingLinesNeverThrowAndReplaySafely) {
  for (const Event& event : HostileEvents(kHostile)) {
    std::string line;
    ASSERT_NO_THROW(line = EventToJsonLine(event));
    ASSERT_TRUE(json::accept(line)) << line;
    auto back = EventFromJsonLine(line);
    ASSERT_TRUE(back) << back.error().message;
    ASSERT_TRUE(*back);
    Event replayed = **back;
    SanitizeEvent(&replayed);
    EXPECT_TRUE(IsEventSafe(replayed));
  }
}

class Collect : public EventSink {
 public:
  void OnEvent(const Event& event) override { events.push_back(event); }
  std::vector<Event> events;
};

TEST(HostileStrings, SanitizingSinkForwardsSafeEventsAndFixesTheOthers) {
  Collect collect;
  SanitizingSink sink(collect);
  for (const Event& e : HostileEvents("plain")) sink.OnEvent(e);
  for (const Event& e : HostileEvents(kHostile)) sink.OnEvent(e);
  ASSERT_EQ(collect.events.size(), 20u);
  for (const Event& e : collect.events) EXPECT_TRUE(IsEventSafe(e));
  EXPECT_EQ(std::get<SessionStart>(collect.events[0]).command, "plain");
  const std::string& fixed = std::get<SessionStart>(collect.events[10]).command;
  EXPECT_TRUE(fixed.starts_with("evil\x1b]0;pwned")) << "control characters are data, kept";
  EXPECT_NE(fixed.find("\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace looptrace
