// Text forms every text projection shares (declared in render.h): durations, thread states.
#include "looptrace/report/render.h"

#include <fmt/format.h>

namespace looptrace {

std::string FormatDuration(uint64_t ns) {
  if (ns < 1'000'000) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns < 1'000'000'000) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

std::string ThreadStateText(char state) {
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "uninterruptible (disk I/O)";
    case 'T':
      return "stopped";
    case 't':
      return "traced";
    case 'Z':
      return "zombie";
    default:
      return std::string(1, state);
  }
}

}  // namespace looptrace
