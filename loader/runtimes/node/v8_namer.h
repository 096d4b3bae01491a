// Names the JavaScript frames BPF walked (lt_interp_frame: a SharedFunctionInfo, a
// bytecode offset, 4 bytes of the SharedFunctionInfo as its fingerprint) from the target's
// memory: the function's name (its ScopeInfo's, or the name string itself), its script's
// name and the line its function starts at, from the script's line ends (V8 computes them
// lazily: else from the script file). Cached by address and fingerprint: V8's garbage
// collector moves objects, and a moved-over address fails the fingerprint or type check
// (counted, shown as unknown, never named wrongly).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/runtimes/interpreter.h"
#include "loader/runtimes/node/v8_metadata.h"
#include "loader/runtimes/python/code_namer.h"

namespace looptrace::loader::node {

using python::Memory;

class V8Namer {
 public:
  // `root`: the target's root directory (/proc/PID/root), for reading script files.
  V8Namer(const V8Metadata& metadata, std::unique_ptr<Memory> memory, std::string root);

  // "renderReport app.js:9" in `function` (Node's form, whole); user_code for a function of
  // the program's own scripts (a file, not Node's "node:internal/..." modules or a builtin);
  // nothing when the frame's function is gone (counted).
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats);
  // The same frame in parts, for a thread dump's "renderReport (app.js:9)".
  std::optional<InterpreterFrame> FrameParts(const lt_interp_frame& frame, Stats* stats);

  // A String's text (sequential, cons, thin or sliced; one- or two-byte), at most `max` bytes.
  std::optional<std::string> ReadString(uint64_t tagged, size_t max = 256, int depth = 0);

 private:
  struct Function {
    uint32_t fingerprint = 0;
    std::string name;
    std::string file;
    int line = 0;
  };
  struct ScopeFacts {
    std::string name;
    int start_position = -1;
  };

  // The named function of `frame`, read or cached; null when gone (counted).
  const Function* Lookup(const lt_interp_frame& frame, Stats* stats);
  std::optional<uint64_t> Word(uint64_t address);
  uint16_t TypeOf(uint64_t tagged);
  ScopeFacts ReadScopeInfo(uint64_t scope_info);
  int LineOf(uint64_t script, const std::string& file, int position);
  const std::vector<int>* LineEndsOfFile(const std::string& file);

  V8Metadata m_;
  std::unique_ptr<Memory> memory_;
  std::string root_;
  std::unordered_map<uint64_t, Function> functions_;              // by SharedFunctionInfo
  std::unordered_map<std::string, std::vector<int>> file_lines_;  // script file -> its line ends
};

// A function's name as Node's tools show it: "renderReport app.js:9", "(anonymous) app.js:3",
// "forEach" for a builtin.
std::string FrameName(const std::string& function, const std::string& file, int line);

}  // namespace looptrace::loader::node
