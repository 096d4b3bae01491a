// The Prometheus endpoint of a looptrace process (`attach --metrics ADDR:PORT`): GET
// /metrics served on the daemon's loop itself, non-blocking, so a scrape reads the sessions
// on the thread that owns them and no client can hold the loop. Every connection has one
// deadline for its request and its answer; at most kMaxMetricsConnections are open, and a
// new one at the cap closes the oldest that has not sent its request yet (clients that
// connect and trickle or say nothing cannot keep a scraper out). One request per
// connection (Connection: close). `:PORT` means 127.0.0.1: exposing the metrics to the
// network takes an explicit address.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "loader/session/event_loop.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct MetricsAddress {
  std::string host;  // numeric IPv4 or IPv6 ("127.0.0.1" for ":PORT")
  int port = 0;
};
// "127.0.0.1:9464", ":9464" (127.0.0.1), "0.0.0.0:9464" (every interface), "[::1]:9464",
// "localhost:9464".
Result<MetricsAddress> ParseMetricsAddress(std::string_view text);

// Connections open at once, at most.
inline constexpr size_t kMaxMetricsConnections = 32;
// From accept to the last byte of the answer.
inline constexpr uint64_t kMetricsRequestDeadlineMs = 5'000;
// A request's head (request line and headers), at most.
inline constexpr size_t kMaxMetricsRequestBytes = 8 * 1024;

class MetricsServer {
 public:
  // Makes the text of one scrape, on the loop's thread.
  using Render = std::function<std::string(bool openmetrics)>;

  // Binds now (a port in use is an error here, kEndpoint) and serves from `loop`.
  static Result<std::unique_ptr<MetricsServer>> Start(const MetricsAddress& address, EventLoop& loop, Render render);
  ~MetricsServer();
  std::string url() const;

  struct Impl;

 private:
  MetricsServer() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace looptrace::loader
