// Small text helpers shared by the symbols readers (internal header).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

namespace looptrace::symbols::internal {

inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Reads a whole file (also /proc files, whose size is unknown). On failure returns false
// with errno-style `*error` and whether it was opening (`*at_open`) that failed.
inline bool ReadWholeFile(const std::string& path, std::string* text, int* error, bool* at_open) {
  text->clear();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = errno;
    *at_open = true;
    return false;
  }
  char buffer[65536];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = errno;
      *at_open = false;
      close(fd);
      return false;
    }
    if (n == 0) break;
    text->append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

}  // namespace looptrace::symbols::internal
