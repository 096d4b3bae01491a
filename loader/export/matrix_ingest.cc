#include "loader/export/matrix_ingest.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

#include "loader/export/http_post.h"
#include "looptrace/report/clickhouse_rows.h"

namespace looptrace::loader {

Result<std::string> MatrixClickHouseWriter::Query(const std::string& sql, std::string_view body) {
  HttpRequest request;
  request.host = options_.host;
  request.port = options_.port;
  request.target = "/?query=" + UrlEncode(sql);
  request.content_type = body.empty() ? "text/plain" : "application/x-ndjson";
  request.body = body;
  if (!options_.user.empty())
    request.headers.emplace_back("Authorization", "Basic " + Base64(options_.user + ":" + options_.password));
  // The ids asked for come back whole (a batch's worth of 25-byte lines).
  const size_t max_answer = std::max<size_t>(options_.max_answer_bytes, batch_rows_ * 32 + 4096);
  ASSIGN_OR_RETURN(HttpAnswer answer,
                   HttpPost(request, std::chrono::steady_clock::now() + options_.timeout, max_answer));
  if (answer.status != 200)
    return MakeError(fmt::format("ClickHouse {}:{} refused \"{}\" (HTTP {}): {}", options_.host, options_.port,
                                 sql.substr(0, 80), answer.status, answer.body.substr(0, 300)));
  if (answer.body_cut)
    return MakeError(fmt::format("ClickHouse {}:{}: an answer too long", options_.host, options_.port));
  return std::move(answer.body);
}

Result<void> MatrixClickHouseWriter::Send(const std::string& table, Pending& pending) {
  if (pending.rows.empty()) return {};
  // The ids (hex, made here) need no escaping beyond the quotes.
  std::string in;
  for (const std::string& id : pending.ids) in += fmt::format("{}'{}'", in.empty() ? "" : ",", id);
  ASSIGN_OR_RETURN(std::string present,
                   Query(fmt::format("SELECT DISTINCT session_id FROM {}.{} WHERE session_id IN ({}) FORMAT TSV",
                                     options_.database, table, in)));
  std::set<std::string> known;
  std::istringstream lines(present);
  for (std::string line; std::getline(lines, line);) known.insert(line);
  std::string body;
  uint64_t rows = 0;
  for (size_t i = 0; i < pending.rows.size(); ++i) {
    if (known.contains(pending.ids[i])) {
      ++counts_.already_present;
      continue;
    }
    body += pending.rows[i];
    body += '\n';
    ++rows;
  }
  pending.ids.clear();
  pending.rows.clear();
  if (!rows) return {};
  ASSIGN_OR_RETURN(std::string ignored,
                   Query(fmt::format("INSERT INTO {}.{} FORMAT JSONEachRow", options_.database, table), body));
  counts_.inserted += rows;
  return {};
}

Result<void> MatrixClickHouseWriter::Add(const MatrixIssue& issue) {
  if (failed_) return std::unexpected(*failed_);
  std::string table, row;
  if (!MatrixIssueRow(issue, &table, &row)) {
    ++counts_.no_table;
    return {};
  }
  Pending& pending = pending_[table];
  pending.ids.push_back(MatrixSessionId(issue));
  pending.rows.push_back(std::move(row));
  if (pending.rows.size() < batch_rows_) return {};
  if (auto sent = Send(table, pending); !sent) {
    failed_ = sent.error();
    return sent;
  }
  return {};
}

Result<void> MatrixClickHouseWriter::Flush() {
  if (failed_) return std::unexpected(*failed_);
  for (auto& [table, pending] : pending_) {
    if (auto sent = Send(table, pending); !sent) {
      failed_ = sent.error();
      return sent;
    }
  }
  return {};
}

}  // namespace looptrace::loader
