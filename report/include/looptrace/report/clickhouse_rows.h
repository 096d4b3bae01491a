// Report records as ClickHouse rows (JSONEachRow), one table per kind of record: sessions,
// message summaries, slow messages, evil methods (call trees), ANR/LAG and SIGQUIT stalls,
// idle/input lags and barrier leaks, janky frames, startups, data-quality counters. Every
// row starts with the same identity columns (host, target, pid, session_id, build, time)
// and every table is a MergeTree ordered by (host, target, time), so one ClickHouse can hold
// a fleet. Pure: unit-tested without a server; clickhouse_sink.h sends the rows.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "looptrace/report/live_status.h"
#include "looptrace/report/report.h"

namespace looptrace {

struct RowIdentity {
  std::string host;
  std::string target;  // the process's comm
  uint32_t pid = 0;
  std::string session_id;  // host:pid:begin, unique per session
  std::string build;       // --build, else the executable's GNU build id
  std::string profile;
  uint64_t begin_wall_ns = 0;  // CLOCK_REALTIME at the session's begin
  uint64_t begin_ns = 0;       // CLOCK_MONOTONIC at the same moment
};

struct TableRows {
  std::string table;
  std::vector<std::string> rows;  // one JSON object each, no newline
};

// Every table, in the order `clickhouse-schema` prints them.
const std::vector<std::string>& ClickHouseTables();
// CREATE DATABASE / CREATE TABLE statements for `database` (ClickHouse 18.16 or later).
std::string ClickHouseSchema(const std::string& database);

// The rows of one session, built from its reports as it goes: each call takes a report (a
// snapshot while the session runs, the final one at the end) and returns the records that
// ended since the previous call and at least `settle_ns` before the report's end (so a
// record still being decoded is taken next time); the final call takes all that is left.
// A Matrix issue (`report ISSUES --clickhouse`) as a row of the table looptrace's own sessions
// use for its kind: evil_methods (NORMAL, STARTUP), stalls (ANR, SIGNAL_ANR*, LAG), lags
// (LAG_IDLE_HANDLER, LAG_TOUCH, PRIORITY/TIMERSLACK changes), startups (Trace_StartUp). Marked
// as Matrix's by its identity: session_id "matrix:<content hash>" (one per issue: what makes
// re-ingesting idempotent), pid 0, host the device (or its level), target the process, build
// the app version. False for an issue no table holds (Trace_FPS windows: janky_frames has
// frames, not windows).
bool MatrixIssueRow(const MatrixIssue& issue, std::string* table, std::string* row);
std::string MatrixSessionId(const MatrixIssue& issue);

class RowBuilder {
 public:
  explicit RowBuilder(RowIdentity identity, uint64_t slow_message_ns = 100'000'000);

  // `counters`: the session's loss counters now (they only grow; a snapshot's own may not).
  std::vector<TableRows> Rows(const Report& report, const std::vector<MessageInterval>& intervals,
                              const Stats& counters, bool final, uint64_t settle_ns = 1'000'000'000);
  const RowIdentity& identity() const { return id_; }

 private:
  uint64_t WallNs(uint64_t monotonic_ns) const;

  RowIdentity id_;
  uint64_t slow_message_ns_;
  uint64_t watermark_ns_ = 0;  // records ending at or before it were taken
  bool session_row_ = false;   // the running session's row was sent
  bool cold_startup_ = false;  // the cold startup's row was sent
  size_t warm_starts_ = 0;
  Stats counters_;  // data-quality values already sent
};

}  // namespace looptrace
