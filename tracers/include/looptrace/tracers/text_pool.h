// Interned text: argument names and string arguments of events point here, so events copy
// without allocating and a span can keep its begin event for as long as it runs. The pool
// lives as long as the process; it is bounded (kMaxBytes), after which new texts become one
// shared placeholder (counted by the caller through `dropped`).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace looptrace {

class TextPool {
 public:
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  // The pool's copy of `text` (the same pointer for the same text); thread-safe.
  static const std::string* Intern(std::string_view text, bool* dropped = nullptr);
  static std::string_view Name(std::string_view text) { return *Intern(text); }
  static size_t bytes();
};

}  // namespace looptrace
