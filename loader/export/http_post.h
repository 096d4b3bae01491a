// One HTTP/1.1 POST to a server looptrace does not control (ClickHouse), bounded in every
// way a server could abuse: one deadline for the whole exchange (connect, send, the answer),
// at most a few KiB of the answer's head and `max_body` bytes of its body kept (the rest is
// never read), an answer that is not HTTP named as such, and a cancel descriptor that ends
// it at once (the daemon's stop). cpp-httplib bounds each read, not the exchange: a server
// dripping a byte every few seconds held it forever, and it buffered any body whole.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::loader {

struct HttpRequest {
  std::string host;  // a name or a numeric address
  int port = 80;
  std::string target;  // "/?query=..."
  std::vector<std::pair<std::string, std::string>> headers;
  std::string_view body;
  std::string content_type = "application/octet-stream";
};

struct HttpAnswer {
  int status = 0;
  std::string body;  // at most max_body bytes of it
  bool body_cut = false;
};

// Largest answer head (status line and headers) accepted.
inline constexpr size_t kMaxHttpHeadBytes = 16 * 1024;

// Sends `request` and reads the answer until `deadline`. `cancel_fd` (-1: none) readable
// ends the exchange with an error. Errors name the server and the cause: "cannot connect to
// H:P: Connection refused", "H:P did not answer within 10.0 s", "H:P answered something
// that is not HTTP", "H:P sent an answer head over 16 KiB".
Result<HttpAnswer> HttpPost(const HttpRequest& request, std::chrono::steady_clock::time_point deadline, size_t max_body,
                            int cancel_fd = -1);

// "%XX" for every byte outside A-Z a-z 0-9 - . _ ~ (a query string's value).
std::string UrlEncode(std::string_view text);
std::string Base64(std::string_view bytes);

}  // namespace looptrace::loader
