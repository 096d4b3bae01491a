// ClickHouse rows (clickhouse_rows.h): the schema, rows that carry the identity columns,
// and every record sent exactly once over interim reports and the final one.
#include "looptrace/report/clickhouse_rows.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loader/export/clickhouse_sink.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/live_stats.h"
#include "looptrace/tracers/pipeline.h"
#include "tests/unit/tracers/event_script.h"

namespace looptrace::loader {
namespace {

using nlohmann::json;
constexpr uint64_t kMs = 1'000'000, kS = 1'000'000'000;
constexpr uint32_t kPid = 77;

TEST(ClickHouseSchema, HasEveryTableOrderedByHostTargetTime) {
  std::string schema = ClickHouseSchema("fleet");
  EXPECT_NE(schema.find("CREATE DATABASE IF NOT EXISTS fleet;"), std::string::npos);
  for (const auto& table : ClickHouseTables()) {
    const size_t at = schema.find("CREATE TABLE IF NOT EXISTS fleet." + table + "\n");
    ASSERT_NE(at, std::string::npos) << table;
    const std::string statement = schema.substr(at, schema.find(';', at) - at);
    EXPECT_NE(statement.find("MergeTree"), std::string::npos) << table;
    EXPECT_NE(statement.find("ORDER BY (host, target, time"), std::string::npos) << table;
    for (const char* column : {"host String", "target String", "session_id String", "build String", "time DateTime"})
      EXPECT_NE(statement.find(column), std::string::npos) << table << " " << column;
  }
  EXPECT_NE(schema.find("Distributed("), std::string::npos);  // the cluster note
  EXPECT_EQ(ClickHouseTables().size(), 9u);
}

ProbeEvent Probe(Role role, uint64_t ts, std::vector<EventArg> args) {
  return testing::Probe(role, ts, std::move(args), kPid);
}
using testing::S;
using testing::U;

class Rows : public ::testing::Test {
 protected:
  Rows() : pipeline_(options_, nullptr, PipelineUse::kLive) {
    options_.common.evil_threshold_ns = 300 * kMs;
    SessionStart start;
    start.ts_ns = 10 * kS;
    start.wall_time_ns = 1'700'000'000 * kS;
    start.pid = kPid;
    start.command = "app";
    pipeline_.OnEvent(start);
    live().KeepIntervals();
    RowIdentity id;
    id.host = "h1";
    id.target = "app";
    id.pid = kPid;
    id.session_id = "h1:77:1";
    id.build = "abc";
    id.begin_ns = 10 * kS;
    id.begin_wall_ns = 1'700'000'000 * kS;
    builder_.emplace(id, 100 * kMs);
  }
  LiveStatsTracer& live() { return *dynamic_cast<LiveStatsTracer*>(pipeline_.FindTracer("live_stats")); }
  void Message(uint64_t begin, uint64_t cost, uint64_t id, const char* name) {
    pipeline_.OnEvent(Probe(Role::kDispatchBegin, begin, {U("id", id), S("name", name)}));
    pipeline_.OnEvent(Probe(Role::kDispatchEnd, begin + cost, {U("id", id)}));
  }
  std::map<std::string, std::vector<json>> Take(uint64_t now, bool final) {
    Report r = final ? pipeline_.TakeReport() : pipeline_.Snapshot(now);
    auto intervals = live().TakeIntervals(final ? r.session.end_ns : now);
    Stats counters = r.stats;
    std::map<std::string, std::vector<json>> out;
    for (auto& t : builder_->Rows(r, intervals, counters, final))
      for (auto& row : t.rows) out[t.table].push_back(json::parse(row));
    return out;
  }

  AnalysisOptions options_;
  Pipeline pipeline_;
  std::optional<RowBuilder> builder_;
};

TEST_F(Rows, EveryRecordOnceAndCountsAddUp) {
  std::map<std::string, std::vector<json>> all;
  auto add = [&](std::map<std::string, std::vector<json>> more) {
    for (auto& [table, rows] : more) all[table].insert(all[table].end(), rows.begin(), rows.end());
  };
  Message(11 * kS, 5 * kMs, 1, "fast");
  Message(12 * kS, 150 * kMs, 2, "slow");
  Message(13 * kS, 400 * kMs, 3, "evil");
  add(Take(13 * kS + 900 * kMs, false));  // the evil one ended 0.5 s ago: not settled yet
  EXPECT_EQ(all["evil_methods"].size(), 0u);
  EXPECT_EQ(all["slow_messages"].size(), 1u);
  EXPECT_EQ(all["sessions"].size(), 1u);
  Message(15 * kS, 2 * kMs, 4, "fast");
  add(Take(20 * kS, false));
  add(Take(21 * kS, false));  // nothing new
  Message(22 * kS, 500 * kMs, 5, "evil");
  pipeline_.OnEvent(SessionEnd{23 * kS, "detached", std::nullopt});
  add(Take(0, true));

  EXPECT_EQ(all["slow_messages"].size(), 3u);  // 150, 400, 500 ms
  EXPECT_EQ(all["evil_methods"].size(), 2u);
  ASSERT_EQ(all["sessions"].size(), 2u);  // running, then final
  EXPECT_EQ(all["sessions"][0]["end_reason"], "running");
  EXPECT_EQ(all["sessions"][1]["end_reason"], "detached");
  EXPECT_EQ(all["sessions"][1]["messages"], 5);
  uint64_t counted = 0;
  for (const auto& row : all["message_summaries"]) counted += row["count"].get<uint64_t>();
  EXPECT_EQ(counted, 5u);
  for (const auto& [table, rows] : all)
    for (const auto& row : rows) {
      EXPECT_EQ(row["host"], "h1") << table;
      EXPECT_EQ(row["target"], "app") << table;
      EXPECT_EQ(row["pid"], kPid) << table;
      EXPECT_EQ(row["session_id"], "h1:77:1") << table;
      EXPECT_EQ(row["build"], "abc") << table;
      EXPECT_GE(row["time"].get<uint64_t>(), 1'700'000'000u) << table;
    }
  // The evil rows carry their slow message's stackKey column (empty: no method beats here).
  EXPECT_EQ(all["evil_methods"][0]["name"], "evil");
  EXPECT_EQ(all["evil_methods"][0]["time"], 1'700'000'003u);
}

TEST_F(Rows, StallsWaitForTheirMessageToEnd) {
  pipeline_.OnEvent(Probe(Role::kDispatchBegin, 11 * kS, {U("id", 1), S("name", "stuck")}));
  StallSnapshot snap;
  snap.anr = true;
  snap.ts_ns = 16 * kS;
  snap.tid = kPid;
  snap.message_begin_ns = 11 * kS;
  pipeline_.OnEvent(snap);
  auto rows = Take(18 * kS, false);
  EXPECT_EQ(rows["stalls"].size(), 0u);  // still running: its cause and cost are not final
  pipeline_.OnEvent(Probe(Role::kDispatchEnd, 19 * kS, {U("id", 1)}));
  rows = Take(21 * kS, false);
  ASSERT_EQ(rows["stalls"].size(), 1u);
  EXPECT_EQ(rows["stalls"][0]["kind"], "anr");
  EXPECT_EQ(rows["stalls"][0]["name"], "stuck");
  EXPECT_EQ(rows["stalls"][0]["cost_ns"], 8 * kS);
  EXPECT_EQ(rows["stalls"][0]["finished"], 1);
  pipeline_.OnEvent(SessionEnd{22 * kS, "detached", std::nullopt});
  EXPECT_EQ(Take(0, true)["stalls"].size(), 0u);
}

TEST(ClickHouseUrl, ParsesHostPortDatabaseAndCredentials) {
  auto o = ParseClickHouseUrl("http://127.0.0.1:18123/?database=fleet");
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->host, "127.0.0.1");
  EXPECT_EQ(o->port, 18123);
  EXPECT_EQ(o->database, "fleet");
  o = ParseClickHouseUrl("http://bob:s%40cret@ch.example");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->user, "bob");
  EXPECT_EQ(o->password, "s@cret");
  EXPECT_EQ(o->port, 8123);
  EXPECT_EQ(o->database, "looptrace");
  for (const char* bad : {"ch.example:8123", "https://ch:8443/", "http://:8123/", "http://ch:0/", "http://ch:99999/",
                          "http://ch/path", "http://ch/?database=a;DROP", "http://ch/?what=1"})
    EXPECT_FALSE(ParseClickHouseUrl(bad)) << bad;
}

TEST(ClickHouseErrors, KnowsWhichOnesRetryingCannotFix) {
  EXPECT_TRUE(PermanentClickHouseError(404, ""));
  EXPECT_TRUE(
      PermanentClickHouseError(500, "Code: 60, e.displayText() = DB::Exception: Table looptrace.x doesn't exist"));
  EXPECT_TRUE(PermanentClickHouseError(500, "Code: 26, e.displayText() = DB::Exception: Cannot parse JSON"));
  EXPECT_FALSE(PermanentClickHouseError(500, "Code: 241, e.displayText() = DB::Exception: Memory limit exceeded"));
  EXPECT_FALSE(PermanentClickHouseError(503, ""));
  EXPECT_FALSE(PermanentClickHouseError(429, ""));
}

}  // namespace
}  // namespace looptrace::loader
