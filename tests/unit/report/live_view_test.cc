// The text of status, top and sessions (live_view.h).
#include "looptrace/report/live_view.h"

#include <gtest/gtest.h>

namespace looptrace {
namespace {

LiveStatus Status() {
  LiveStatus s;
  s.pid = 4242;
  s.command = "app\x1b[31m";
  s.profile = "sample";
  s.begin_ns = 1'000'000'000;
  s.now_ns = 61'000'000'000;
  s.wall_time_ns = 1'700'000'000'000'000'000;
  s.messages_enabled = true;
  s.window_ns = 10'000'000'000;
  s.messages_per_s = 123.4;
  s.p50_ns = 1'200'000;
  s.p99_ns = 43'100'000;
  s.busy_percent = 45.2;
  LiveMessage m;
  m.tid = 4242;
  m.begin_ns = 60'000'000'000;
  m.msg_id = 12;
  m.name = "msg.sleep";
  s.current = m;
  s.current_running_ns = 1'000'000'000;
  s.state = "running";
  m.end_ns = m.begin_ns + 30'000'000;
  s.recent_slow = {m};
  s.anrs = 1;
  s.stats.Add(StatId::records_full, 3);
  return s;
}

TEST(LiveView, StatusSaysWhatRunsAndTheFigures) {
  SessionSummary summary;
  summary.output = "/var/log/app.json";
  summary.format = "json";
  summary.probe_points = 23;
  std::string text = FormatStatus(summary, Status());
  for (const char* expected :
       {"pid 4242", "\"msg.sleep\" (id 12) running for 1.000 s [running]", "123.4/s", "p99 43.10 ms", "busy 45.2%",
        "ANR 1", "records_full 3", "/var/log/app.json (json)", "23 probe points", "1m00s ago"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);  // the target's name cannot drive the terminal
  EXPECT_NE(text.find("app\\x1b[31m"), std::string::npos);
}

TEST(LiveView, TopFitsTheTerminal) {
  auto lines = TopScreen(SessionSummary{}, Status(), 40, 8);
  ASSERT_EQ(lines.size(), 8u);
  for (const auto& line : lines) EXPECT_LE(line.size(), 40u) << line;
  EXPECT_EQ(lines.back(), "q: quit");
  EXPECT_NE(lines[1].find("running"), std::string::npos);
  auto tall = TopScreen(SessionSummary{}, Status(), 200, 60);
  bool slow_listed = false;
  for (const auto& line : tall)
    slow_listed |= line.find("msg.sleep") != std::string::npos && line.find("30.00 ms") != std::string::npos;
  EXPECT_TRUE(slow_listed);
}

TEST(LiveView, PlainLineHasTheFigures) {
  std::string line = TopLine(Status(), 1'700'000'000'000'000'000);
  for (const char* expected : {"pid 4242", "state running", "msgs/s 123.4", "p99 43.10 ms", "busy 45.2%", "anr 1"})
    EXPECT_NE(line.find(expected), std::string::npos) << expected << ": " << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(LiveView, SessionsTableAndAges) {
  SessionRow row;
  row.summary.pid = 7;
  row.summary.command = "app";
  row.summary.profile = "glib";
  row.summary.since_wall_ns = 1'000'000'000'000'000'000;
  row.summary.messages = 99;
  SessionRow stale;
  stale.summary.pid = 8;
  stale.note = "no looptrace session for pid 8 (its session was killed)";
  std::string table = FormatSessions({row, stale}, 1'000'000'000'000'000'000 + 3'723'000'000'000);
  EXPECT_NE(table.find("PID"), std::string::npos);
  EXPECT_NE(table.find("1h02m"), std::string::npos);
  EXPECT_NE(table.find("glib"), std::string::npos);
  EXPECT_NE(table.find("its session was killed"), std::string::npos);
  EXPECT_EQ(FormatSessions({}, 0), "no background sessions\n");
  EXPECT_EQ(FormatAge(12'300'000'000), "12.3s");
  EXPECT_EQ(FormatAge(90'061'000'000'000), "1d01h");
}

}  // namespace
}  // namespace looptrace
