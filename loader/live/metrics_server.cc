#include "loader/live/metrics_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "looptrace/report/metrics_text.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

// One client: its request coming in, then its answer going out.
struct Connection {
  UniqueFd fd;
  uint64_t accepted_ms = 0;
  std::string in;
  std::string out;  // set: the request was read
  size_t sent = 0;
};

std::string Answer(int status, std::string_view reason, std::string_view content_type, std::string_view body) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
                     reason, content_type, body.size(), body);
}

// The value of header `name` (lower case) in a request head, "" if absent.
std::string HeaderValue(std::string_view head, std::string_view name) {
  for (size_t pos = head.find('\n'); pos != std::string_view::npos; pos = head.find('\n', pos + 1)) {
    std::string_view line = head.substr(pos + 1, head.find('\n', pos + 1) - pos - 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < colon; ++i) same = same && std::tolower(static_cast<unsigned char>(line[i])) == name[i];
    if (!same) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.remove_suffix(1);
    return std::string(value);
  }
  return {};
}

}  // namespace

struct MetricsServer::Impl {
  MetricsAddress address;
  EventLoop* loop = nullptr;
  Render render;
  UniqueFd listener;
  UniqueFd ticker;  // every 100 ms while a connection is open: those past their deadline close
  std::map<int, Connection> connections;

  void Accept() {
    for (;;) {
      UniqueFd fd(accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd) return;  // EAGAIN (none left), or a client that gave up already
      if (connections.size() >= kMaxMetricsConnections && !EvictOneWaiting()) continue;  // all busy answering
      const int raw = fd.get();
      auto added = loop->Add(raw, EPOLLIN | EPOLLRDHUP, [this, raw](uint32_t events) { OnReady(raw, events); });
      if (!added) continue;
      Connection& c = connections[raw];
      c.fd = std::move(fd);
      c.accepted_ms = NowMs();
      if (connections.size() == 1) Tick(true);
    }
  }

  // The deadline check runs only while there is something to check: an idle daemon sleeps.
  void Tick(bool on) {
    itimerspec every{};
    if (on) every.it_interval.tv_nsec = every.it_value.tv_nsec = 100'000'000;
    timerfd_settime(ticker.get(), 0, &every, nullptr);
  }

  // At the cap: the oldest connection still without a full request makes room.
  bool EvictOneWaiting() {
    auto oldest = connections.end();
    for (auto it = connections.begin(); it != connections.end(); ++it)
      if (it->second.out.empty() &&
          (oldest == connections.end() || it->second.accepted_ms < oldest->second.accepted_ms))
        oldest = it;
    if (oldest == connections.end()) return false;
    Close(oldest->first);
    return true;
  }

  void Close(int fd) {
    loop->Remove(fd);
    connections.erase(fd);
    if (connections.empty()) Tick(false);
  }

  void OnReady(int fd, uint32_t events) {
    auto it = connections.find(fd);
    if (it == connections.end()) return;
    Connection& c = it->second;
    if (c.out.empty()) {
      char buffer[4096];
      for (;;) {
        const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
        if (n > 0) {
          c.in.append(buffer, static_cast<size_t>(n));
          if (c.in.size() > kMaxMetricsRequestBytes) break;
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return Close(fd);
        break;
      }
      if (!Respond(c)) {
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) Close(fd);
        return;
      }
    }
    Flush(fd);
  }

  // Makes the answer once the request's head is in; false while it is not.
  bool Respond(Connection& c) {
    if (c.in.size() > kMaxMetricsRequestBytes) {
      c.out = Answer(431, "Request Header Fields Too Large", "text/plain", "request head too large\n");
      return true;
    }
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) end = c.in.find("\n\n");
    if (end == std::string::npos) return false;
    const std::string_view head(c.in.data(), end);
    const std::string_view request_line = head.substr(0, head.find_first_of("\r\n"));
    const size_t space = request_line.find(' ');
    const size_t space2 = request_line.find(' ', space + 1);
    if (space == std::string_view::npos || space2 == std::string_view::npos ||
        !request_line.substr(space2 + 1).starts_with("HTTP/1.")) {
      c.out = Answer(400, "Bad Request", "text/plain", "not an HTTP request\n");
      return true;
    }
    const std::string_view method = request_line.substr(0, space);
    std::string_view target = request_line.substr(space + 1, space2 - space - 1);
    target = target.substr(0, target.find('?'));
    if (method != "GET" && method != "HEAD") {
      c.out = Answer(405, "Method Not Allowed", "text/plain", "only GET\n");
    } else if (target == "/metrics") {
      const bool openmetrics = WantsOpenMetrics(HeaderValue(head, "accept"));
      c.out = Answer(200, "OK", openmetrics ? kOpenMetricsContentType : kPrometheusContentType, render(openmetrics));
    } else if (target == "/") {
      c.out = Answer(200, "OK", "text/plain", "looptrace: metrics at /metrics\n");
    } else {
      c.out = Answer(404, "Not Found", "text/plain", "looptrace: metrics at /metrics\n");
    }
    if (method == "HEAD") c.out.resize(c.out.find("\r\n\r\n") + 4);
    c.in.clear();
    c.in.shrink_to_fit();
    return true;
  }

  // Sends what the socket takes now; the rest when it is writable again.
  void Flush(int fd) {
    Connection& c = connections.at(fd);
    while (c.sent < c.out.size()) {
      const ssize_t n = send(fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!loop->Modify(fd, EPOLLOUT | EPOLLRDHUP)) Close(fd);
        return;
      }
      return Close(fd);
    }
    shutdown(fd, SHUT_WR);
    Close(fd);
  }

  void Expire() {
    uint64_t ticks;
    (void)!read(ticker.get(), &ticks, sizeof(ticks));
    const uint64_t now = NowMs();
    std::vector<int> late;
    for (const auto& [fd, c] : connections)
      if (now - c.accepted_ms >= kMetricsRequestDeadlineMs) late.push_back(fd);
    for (int fd : late) Close(fd);
  }
};

Result<MetricsAddress> ParseMetricsAddress(std::string_view text) {
  auto bad = [&] {
    return MakeError(fmt::format("--metrics: '{}' is not ADDRESS:PORT", text), ExitCode::kUsage,
                     "examples: :9464 (127.0.0.1), 0.0.0.0:9464 (every interface), [::1]:9464");
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
  a.host = host.empty() ? "127.0.0.1" : std::string(host);  // never the network unless asked
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
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.host.c_str(), std::to_string(address.port).c_str(), &hints, &found) != 0 || !found)
    return MakeError(fmt::format("metrics address {}:{} is not valid", address.host, address.port), ExitCode::kUsage);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
  // SO_REUSEADDR for a restart while old connections linger, never SO_REUSEPORT: a second
  // daemon cannot share the port.
  UniqueFd listener(socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener) return SystemError("socket", errno, ExitCode::kEndpoint);
  int yes = 1;
  setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  if (bind(listener.get(), found->ai_addr, found->ai_addrlen) != 0 || listen(listener.get(), 64) != 0) {
    const int err = errno;
    std::string hint = err == EADDRINUSE      ? "another program (or looptrace daemon) serves that port: pick another"
                       : err == EADDRNOTAVAIL ? "that address is not one of this host's"
                                              : "";
    return SystemError(fmt::format("cannot serve metrics on {}:{}", address.host, address.port), err,
                       ExitCode::kEndpoint, hint);
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.address = address;
  impl.loop = &loop;
  impl.render = std::move(render);
  impl.listener = std::move(listener);
  impl.ticker = UniqueFd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!impl.ticker) return SystemError("timerfd_create", errno);
  RETURN_IF_ERROR(loop.Add(impl.listener.get(), EPOLLIN, [&impl](uint32_t) { impl.Accept(); }));
  if (auto ok = loop.Add(impl.ticker.get(), EPOLLIN, [&impl](uint32_t) { impl.Expire(); }); !ok) {
    loop.Remove(impl.listener.get());
    return std::unexpected(ok.error());
  }
  return server;
}

MetricsServer::~MetricsServer() {
  if (!impl_) return;
  while (!impl_->connections.empty()) impl_->Close(impl_->connections.begin()->first);
  impl_->loop->Remove(impl_->listener.get());
  impl_->loop->Remove(impl_->ticker.get());
}

std::string MetricsServer::url() const {
  const auto& a = impl_->address;
  const bool v6 = a.host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/metrics", v6 ? "[" : "", a.host, v6 ? "]" : "", a.port);
}

}  // namespace looptrace::loader
