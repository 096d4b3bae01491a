// Kernel addresses to function names from /proc/kallsyms (root sees real addresses).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::symbols {

class KernelSymbols {
 public:
  // Reads /proc/kallsyms (or `path`); addresses shown as 0 (no privilege) are an error.
  static Result<KernelSymbols> Load(const std::string& path = "/proc/kallsyms");
  static KernelSymbols Parse(std::string_view text);

  // The function containing `address` ("name" or "name [module]"), empty if unknown.
  std::string_view Name(uint64_t address) const;
  size_t size() const { return symbols_.size(); }

 private:
  struct Entry {
    uint64_t address;
    std::string name;
  };
  std::vector<Entry> symbols_;  // text symbols sorted by address
};

}  // namespace looptrace::symbols
