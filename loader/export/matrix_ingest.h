// Writes Matrix issues (`looptrace report ISSUES --clickhouse URL`) into the ClickHouse tables
// looptrace's own sessions use (clickhouse_rows.h: MatrixIssueRow), synchronously, in batches.
// Idempotent: each issue's row carries session_id "matrix:<content hash>"; before each insert
// the batch's ids already in the table are asked for and left out, so ingesting the same
// issues again (a file sent twice, overlapping days) adds nothing. ClickHouse 18.16 (the
// tables' minimum) has no insert deduplication token for plain MergeTree tables, and the
// tables stay MergeTree (a ReplacingMergeTree would change what live sessions' rows mean).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loader/export/clickhouse_sink.h"
#include "looptrace/report/matrix_issues.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct MatrixIngestCounts {
  uint64_t inserted = 0;         // rows written
  uint64_t already_present = 0;  // issues ingested before: left out
  uint64_t no_table = 0;         // issues no table holds (Trace_FPS windows)
};

class MatrixClickHouseWriter {
 public:
  explicit MatrixClickHouseWriter(ClickHouseOptions options, size_t batch_rows = 5000)
      : options_(std::move(options)), batch_rows_(batch_rows) {}

  // Queues the issue's row; sends a table's batch once it is full. The first error stops
  // the writer (later calls return it again).
  Result<void> Add(const MatrixIssue& issue);
  // Sends what is queued.
  Result<void> Flush();
  const MatrixIngestCounts& counts() const { return counts_; }

 private:
  struct Pending {
    std::vector<std::string> ids;
    std::vector<std::string> rows;
  };
  Result<void> Send(const std::string& table, Pending& pending);
  Result<std::string> Query(const std::string& sql, std::string_view body = {});

  ClickHouseOptions options_;
  size_t batch_rows_;
  std::map<std::string, Pending> pending_;
  MatrixIngestCounts counts_;
  std::optional<Error> failed_;
};

}  // namespace looptrace::loader
