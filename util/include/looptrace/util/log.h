// Levelled diagnostics on stderr; stdout is reserved for reports.
#pragma once

#include <time.h>

#include <fmt/format.h>
#include <cstdio>
#include <string_view>

#include "looptrace/util/text_safety.h"

namespace looptrace::log {

enum class Level { kError = 0, kWarning = 1, kInfo = 2, kV1 = 3, kV2 = 4 };

// Global verbosity: kInfo by default, -q lowers to kError, -v / -vv raise it.
inline Level& Verbosity() {
  static Level level = Level::kInfo;
  return level;
}

inline bool Enabled(Level level) { return static_cast<int>(level) <= static_cast<int>(Verbosity()); }

// Background sessions log to a file: each line then starts with the local time.
inline bool& WithTimestamps() {
  static bool on = false;
  return on;
}

inline std::string TimestampPrefix() {
  if (!WithTimestamps()) return {};
  time_t now = time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  char text[32];
  strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S ", &local);
  return text;
}

// Messages often quote file content or names from the target: control characters are
// escaped (one line each, nothing reaches the terminal raw) and long text is cut.
inline void Write(Level level, std::string_view raw) {
  if (!Enabled(level)) return;
  const std::string text = EscapeForTerminal(raw, kMaxLogLineBytes);
  const char* prefix = "";
  switch (level) {
    case Level::kError:
      prefix = "error: ";
      break;
    case Level::kWarning:
      prefix = "warning: ";
      break;
    default:
      break;
  }
  std::fprintf(stderr, "%slooptrace: %s%.*s\n", TimestampPrefix().c_str(), prefix, static_cast<int>(text.size()),
               text.data());
}

template <typename... Args>
void Error(fmt::format_string<Args...> fmt, Args&&... args) {
  Write(Level::kError, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void Warning(fmt::format_string<Args...> fmt, Args&&... args) {
  Write(Level::kWarning, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void Info(fmt::format_string<Args...> fmt, Args&&... args) {
  Write(Level::kInfo, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void V1(fmt::format_string<Args...> fmt, Args&&... args) {
  Write(Level::kV1, fmt::format(fmt, std::forward<Args>(args)...));
}
template <typename... Args>
void V2(fmt::format_string<Args...> fmt, Args&&... args) {
  Write(Level::kV2, fmt::format(fmt, std::forward<Args>(args)...));
}
// A command-line mistake: always shown, "looptrace: usage: ...".
inline void Usage(std::string_view text) {
  std::fprintf(stderr, "looptrace: usage: %.*s\n", static_cast<int>(text.size()), text.data());
}
// Printed straight after an actionable error.
inline void Hint(std::string_view raw) {
  if (raw.empty()) return;
  const std::string text = EscapeForTerminal(raw, kMaxLogLineBytes);
  std::fprintf(stderr, "hint: %.*s\n", static_cast<int>(text.size()), text.data());
}

}  // namespace looptrace::log
