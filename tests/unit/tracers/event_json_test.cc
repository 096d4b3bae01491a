#include "looptrace/tracers/event_json.h"

#include <gtest/gtest.h>

#include "../fuzz_corpus.h"
#include "looptrace/tracers/text_pool.h"
#include "looptrace/tracers/thread_state.h"

namespace looptrace {
namespace {

TEST(EventJson, ProbeEventRoundTrips) {
  ProbeEvent e;
  e.ts_ns = 123456789012345ull;
  e.pid = 10;
  e.tid = 11;
  e.role = Role::kDispatchBegin;
  e.probe_id = 3;
  e.args.push_back({"id", 0xFFFFFFFFFFFFFFFFull, nullptr, false});
  e.args.push_back({"name", 0x55550000, TextPool::Intern("msg \"quoted\""), true});
  std::string line = EventToJsonLine(e);
  auto parsed = EventFromJsonLine(line);
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_TRUE(parsed->has_value());
  const auto& back = std::get<ProbeEvent>(**parsed);
  EXPECT_EQ(back.ts_ns, e.ts_ns);
  EXPECT_EQ(back.tid, 11u);
  EXPECT_EQ(back.role, Role::kDispatchBegin);
  EXPECT_EQ(back.probe_id, 3);
  ASSERT_NE(back.Arg("id"), nullptr);
  EXPECT_EQ(back.Arg("id")->value, 0xFFFFFFFFFFFFFFFFull);
  ASSERT_NE(back.Arg("name"), nullptr);
  ASSERT_NE(back.Arg("name")->text, nullptr);
  EXPECT_EQ(*back.Arg("name")->text, "msg \"quoted\"");
}

// A recording keeps the system call an early wait was classified by (no kernel stack).
TEST(EventJson, AnEarlyWaitsSystemCallRoundTrips) {
  ThreadSwitch e;
  e.ts_ns = 5;
  e.tid = 7;
  e.off_cpu = true;
  e.state = 1;
  e.wait_syscall = 230;
  auto parsed = EventFromJsonLine(EventToJsonLine(e));
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ(std::get<ThreadSwitch>(**parsed).wait_syscall, 230);
  e.wait_syscall = kNoWaitSyscall;
  const std::string without = EventToJsonLine(e);
  EXPECT_EQ(without.find("wait_syscall"), std::string::npos) << without;
}

TEST(EventJson, ASamplesLoweredPeriodRoundTrips) {
  StackSample e;
  e.ts_ns = 5;
  e.tid = 7;
  e.frames = {"main"};
  e.period_ns = 4'000'000;
  auto parsed = EventFromJsonLine(EventToJsonLine(e));
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ(std::get<StackSample>(**parsed).period_ns, 4'000'000u);
  e.period_ns = 0;  // the session's rate: not written
  const std::string without = EventToJsonLine(e);
  EXPECT_EQ(without.find("period_ns"), std::string::npos) << without;
}

TEST(EventJson, UnreadableStringStaysAString) {
  ProbeEvent e;
  e.role = Role::kDispatchBegin;
  e.args.push_back({"name", 0x1234, nullptr, true});
  auto parsed = EventFromJsonLine(EventToJsonLine(e));
  ASSERT_TRUE(parsed && parsed->has_value());
  const EventArg* name = std::get<ProbeEvent>(**parsed).Arg("name");
  ASSERT_NE(name, nullptr);
  EXPECT_TRUE(name->is_string);
  EXPECT_EQ(name->text, nullptr);
}

TEST(EventJson, SessionAndCountersRoundTrip) {
  SessionStart s;
  s.ts_ns = 5;
  s.pid = 42;
  s.command = "app";
  s.profile = "sample";
  s.probes.push_back({1, Role::kDispatchEnd, "uprobe", "/bin/app", "end", 0x1040});
  auto parsed = EventFromJsonLine(EventToJsonLine(s));
  ASSERT_TRUE(parsed && parsed->has_value());
  const auto& back = std::get<SessionStart>(**parsed);
  EXPECT_EQ(back.pid, 42u);
  ASSERT_EQ(back.probes.size(), 1u);
  EXPECT_EQ(back.probes[0].role, Role::kDispatchEnd);
  EXPECT_EQ(back.probes[0].file_offset, 0x1040u);

  LossCounters c;
  c.stats.Set(StatId::ringbuf_full, 17);
  auto counters = EventFromJsonLine(EventToJsonLine(c));
  ASSERT_TRUE(counters && counters->has_value());
  EXPECT_EQ(std::get<LossCounters>(**counters).stats.Get(StatId::ringbuf_full), 17u);
}

TEST(EventJson, HeaderIsRecognisedAndForeignInputRejected) {
  auto header = EventFromJsonLine(RecordingHeaderLine());
  ASSERT_TRUE(header);
  EXPECT_FALSE(header->has_value());
  EXPECT_FALSE(EventFromJsonLine("not json"));
  EXPECT_FALSE(EventFromJsonLine(R"({"type":"recording","format":"other","version":1})"));
  EXPECT_FALSE(EventFromJsonLine(R"({"type":"recording","format":"looptrace-events","version":99})"));
  EXPECT_FALSE(EventFromJsonLine(R"({"type":"probe","ts_ns":1,"tid":1,"role":"nope"})"));
  EXPECT_FALSE(EventFromJsonLine(R"({"type":"probe","tid":1,"role":"dispatch.end"})"));
  EXPECT_FALSE(EventFromJsonLine(R"({"type":"mystery"})"));
  EXPECT_FALSE(EventFromJsonLine(R"({"type":"counters","counters":{"bogus":1}})"));
}

}  // namespace
}  // namespace looptrace

namespace looptrace {
namespace {

// In the event_json fuzz corpus (found reading the parser, confirmed with the fuzz
// harness): a float timestamp beyond uint64 was converted with undefined behaviour
// (UBSan: "1e+300 is outside the range of representable values").
TEST(EventJson, FuzzFloatBeyondRangeIsTheWrongType) {
  const std::string line = test_util::FuzzInput("event_json", "regress_float_timestamp_ub");
  ASSERT_EQ(line, R"({"type":"exec","ts_ns":1e300})");
  auto parsed = EventFromJsonLine(line);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "field 'ts_ns' has the wrong type");
}

TEST(EventJson, IntegerFieldsTakeOnlyIntegersInRange) {
  for (const char* bad : {R"({"type":"exec","ts_ns":1.5})", R"({"type":"exec","ts_ns":-5})",
                          R"({"type":"exec","ts_ns":18446744073709551616})",
                          R"({"type":"switch","ts_ns":1,"tid":4294967296,"off_cpu":false})",
                          R"({"type":"signal","ts_ns":1,"signal":2147483648,"sender_pid":1})"}) {
    auto parsed = EventFromJsonLine(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.error().message.find("has the wrong type"), std::string::npos) << bad;
  }
  auto ok = EventFromJsonLine(R"({"type":"signal","ts_ns":18446744073709551615,"signal":-1,)"
                              R"("sender_pid":4294967295,"result":-22})");
  ASSERT_TRUE(ok && ok->has_value());
  const auto& signal = std::get<SignalSent>(**ok);
  EXPECT_EQ(signal.ts_ns, 18446744073709551615ull);
  EXPECT_EQ(signal.signal, -1);
  EXPECT_EQ(signal.sender_pid, 4294967295u);
  EXPECT_EQ(signal.result, -22);
  // Optional fields out of range fall back to their defaults, as other wrong types do.
  auto probe = EventFromJsonLine(R"({"type":"probe","ts_ns":1,"tid":2,"role":"dispatch.end","probe_id":70000})");
  ASSERT_TRUE(probe && probe->has_value());
  EXPECT_EQ(std::get<ProbeEvent>(**probe).probe_id, 0);
}

TEST(EventJson, MethodNameKeysAreWholeNumbers) {
  const std::string prefix = R"({"type":"method_beats","tid":1,"begin_ns":1,"end_ns":2,"beats":[],"names":{)";
  for (const char* key : {R"("12abc")", R"("-1")", R"(" 7")", R"("")"}) {
    auto parsed = EventFromJsonLine(prefix + key + R"(:"x"}})");
    ASSERT_FALSE(parsed) << key;
    EXPECT_NE(parsed.error().message.find("is not a number"), std::string::npos) << key;
  }
  auto parsed = EventFromJsonLine(prefix + R"("18446744073709551615":"x"}})");
  ASSERT_TRUE(parsed && parsed->has_value());
  EXPECT_EQ(std::get<MethodBeats>(**parsed).names.at(18446744073709551615ull), "x");
}

}  // namespace
}  // namespace looptrace
