#include "loader/live/metrics_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "looptrace/report/metrics_text.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

constexpr int kScrapeTimeoutMs = 10'000;

// One scrape waiting for the loop.
struct Scrape {
  bool openmetrics = false;
  bool done = false;
  std::string text;
};

}  // namespace

struct MetricsServer::Impl {
  MetricsAddress address;
  EventLoop* loop = nullptr;
  Render render;
  httplib::Server server;
  std::thread thread;
  UniqueFd wake;
  std::mutex mutex;
  std::condition_variable done;
  std::deque<std::shared_ptr<Scrape>> pending;
  bool stopping = false;

  // On the HTTP thread.
  std::optional<std::string> Ask(bool openmetrics) {
    auto scrape = std::make_shared<Scrape>();
    scrape->openmetrics = openmetrics;
    std::unique_lock lock(mutex);
    if (stopping) return std::nullopt;
    pending.push_back(scrape);
    uint64_t one = 1;
    (void)!write(wake.get(), &one, sizeof(one));
    done.wait_for(lock, std::chrono::milliseconds(kScrapeTimeoutMs), [&] { return scrape->done || stopping; });
    if (!scrape->done) return std::nullopt;
    return std::move(scrape->text);
  }

  // On the loop's thread.
  void Serve() {
    uint64_t count;
    (void)!read(wake.get(), &count, sizeof(count));
    std::deque<std::shared_ptr<Scrape>> batch;
    {
      std::lock_guard lock(mutex);
      batch.swap(pending);
    }
    for (auto& scrape : batch) {
      std::string text = render(scrape->openmetrics);
      std::lock_guard lock(mutex);
      scrape->text = std::move(text);
      scrape->done = true;
    }
    done.notify_all();
  }
};

Result<MetricsAddress> ParseMetricsAddress(std::string_view text) {
  auto bad = [&] {
    return MakeError(fmt::format("--metrics: '{}' is not ADDRESS:PORT", text), ExitCode::kUsage,
                     "examples: 127.0.0.1:9464, :9464 (every interface), [::1]:9464");
  };
  MetricsAddress a;
  std::string_view host, port;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') return bad();
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad();
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad();  // IPv6 needs brackets
  }
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), a.port);
  if (ec != std::errc() || ptr != port.data() + port.size() || a.port < 1 || a.port > 65535) return bad();
  a.host = host.empty() ? "0.0.0.0" : std::string(host);
  // Resolve now: "localhost" and friends become a numeric address, anything else fails here.
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(a.host.c_str(), std::to_string(a.port).c_str(), &hints, &found) != 0 || !found)
    return MakeError(fmt::format("--metrics: cannot resolve '{}'", a.host), ExitCode::kUsage);
  char numeric[INET6_ADDRSTRLEN] = {};
  getnameinfo(found->ai_addr, found->ai_addrlen, numeric, sizeof(numeric), nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(found);
  a.host = numeric;
  return a;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(const MetricsAddress& address, EventLoop& loop,
                                                            Render render) {
  // Bind once ourselves for a clear error (httplib only says "false"), without SO_REUSEPORT
  // so a second daemon cannot share the port.
  {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (getaddrinfo(address.host.c_str(), std::to_string(address.port).c_str(), &hints, &found) != 0 || !found)
      return MakeError(fmt::format("metrics address {}:{} is not valid", address.host, address.port), ExitCode::kUsage);
    UniqueFd probe(socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int yes = 1;
    setsockopt(probe.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    const int bound = probe ? bind(probe.get(), found->ai_addr, found->ai_addrlen) : -1;
    const int err = errno;
    freeaddrinfo(found);
    if (bound != 0) {
      std::string hint = err == EADDRINUSE      ? "another program (or looptrace daemon) serves that port: pick another"
                         : err == EADDRNOTAVAIL ? "that address is not one of this host's"
                                                : "";
      return SystemError(fmt::format("cannot serve metrics on {}:{}", address.host, address.port), err,
                         ExitCode::kEndpoint, hint);
    }
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.address = address;
  impl.loop = &loop;
  impl.render = std::move(render);
  impl.wake = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl.wake) return SystemError("eventfd", errno);
  RETURN_IF_ERROR(loop.Add(impl.wake.get(), EPOLLIN, [&impl](uint32_t) { impl.Serve(); }));

  auto& http = impl.server;
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_read_timeout(5);
  http.set_write_timeout(5);
  http.set_payload_max_length(4096);
  http.Get("/metrics", [&impl](const httplib::Request& request, httplib::Response& response) {
    const bool openmetrics = WantsOpenMetrics(request.get_header_value("Accept"));
    auto text = impl.Ask(openmetrics);
    if (!text) {
      response.status = 503;
      response.set_content("looptrace is busy or stopping\n", "text/plain");
      return;
    }
    response.set_content(*text, std::string(openmetrics ? kOpenMetricsContentType : kPrometheusContentType));
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("looptrace: metrics at /metrics\n", "text/plain");
  });
  if (!http.bind_to_port(address.host, address.port))
    return SystemError(fmt::format("cannot serve metrics on {}:{}", address.host, address.port),
                       errno ? errno : EADDRINUSE, ExitCode::kEndpoint);
  impl.thread = std::thread([&http] { http.listen_after_bind(); });
  return server;
}

MetricsServer::~MetricsServer() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->done.notify_all();
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->loop->Remove(impl_->wake.get());
}

std::string MetricsServer::url() const {
  const auto& a = impl_->address;
  const bool v6 = a.host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/metrics", v6 ? "[" : "", a.host, v6 ? "]" : "", a.port);
}

}  // namespace looptrace::loader
