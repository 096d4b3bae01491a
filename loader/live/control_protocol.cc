#include "loader/live/control_protocol.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

namespace looptrace::loader {
namespace {

using nlohmann::json;

constexpr std::string_view kCommands[] = {"info", "status", "snapshot", "report", "detach"};

}  // namespace

uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

Result<ControlRequest> ParseControlRequest(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return MakeError("bad request: not a JSON object", ExitCode::kUsage);
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != kControlProtocolVersion)
    return MakeError(fmt::format("bad request: protocol version is not {}", kControlProtocolVersion), ExitCode::kUsage,
                     "the client and the daemon are different looptrace versions: detach and attach again");
  auto cmd = j.find("cmd");
  if (cmd == j.end() || !cmd->is_string()) return MakeError("bad request: no command", ExitCode::kUsage);
  ControlRequest request;
  request.command = cmd->get<std::string>();
  if (std::find(std::begin(kCommands), std::end(kCommands), request.command) == std::end(kCommands))
    return MakeError(fmt::format("bad request: unknown command '{}'", request.command.substr(0, 40)), ExitCode::kUsage);
  if (auto f = j.find("format"); f != j.end()) {
    if (!f->is_string() || f->get<std::string>().size() > 32)
      return MakeError("bad request: bad format", ExitCode::kUsage);
    request.format = f->get<std::string>();
  }
  return request;
}

std::string FormatControlRequest(const ControlRequest& request) {
  json j{{"v", kControlProtocolVersion}, {"cmd", request.command}};
  if (!request.format.empty()) j["format"] = request.format;
  return j.dump() + "\n";
}

ControlResponse ControlResponse::Fail(const Error& error) {
  ControlResponse r;
  r.ok = false;
  r.error = error.message;
  r.hint = error.hint;
  r.code = static_cast<int>(error.code);
  return r;
}

std::string FormatControlResponse(const ControlResponse& r) {
  json j{{"v", kControlProtocolVersion}, {"ok", r.ok}};
  if (!r.ok) {
    j["error"] = r.error;
    j["hint"] = r.hint;
    j["code"] = r.code;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n" + (r.ok ? r.body : "");
}

Result<ControlResponse> ParseControlResponse(std::string_view data) {
  const size_t eol = data.find('\n');
  if (eol == std::string_view::npos) return MakeError("the session closed the connection without an answer");
  json j = json::parse(data.substr(0, eol), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok") || !j["ok"].is_boolean())
    return MakeError("the session's answer is not understood");
  if (j.value("v", 0) != kControlProtocolVersion)
    return MakeError("the session speaks another protocol version", ExitCode::kRuntime,
                     "the client and the daemon are different looptrace versions");
  ControlResponse r;
  r.ok = j["ok"].get<bool>();
  if (!r.ok) {
    r.error = j.value("error", "the session refused the request");
    r.hint = j.value("hint", "");
    r.code = j.value("code", 1);
    return r;
  }
  r.body = std::string(data.substr(eol + 1));
  return r;
}

}  // namespace looptrace::loader
