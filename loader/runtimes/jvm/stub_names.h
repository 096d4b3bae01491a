// The names of HotSpot's generated stubs (StubRoutines: the intrinsics Java calls for SHA,
// AES, CRC32, array copies and fills, the call stub) by address. VMStructs does not list
// them; the VM keeps its own list, StubCodeDesc::_list in libjvm.so's symbol table, each
// entry {next, group, name, begin, end} (its layout from JDK 8 to 21). An entry is taken only
// when it reads as one: code ends after it begins, within a stub's size, names readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/runtimes/jvm/vm_structs.h"  // Memory

namespace looptrace::loader::jvm {

class StubNames {
 public:
  // `list_head`: the address of StubCodeDesc::_list in the target.
  StubNames(uint64_t list_head, Memory& memory) : list_head_(list_head), memory_(memory) {}

  // "StubRoutines::sha256_implCompressMB" for a pc in that stub; nothing when no listed stub
  // holds it. The list is read at the first ask, and again (at most once a second) for a pc
  // it lacks: a JVM adds stubs while it starts.
  std::optional<std::string> At(uint64_t pc);

 private:
  struct Stub {
    uint64_t begin = 0, end = 0;
    std::string name;
  };
  void Read();
  std::optional<std::string> Text(uint64_t address);

  uint64_t list_head_;
  Memory& memory_;
  std::vector<Stub> stubs_;  // by begin
  std::optional<std::chrono::steady_clock::time_point> read_at_;
};

}  // namespace looptrace::loader::jvm
