// The process behind `looptrace attach`: background sessions (live_session.h) on one loop
// (event_loop.h) with their control sockets (control_server.h), the Prometheus endpoint
// (metrics_server.h) and the ClickHouse sink (clickhouse_sink.h). A session ends when its
// target exits, when `detach` asks, or when the daemon gets SIGINT/SIGTERM; it then writes
// its final report, sends its last rows, removes its socket and leaves a tombstone saying
// where the report went. The daemon exits once no session is left.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/export/clickhouse_sink.h"
#include "loader/live/control_server.h"
#include "loader/live/live_session.h"
#include "loader/live/metrics_server.h"
#include "loader/session/event_loop.h"
#include "looptrace/report/clickhouse_rows.h"
#include "looptrace/report/live_status.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct DaemonOptions {
  std::optional<MetricsAddress> metrics;
  std::optional<ClickHouseOptions> clickhouse;
  double clickhouse_interval_s = 10;
  uint64_t clickhouse_slow_ns = 100'000'000;
  std::string host;      // label and ClickHouse column (default: the hostname)
  std::string build;     // ClickHouse column (default: the target's GNU build id)
  std::string log_path;  // shown by `sessions` ("" = stderr)
};

// The `status` body: {"session": SUMMARY, "status": LIVE STATUS}.
Result<std::pair<SessionSummary, LiveStatus>> ParseStatusBody(std::string_view body);

class Daemon {
 public:
  // Binds the metrics address and starts the ClickHouse sink (errors before any attach).
  static Result<std::unique_ptr<Daemon>> Create(const DaemonOptions& options, int signal_fd);
  ~Daemon();

  // Claims pid's control socket before its probes are attached: a pid with a session fails
  // here, untouched.
  Result<void> Reserve(pid_t pid);
  // Gives up a reservation (its attach failed): the socket goes away.
  void Release(pid_t pid);
  // A session attached to a reserved pid joins the loop.
  Result<void> Add(std::unique_ptr<LiveSession> session);
  // Until every session ended. The exit status: 0, or the code of a final report that
  // could not be written.
  int Run();

  std::string metrics_url() const { return metrics_ ? metrics_->url() : ""; }

 private:
  struct Entry {
    std::unique_ptr<LiveSession> session;
    std::unique_ptr<ControlServer> control;
    std::optional<RowBuilder> rows;
    std::string end_reason;  // set: end it after this drain
  };
  Daemon() = default;
  ControlResponse Handle(pid_t pid, const ControlRequest& request);
  SessionSummary Summary(const Entry& entry, uint64_t now_ns) const;
  std::string End(Entry& entry, const std::string& reason, Result<void>* written);
  void Flush(uint64_t now_ns);
  std::string Metrics(bool openmetrics);

  DaemonOptions options_;
  int signal_fd_ = -1;
  std::unique_ptr<EventLoop> loop_;
  std::map<pid_t, Entry> entries_;
  std::vector<std::unique_ptr<ControlServer>> closing_;  // ended sessions' sockets, answering
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<ClickHouseSink> clickhouse_;
  uint64_t next_flush_ns_ = 0;
  bool stopping_ = false;
  int exit_code_ = 0;
};

// The host name labels and rows use.
std::string HostName();
// The GNU build id of the executable of `pid` ("" if none).
std::string ExecutableBuildId(pid_t pid);

}  // namespace looptrace::loader
