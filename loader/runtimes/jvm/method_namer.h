// Names a HotSpot Method* as a Java engineer reads it ("java.lang.Thread.sleep", the class's
// source file, the line of a bytecode index from the method's line number table), read from
// the JVM's memory through the layout its own tables gave. Names are cached per Method* and
// checked at each use against the method's ConstMethod (a class redefined or unloaded, its
// memory reused, is named again or counted as unnamed, never given a stale name).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loader/runtimes/interpreter.h"
#include "loader/runtimes/jvm/hotspot_layout.h"

namespace looptrace::loader::jvm {

// The compressed line number table of a method (HotSpot's CompressedLineNumberReadStream
// format, after the bytecodes), as (start bci, line) pairs in bytecode order.
// `exclude_zero`: its ints are JDK 21+'s UNSIGNED5, whose bytes are all 1 above JDK 17's.
std::vector<std::pair<int, int>> DecodeLineTable(const std::vector<uint8_t>& bytes, bool exclude_zero);
// The line of `bci` in such a table; 0 when none.
int LineOf(const std::vector<std::pair<int, int>>& table, int bci);

// Whether a class ("EdtApp$1", "javax.swing.JButton") is the program's own code, not the
// JDK's nor a lambda's generated proxy: its frames name the events that run it.
bool IsProgramClass(std::string_view class_name);

class MethodNamer {
 public:
  MethodNamer(const HotSpotLayout& layout, Memory& memory) : layout_(layout), memory_(memory) {}

  // `bci` < 0: no line (a native method, a compiled frame without debug info read).
  // `fingerprint` (not 0): the low half of the ConstMethod* BPF read with the frame; a
  // method whose ConstMethod changed since (redefined, or freed and reused) is not named; a
  // cached name of the same ConstMethod is given without reading the target.
  std::optional<InterpreterFrame> Name(uint64_t method, int bci, uint32_t fingerprint = 0);
  // The bytecode index an interpreted frame's bcp points at, or -1.
  int BciOf(uint64_t method, uint64_t bcp);

 private:
  struct Named {
    uint64_t const_method = 0;
    std::string function;
    std::string file;
    bool user_code = false;  // IsProgramClass
    std::vector<std::pair<int, int>> lines;
  };
  std::optional<Named> Read(uint64_t method);
  static InterpreterFrame Frame(const Named& named, int bci);
  std::optional<std::string> Symbol(uint64_t symbol);
  std::optional<uint64_t> Pointer(uint64_t address);
  std::optional<uint16_t> U16(uint64_t address);

  const HotSpotLayout& layout_;
  Memory& memory_;
  std::unordered_map<uint64_t, Named> cache_;
};

}  // namespace looptrace::loader::jvm
