// The one result type of the project: std::expected with a message-carrying error.
#pragma once

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

#include <unistd.h>

namespace looptrace {

// Exit codes are part of the CLI contract (docs/commands.md, "Exit codes").
enum class ExitCode : int {
  kOk = 0,
  kRuntime = 1,      // anything that went wrong while running
  kUsage = 2,        // bad command line
  kTarget = 3,       // no such process, exec failed
  kPermission = 4,   // not root / missing capabilities
  kUnsupported = 5,  // kernel lacks BPF, BTF, uprobes
  kProfile = 6,      // malformed profile, symbol or binary not found
  kOutput = 7,       // cannot write the report or recording
  kSession = 8,      // background sessions: none for that pid, or it already has one
  kEndpoint = 9,     // a control socket or the metrics address cannot be used (port in use)
  kInterrupted = 130,
};

struct Error {
  std::string message;  // lower-case, names the object and the cause
  std::string hint;     // optional actionable fix
  ExitCode code = ExitCode::kRuntime;
};

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> MakeError(std::string message, ExitCode code = ExitCode::kRuntime,
                                        std::string hint = {}) {
  return std::unexpected(Error{std::move(message), std::move(hint), code});
}

// "<what>: <strerror(err)>" for a positive or negative errno value.
inline std::unexpected<Error> SystemError(const std::string& what, int err, ExitCode code = ExitCode::kRuntime,
                                          std::string hint = {}) {
  if (err < 0) err = -err;
  return MakeError(what + ": " + std::strerror(err), code, std::move(hint));
}

// The hint of a permission error: "run looptrace as root", unless looptrace already runs as
// root; then `as_root`, what else refuses root (a container, a security policy).
inline std::string PermissionHint(std::string_view as_root) {
  return geteuid() == 0 ? std::string(as_root) : std::string("run looptrace as root");
}

}  // namespace looptrace

#define LT_CONCAT_INNER(a, b) a##b
#define LT_CONCAT(a, b) LT_CONCAT_INNER(a, b)

// Propagates the error of an expression returning Result<void>.
#define RETURN_IF_ERROR(expr)                                    \
  do {                                                           \
    auto lt_status_ = (expr);                                    \
    if (!lt_status_) return std::unexpected(lt_status_.error()); \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, Foo());` declares x from a Result or returns its error.
#define ASSIGN_OR_RETURN(decl, expr) ASSIGN_OR_RETURN_IMPL(LT_CONCAT(lt_result_, __LINE__), decl, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)   \
  auto tmp = (expr);                             \
  if (!tmp) return std::unexpected(tmp.error()); \
  decl = std::move(*tmp)
