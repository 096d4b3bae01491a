#include "loader/export/http_post.h"

#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "looptrace/util/text_safety.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {
namespace {

using Clock = std::chrono::steady_clock;

enum class Ready { kYes, kTimeout, kCancelled, kError };

// Waits until `fd` is ready for `events`, the deadline passes or `cancel_fd` is readable.
Ready WaitFor(int fd, short events, Clock::time_point deadline, int cancel_fd) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Ready::kTimeout;
    pollfd fds[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
    const int n = poll(fds, cancel_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 1'000'000)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Ready::kError;
    }
    if (cancel_fd >= 0 && (fds[1].revents & POLLIN)) return Ready::kCancelled;
    if (fds[0].revents) return Ready::kYes;
  }
}

// One exchange's state and its error messages.
class Exchange {
 public:
  Exchange(const HttpRequest& request, Clock::time_point deadline, int cancel_fd)
      : request_(request), deadline_(deadline), cancel_fd_(cancel_fd), start_(Clock::now()) {}

  Result<void> Connect() {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const int gai = getaddrinfo(request_.host.c_str(), std::to_string(request_.port).c_str(), &hints, &found);
    if (gai != 0 || !found) return MakeError(fmt::format("cannot resolve {}: {}", request_.host, gai_strerror(gai)));
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
    int last_error = ECONNREFUSED;
    for (addrinfo* a = found; a; a = a->ai_next) {
      UniqueFd fd(socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!fd) {
        last_error = errno;
        continue;
      }
      if (connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
          last_error = errno;
          continue;
        }
        RETURN_IF_ERROR(Wait(fd.get(), POLLOUT, "connect"));
        socklen_t len = sizeof(last_error);
        if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &last_error, &len) != 0) last_error = errno;
        if (last_error != 0) continue;
      }
      fd_ = std::move(fd);
      return {};
    }
    return SystemError(fmt::format("cannot connect to {}", Server()), last_error);
  }

  Result<void> Send() {
    std::string head = fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
                                   request_.target, HostHeader(), request_.content_type, request_.body.size());
    for (const auto& [name, value] : request_.headers) head += fmt::format("{}: {}\r\n", name, value);
    head += "Connection: close\r\n\r\n";
    RETURN_IF_ERROR(SendAll(head));
    return SendAll(request_.body);
  }

  Result<HttpAnswer> Receive(size_t max_body) {
    HttpAnswer answer;
    std::string data;
    size_t head_end = std::string::npos;
    while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
      if (data.size() > kMaxHttpHeadBytes)
        return MakeError(fmt::format("{} sent an answer head over {} KiB", Server(), kMaxHttpHeadBytes / 1024));
      if (!data.empty() && !LooksLikeHttp(data)) return NotHttp(data);
      ASSIGN_OR_RETURN(bool more, ReadSome(&data, kMaxHttpHeadBytes + 4 - data.size(), "answer"));
      if (!more) {
        if (data.empty()) return MakeError(fmt::format("{} closed the connection without answering", Server()));
        if (!LooksLikeHttp(data)) return NotHttp(data);
        return MakeError(fmt::format("{} closed the connection in the middle of its answer's head", Server()));
      }
    }
    const std::string_view head(data.data(), head_end);
    if (!LooksLikeHttp(head) || head.size() < 12 || head[8] != ' ') return NotHttp(data);
    auto [ptr, ec] = std::from_chars(head.data() + 9, head.data() + 12, answer.status);
    if (ec != std::errc() || ptr != head.data() + 12 || answer.status < 100) return NotHttp(data);
    std::string rest = data.substr(head_end + 4);
    const std::string length = HeaderValue(head, "content-length");
    const bool chunked = Lower(HeaderValue(head, "transfer-encoding")).find("chunked") != std::string::npos;
    if (chunked) {
      RETURN_IF_ERROR(ReadChunked(std::move(rest), max_body, &answer));
    } else if (!length.empty()) {
      uint64_t size = 0;
      auto [end, err] = std::from_chars(length.data(), length.data() + length.size(), size);
      if (err != std::errc() || end != length.data() + length.size()) return NotHttp(data);
      answer.body_cut = size > max_body;
      const size_t want = static_cast<size_t>(std::min<uint64_t>(size, max_body));
      answer.body = std::move(rest);
      while (answer.body.size() < want) {
        ASSIGN_OR_RETURN(bool more, ReadSome(&answer.body, want - answer.body.size(), "answer"));
        if (!more) break;
      }
      if (answer.body.size() > want) answer.body.resize(want);
    } else {
      // Until the server closes (Connection: close), at most max_body bytes.
      answer.body = std::move(rest);
      while (answer.body.size() <= max_body) {
        ASSIGN_OR_RETURN(bool more, ReadSome(&answer.body, max_body + 1 - answer.body.size(), "answer"));
        if (!more) break;
      }
      answer.body_cut = answer.body.size() > max_body;
      if (answer.body_cut) answer.body.resize(max_body);
    }
    return answer;
  }

 private:
  std::string Server() const {
    return request_.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", request_.host, request_.port)
                                                        : fmt::format("{}:{}", request_.host, request_.port);
  }
  std::string HostHeader() const { return Server(); }

  // Whether `data` is, or begins like, "HTTP/1.".
  static bool LooksLikeHttp(std::string_view data) {
    constexpr std::string_view kPrefix = "HTTP/1.";
    const size_t n = std::min(data.size(), kPrefix.size());
    return data.substr(0, n) == kPrefix.substr(0, n);
  }

  std::unexpected<Error> NotHttp(std::string_view data) const {
    return MakeError(fmt::format("{} answered something that is not HTTP (it begins '{}')", Server(),
                                 EscapeForTerminal(data.substr(0, 40), 40)));
  }

  static std::string Lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  }

  // The value of header `name` (lower case) in `head`, trimmed; "" if absent.
  static std::string HeaderValue(std::string_view head, std::string_view name) {
    size_t pos = head.find("\r\n");
    while (pos != std::string_view::npos) {
      const size_t start = pos + 2;
      const size_t end = std::min(head.find("\r\n", start), head.size());
      std::string_view line = head.substr(start, end - start);
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos && Lower(std::string(line.substr(0, colon))) == name) {
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
        return std::string(value);
      }
      pos = end < head.size() ? end : std::string_view::npos;
    }
    return {};
  }

  Result<void> ReadChunked(std::string data, size_t max_body, HttpAnswer* answer) {
    size_t pos = 0;
    for (;;) {
      size_t line_end;
      while ((line_end = data.find("\r\n", pos)) == std::string::npos) {
        if (data.size() - pos > 64) return NotHttp(data.substr(pos));
        ASSIGN_OR_RETURN(bool more, ReadSome(&data, 4096, "answer"));
        if (!more) return {};  // what came is what there is
      }
      uint64_t size = 0;
      std::string_view line(data.data() + pos, line_end - pos);
      auto [end, err] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
      if (err != std::errc()) return NotHttp(line);
      pos = line_end + 2;
      if (size == 0) return {};
      const size_t room = max_body - answer->body.size();
      const size_t take = static_cast<size_t>(std::min<uint64_t>(size, room));
      while (data.size() - pos < take) {
        ASSIGN_OR_RETURN(bool more, ReadSome(&data, take - (data.size() - pos), "answer"));
        if (!more) {
          answer->body.append(data, pos, std::string::npos);
          return {};
        }
      }
      answer->body.append(data, pos, take);
      if (take < size) {
        answer->body_cut = true;
        return {};
      }
      pos += take;
      // The chunk's CRLF comes with the next size line's search.
      while (data.size() - pos < 2) {
        ASSIGN_OR_RETURN(bool more, ReadSome(&data, 2, "answer"));
        if (!more) return {};
      }
      pos += 2;
      data.erase(0, pos);
      pos = 0;
    }
  }

  // Appends up to `most` bytes; false when the server closed the connection.
  Result<bool> ReadSome(std::string* data, size_t most, std::string_view what) {
    char buffer[16384];
    for (;;) {
      const ssize_t n = recv(fd_.get(), buffer, std::min(sizeof(buffer), most), 0);
      if (n > 0) {
        data->append(buffer, static_cast<size_t>(n));
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return SystemError(fmt::format("{}: reading its {}", Server(), what), errno);
      RETURN_IF_ERROR(Wait(fd_.get(), POLLIN, what));
    }
  }

  Result<void> SendAll(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        return SystemError(fmt::format("{}: sending the request", Server()), errno);
      RETURN_IF_ERROR(Wait(fd_.get(), POLLOUT, "request"));
    }
    return {};
  }

  Result<void> Wait(int fd, short events, std::string_view what) {
    switch (WaitFor(fd, events, deadline_, cancel_fd_)) {
      case Ready::kYes:
        return {};
      case Ready::kCancelled:
        return MakeError(fmt::format("{}: stopped while waiting for the {}", Server(), what));
      case Ready::kError:
        return SystemError("poll", errno);
      case Ready::kTimeout:
        break;
    }
    const double seconds = std::chrono::duration<double>(deadline_ - start_).count();
    if (what == "connect") return MakeError(fmt::format("cannot connect to {} within {:.1f} s", Server(), seconds));
    return MakeError(
        fmt::format("{} did not finish the exchange within {:.1f} s (waiting for the {})", Server(), seconds, what));
  }

  const HttpRequest& request_;
  Clock::time_point deadline_;
  int cancel_fd_;
  Clock::time_point start_;
  UniqueFd fd_;
};

}  // namespace

Result<HttpAnswer> HttpPost(const HttpRequest& request, Clock::time_point deadline, size_t max_body, int cancel_fd) {
  Exchange exchange(request, deadline, cancel_fd);
  RETURN_IF_ERROR(exchange.Connect());
  RETURN_IF_ERROR(exchange.Send());
  return exchange.Receive(max_body);
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

}  // namespace looptrace::loader
