#include "looptrace/tracers/event_json.h"

#include <gtest/gtest.h>

namespace looptrace {
namespace {

TEST(EventJson, ProbeEventRoundTrips) {
  ProbeEvent e;
  e.ts_ns = 123456789012345ull;
  e.pid = 10;
  e.tid = 11;
  e.role = Role::kDispatchBegin;
  e.probe_id = 3;
  e.args.push_back({"id", 0xFFFFFFFFFFFFFFFFull, std::nullopt, false});
  e.args.push_back({"name", 0x55550000, std::string("msg \"quoted\""), true});
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
  EXPECT_EQ(back.Arg("name")->text, "msg \"quoted\"");
}

TEST(EventJson, UnreadableStringStaysAString) {
  ProbeEvent e;
  e.role = Role::kDispatchBegin;
  e.args.push_back({"name", 0x1234, std::nullopt, true});
  auto parsed = EventFromJsonLine(EventToJsonLine(e));
  ASSERT_TRUE(parsed && parsed->has_value());
  const EventArg* name = std::get<ProbeEvent>(**parsed).Arg("name");
  ASSERT_NE(name, nullptr);
  EXPECT_TRUE(name->is_string);
  EXPECT_FALSE(name->text.has_value());
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
