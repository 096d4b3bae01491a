// The Prometheus exposition of background sessions: every session of the process as
// samples labelled with its target (pid, comm, profile, host), in the OpenMetrics text
// format (what Prometheus asks for first) or the classic Prometheus text format 0.0.4.
// Pure: built from LiveStatus values, tested without a server.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/report/live_status.h"

namespace looptrace {

struct MetricsSession {
  std::string host;
  LiveStatus status;
};

// The daemon's exporters (ClickHouse), shown once per process.
struct ExporterCounters {
  bool clickhouse = false;
  uint64_t rows_sent = 0;
  uint64_t rows_dropped = 0;
  uint64_t rows_queued = 0;
  uint64_t insert_failures = 0;
};

inline constexpr std::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Whether an Accept header prefers OpenMetrics (Prometheus 2.x sends it first).
bool WantsOpenMetrics(std::string_view accept);

std::string RenderMetrics(const std::vector<MetricsSession>& sessions, const ExporterCounters& exporters,
                          const std::string& host, bool openmetrics);

// A label value with terminal escapes made visible (as in every other output), then \, "
// and newlines escaped (valid UTF-8 in, as the sessions make it).
std::string EscapeLabelValue(std::string_view value);

}  // namespace looptrace
