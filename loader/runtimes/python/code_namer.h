// Names of CPython code objects and callables, read from the target's memory
// (process_vm_readv) with a version's layout, cached by address and guarded by a fingerprint
// (co_firstlineno, as BPF read it) against a code object freed and its address reused.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/runtimes/interpreter.h"
#include "loader/runtimes/python/layouts.h"
#include "loader/runtimes/python/line_table.h"

namespace looptrace::loader::python {

// Reads the target's memory (process_vm_readv); a test gives its own.
class Memory {
 public:
  virtual ~Memory() = default;
  virtual bool Read(uint64_t address, void* out, size_t size) = 0;
};
std::unique_ptr<Memory> ProcessMemory(int pid);

// A code object as the namer keeps it.
struct CodeInfo {
  uint32_t fingerprint = 0;  // co_firstlineno, as BPF read it
  std::string name;          // co_qualname (3.11+), else co_name
  std::string file;          // co_filename
  int first_line = 0;
  std::vector<uint8_t> line_table;
  // Lines already found in line_table, by instruction offset: a busy loop's samples stop at
  // the same few offsets, and decoding the table was most of naming a frame.
  mutable std::unordered_map<uint32_t, int> lines;
};

// Names code objects and callables from a process's memory with a layout (no BPF, no
// /proc/PID/maps: unit-testable with a fake Memory).
class CodeNamer {
 public:
  CodeNamer(const Layout& layout, std::unique_ptr<Memory> memory);
  void set_code_type(uint64_t address) { code_type_ = address; }

  // The code object at `code` if its fingerprint still matches (cached).
  const CodeInfo* Code(uint64_t code, uint32_t fingerprint, Stats* stats);
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats);
  CallableName NameCallable(std::span<const uint64_t> slots, const TargetTextLookup& texts, Stats* stats);
  // A str object's text (compact ASCII, Latin-1, UCS-2 or UCS-4), at most `max` characters.
  std::optional<std::string> ReadStr(uint64_t str, size_t max = 256);

 private:
  std::optional<uint64_t> Pointer(uint64_t address);
  int LineOf(const CodeInfo& info, uint32_t offset) const;

  Layout layout_;
  std::unique_ptr<Memory> memory_;
  uint64_t code_type_ = 0;
  std::unordered_map<uint64_t, CodeInfo> codes_;  // by address
};

}  // namespace looptrace::loader::python
