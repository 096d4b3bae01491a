// The protocol of a background session's control socket (version 1). The client sends one
// JSON line of at most kMaxRequestBytes,
//   {"v":1,"cmd":"status"}        cmd: info | status | snapshot | report | detach
//   {"v":1,"cmd":"report","format":"json"}
// and the daemon answers one JSON header line, then the body until it closes:
//   {"v":1,"ok":true}\n<body>
//   {"v":1,"ok":false,"error":"...","hint":"...","code":8}\n
// Who may connect is control_policy.h; the two ends are control_server.h and
// control_client.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "looptrace/util/result.h"

namespace looptrace::loader {

inline constexpr int kControlProtocolVersion = 1;
inline constexpr size_t kMaxRequestBytes = 4096;
inline constexpr uint64_t kRequestTimeoutMs = 5'000;
inline constexpr uint64_t kResponseTimeoutMs = 60'000;

struct ControlRequest {
  std::string command;  // info | status | snapshot | report | detach
  std::string format;   // report / snapshot: a renderer name; "" = text
};
Result<ControlRequest> ParseControlRequest(std::string_view line);
std::string FormatControlRequest(const ControlRequest& request);

struct ControlResponse {
  bool ok = true;
  std::string body;
  std::string error;  // when !ok
  std::string hint;
  int code = 1;  // an ExitCode
  static ControlResponse Fail(const Error& error);
};
// The header line and the body, as the daemon sends them.
std::string FormatControlResponse(const ControlResponse& response);
Result<ControlResponse> ParseControlResponse(std::string_view data);

// Monotonic milliseconds (request and answer deadlines).
uint64_t NowMs();

}  // namespace looptrace::loader
