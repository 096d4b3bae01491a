// The JSON shapes declared once (json_codecs.h): each struct reads back what it wrote, the
// control socket's texts keep their keys, and recordings' parts read leniently.
#include "looptrace/report/json_codecs.h"

#include <gtest/gtest.h>

namespace looptrace {
namespace {

using nlohmann::json;

LiveStatus FullStatus() {
  LiveStatus s;
  s.pid = 42;
  s.command = "app";
  s.profile = "sample";
  s.message_definition = "poll-bounded";
  s.begin_ns = 1;
  s.wall_time_ns = 2;
  s.now_ns = 3;
  s.messages_enabled = true;
  s.frames_enabled = true;
  LiveThread t;
  t.tid = 42;
  t.messages = 5;
  t.busy_ns = 6;
  t.total_ns = 7;
  t.buckets[3] = 5;
  s.threads = {t};
  s.frames = 8;
  s.frames_by_jank = {1, 2, 3};
  s.slow_frames = 9;
  s.frames_by_bucket = {{"BEST", 10}, {"FROZEN", 1}};
  s.dropped_frames = 11;
  s.anrs = 12;
  s.lags = 13;
  s.signal_anrs = 14;
  s.self_sigquits = 15;
  s.idle_lags = 16;
  s.input_lags = 17;
  s.barrier_leaks = 18;
  s.evil_methods = 19;
  s.window_ns = 20;
  s.window_messages = 21;
  s.messages_per_s = 22.5;
  s.p50_ns = 23;
  s.p99_ns = 24;
  s.max_ns = 25;
  s.busy_percent = 26.25;
  s.window_frames = 27;
  s.window_janky = 28;
  s.fps = 59.5;
  s.refresh_hz = 60;
  s.current = LiveMessage{42, 100, 0, 7, "tick"};
  s.current_running_ns = 29;
  s.state = "lag";
  s.frame = "frame 3";
  s.scene = "Main";
  s.lag_threshold_ns = 30;
  s.anr_threshold_ns = 31;
  s.recent_slow = {LiveMessage{42, 50, 90, std::nullopt, ""}};
  s.last_stall = LiveStall{"lag", 42, 70, 60, "tick"};
  s.stats.Set(StatId::records_full, 3);
  return s;
}

TEST(JsonCodecs, LiveStatusReadsBackWhatItWrote) {
  const std::string text = LiveStatusToJson(FullStatus());
  auto read = LiveStatusFromJson(text);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(LiveStatusToJson(*read), text);
  EXPECT_EQ(read->current->msg_id, 7u);
  EXPECT_FALSE(read->recent_slow[0].msg_id);
  EXPECT_EQ(read->stats.Get(StatId::records_full), 3u);
}

// What `status` clients of other versions read: every key by its name, the counters by
// theirs, absent optionals as null.
TEST(JsonCodecs, LiveStatusKeys) {
  LiveStatus idle = FullStatus();
  idle.current.reset();
  idle.last_stall.reset();
  const json j = json::parse(LiveStatusToJson(idle));
  EXPECT_EQ(j.at("type"), "status");
  EXPECT_TRUE(j.at("current").is_null());
  EXPECT_TRUE(j.at("last_stall").is_null());
  EXPECT_EQ(j.at("counters").at("records_full"), 3);
  EXPECT_EQ(j.at("counters").size(), static_cast<size_t>(kStatCount));
  EXPECT_EQ(j.at("recent_slow").at(0).at("msg_id"), nullptr);
  EXPECT_EQ(j.at("threads").at(0).at("buckets").size(), kMessageBuckets);
  EXPECT_EQ(j.size(), 45u);  // 43 fields, "type" and "counters"
}

TEST(JsonCodecs, LiveStatusMissingAFieldIsAnError) {
  json j = json::parse(LiveStatusToJson(FullStatus()));
  j.erase("fps");
  auto read = LiveStatusFromJson(j.dump());
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("status: "), std::string::npos) << read.error().message;
  EXPECT_FALSE(LiveStatusFromJson("[1]"));
  EXPECT_FALSE(LiveStatusFromJson("not json"));
}

TEST(JsonCodecs, SessionSummaryReadsBackWhatItWrote) {
  SessionSummary s;
  s.pid = 7;
  s.command = "app";
  s.probe_points = 12;
  s.clickhouse = true;
  s.rows_sent = 100;
  s.clickhouse_error = "timeout";
  const std::string text = SessionSummaryToJson(s);
  auto read = SessionSummaryFromJson(text);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(SessionSummaryToJson(*read), text);
  EXPECT_EQ(json::parse(text).size(), 20u);
  EXPECT_FALSE(SessionSummaryFromJson(R"({"pid":7})"));
}

// Recordings are untrusted: a thread or device field of the wrong type keeps its default.
TEST(JsonCodecs, SnapshotPartsReadLeniently) {
  ThreadSnapshot t;
  t.tid = 5;
  t.name = "main";
  t.state = 'D';
  t.user_stack = {"f", "g"};
  json j = t;
  EXPECT_EQ(j.at("state"), "D");
  EXPECT_EQ(j.get<ThreadSnapshot>().user_stack, t.user_stack);
  j["tid"] = -1;
  j["state"] = "";
  j["kernel_stack"] = 3;
  const ThreadSnapshot odd = j.get<ThreadSnapshot>();
  EXPECT_EQ(odd.tid, 0u);
  EXPECT_EQ(odd.state, '?');
  EXPECT_TRUE(odd.kernel_stack.empty());
  EXPECT_EQ(odd.name, "main");

  DeviceInfo d;
  d.machine = "HIGH";
  d.mem_total_bytes = 8;
  const json device = d;
  EXPECT_EQ(device, json::parse(R"({"cpu_app":0.0,"machine":"HIGH","mem":8,"mem_free":0})"));
  EXPECT_EQ(json::parse(R"({"mem":"lots"})").get<DeviceInfo>().machine, "UN_KNOW");
}

}  // namespace
}  // namespace looptrace
