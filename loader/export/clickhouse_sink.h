// Sends report rows (clickhouse_rows.h) to ClickHouse's HTTP interface from a thread of its
// own: one INSERT ... FORMAT JSONEachRow per table and batch, retried with exponential
// backoff while ClickHouse is unreachable or failing, never more than a bounded number of
// bytes queued; rows that do not fit, or that ClickHouse keeps refusing, are dropped and
// counted, and each distinct reason is logged once. The session never waits for it, and
// neither does the daemon's end: every request has one deadline and a bounded answer
// (http_post.h), and Stop() cuts a request still running when its time is up.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "looptrace/report/clickhouse_rows.h"
#include "looptrace/report/metrics_text.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

struct ClickHouseOptions {
  std::string host;
  int port = 8123;
  std::string database = "looptrace";
  std::string user;
  std::string password;
  size_t max_queued_bytes = 16u << 20;
  int max_attempts = 6;  // per batch: 0.5 + 1 + 2 + 4 + 8 s of backoff between them
  std::chrono::milliseconds first_backoff{500};
  std::chrono::milliseconds timeout{10'000};  // the whole INSERT: connect, send, answer
  size_t max_answer_bytes = 64 * 1024;        // of ClickHouse's answer kept (the rest is not read)
  bool password_in_url = false;               // the URL carried one (visible in argv until hidden)
};

// "http://[user[:password]@]host[:port][/][?database=NAME&user=NAME]" (port 8123, database
// looptrace). A password belongs in a file or the environment (cmd_attach.cc), not in argv.
Result<ClickHouseOptions> ParseClickHouseUrl(std::string_view url);

// Whether ClickHouse's error text says retrying cannot help (no such table or column,
// rows it cannot parse, no such database, wrong password).
bool PermanentClickHouseError(int http_status, std::string_view body);

class ClickHouseSink {
 public:
  static Result<std::unique_ptr<ClickHouseSink>> Start(const ClickHouseOptions& options);
  ~ClickHouseSink();

  // From the daemon's loop; never blocks on the network.
  void Enqueue(std::vector<TableRows> tables);
  ExporterCounters counters() const;
  std::string last_error() const;
  std::string url() const;
  // Tries to send what is queued within `timeout`, then drops (and counts) the rest.
  void Stop(std::chrono::milliseconds timeout);

 private:
  struct Batch {
    std::string table;
    std::string body;
    size_t rows = 0;
    int attempts = 0;
  };
  ClickHouseSink() = default;
  void Run();
  // Empty: sent. Else the reason it failed; `permanent` when retrying cannot help.
  std::string Send(const Batch& batch, bool* permanent);
  void Failed(const std::string& reason);

  ClickHouseOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Batch> queue_;
  size_t queued_bytes_ = 0;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point deadline_;
  ExporterCounters counters_;
  std::string last_error_;
  std::vector<std::string> reasons_logged_;
  bool failing_ = false;
  bool finished_ = false;                // Run() returned
  std::condition_variable finished_cv_;  // ... told to Stop()
  UniqueFd cancel_;                      // readable: a request still running ends now
  std::thread thread_;
};

}  // namespace looptrace::loader
