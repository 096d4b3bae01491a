// The Prometheus endpoint of a looptrace process (`attach --metrics ADDR:PORT`): GET
// /metrics on cpp-httplib's server thread, the text made on the daemon's loop. The HTTP
// thread hands each scrape to the loop through an eventfd and waits for its text, so the
// sessions' state is only ever read by the loop's thread and no second loop exists.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "loader/session/event_loop.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct MetricsAddress {
  std::string host;  // numeric IPv4 or IPv6 ("0.0.0.0" for ":PORT")
  int port = 0;
};
// "127.0.0.1:9464", ":9464" (every interface), "[::1]:9464", "localhost:9464".
Result<MetricsAddress> ParseMetricsAddress(std::string_view text);

class MetricsServer {
 public:
  // Makes the text of one scrape, on the loop's thread.
  using Render = std::function<std::string(bool openmetrics)>;

  // Binds now (a port in use is an error here, kEndpoint), serves from a thread of its own.
  static Result<std::unique_ptr<MetricsServer>> Start(const MetricsAddress& address, EventLoop& loop, Render render);
  ~MetricsServer();
  std::string url() const;

  struct Impl;

 private:
  MetricsServer() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace looptrace::loader
