// Small text helpers shared by the symbols readers (internal header).
#pragma once

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

}  // namespace looptrace::symbols::internal
