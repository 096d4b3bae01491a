// Where the function holding an address starts, from the module's .eh_frame_hdr search table:
// every function a compiler emits unwind information for has an entry (FDE) there, symbol or
// not, so a stripped library's static functions still have boundaries, and samples of one
// function add up under one name instead of one name per instruction.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

struct Elf;

namespace looptrace::symbols {

class EhFrameFunctions {
 public:
  // Empty when the file has no .eh_frame_hdr, or one in an encoding other than the one
  // linkers write (a table of data-relative 4-byte pairs): every lookup then misses.
  explicit EhFrameFunctions(::Elf* elf);

  // The link-time address where the function covering `elf_address` begins.
  std::optional<uint64_t> FunctionStart(uint64_t elf_address) const;
  size_t size() const { return ranges_.size(); }

 private:
  struct Range {
    uint64_t start = 0;
    uint64_t end = 0;  // start + the FDE's pc range; the next start when that was unreadable
  };
  std::vector<Range> ranges_;  // by start
};

}  // namespace looptrace::symbols
