#include "loader/runtimes/node/v8_support.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <unordered_map>
#include <vector>

#include "loader/runtimes/node/v8_metadata.h"
#include "loader/runtimes/node/v8_namer.h"

namespace looptrace::loader::node {
namespace {

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// The executable's name as its mapping names it (a symlink's target).
std::string MappedName(const std::string& path) {
  char buf[PATH_MAX];
  return Basename(realpath(path.c_str(), buf) ? std::string(buf) : path);
}

class V8Support : public InterpreterSupport {
 public:
  V8Support(std::string what, std::string module, const V8Metadata& metadata, int pid)
      : what_(std::move(what)),
        module_(std::move(module)),
        layout_(metadata.layout),
        namer_(metadata, python::ProcessMemory(pid), fmt::format("/proc/{}/root", pid)) {}

  const std::string& what() const override { return what_; }

  void DescribeLayout(InterpreterBpfConfig* config) const override { config->v8_layout = layout_; }

  // V8's layout is fixed at build time: nothing to find in the running process.
  Result<bool> Locate(InterpreterBpfConfig* config) override {
    (void)config;
    return true;
  }

  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats) override {
    if (auto named = namer_.NameFrame(frame, stats)) return named;
    return InterpreterFrame::Marker(kUnknownFrame);
  }

  CallableName NameCallable(std::span<const uint64_t> slots, const TargetTextLookup& texts, Stats* stats) override {
    (void)slots;
    (void)texts;
    (void)stats;
    return {};
  }

  // V8's frames can be walked only while their thread is stopped, so a thread's latest
  // walk (its latest sample or switch-out, as the native stack a snapshot shows) stands for
  // its stack now.
  void NoteThreadStack(uint32_t tid, std::span<const lt_interp_frame> frames) override {
    if (frames.empty()) {
      latest_.erase(tid);
      return;
    }
    if (latest_.size() >= kMaxThreads && !latest_.contains(tid)) latest_.clear();
    latest_[tid].assign(frames.begin(), frames.end());
  }

  // Each thread's JavaScript frames at its latest walk, innermost first, as py-spy dumps
  // Python's: "renderReport (app.js:9)".
  std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats* stats) override {
    std::map<uint32_t, std::vector<InterpreterFrame>> out;
    for (const auto& [tid, frames] : latest_) {
      std::vector<InterpreterFrame>& named = out[tid];
      for (const lt_interp_frame& frame : frames)
        named.push_back(namer_.FrameParts(frame, stats).value_or(InterpreterFrame::Marker(kUnknownFrame)));
    }
    return out;
  }

  // V8's code: the executable (builtins, the interpreter's handlers) and JIT code.
  bool IsInterpreterModule(std::string_view module) const override { return module == module_ || module == "[jit]"; }
  // Each C++ -> JavaScript call enters through an entry frame.
  bool IsInterpreterLoop(std::string_view function) const override {
    return function == "Builtins_JSEntry" || function == "Builtins_JSConstructEntry";
  }
  bool EndsLoopRun(const lt_interp_frame& frame) const override { return (frame.offset & LT_INTERP_ENTRY) != 0; }
  // V8Namer: by SharedFunctionInfo and its fingerprint (the line is the function's start).
  bool NamesFramesByCodeAlone() const override { return true; }

 private:
  static constexpr std::string_view kUnknownFrame = "[unknown JavaScript frame]";
  static constexpr size_t kMaxThreads = 4096;  // threads whose latest walk is kept

  std::string what_;
  std::string module_;
  lt_v8_layout layout_;
  V8Namer namer_;
  std::unordered_map<uint32_t, std::vector<lt_interp_frame>> latest_;  // by thread
};

}  // namespace

Result<std::unique_ptr<InterpreterSupport>> MakeV8Support(const TargetBinaries& target, int pid) {
  ASSIGN_OR_RETURN(V8Metadata metadata, ReadV8Metadata(target.exe_path));
  return std::unique_ptr<InterpreterSupport>(
      std::make_unique<V8Support>(fmt::format("V8 ({})", target.exe_path), MappedName(target.exe_path), metadata, pid));
}

}  // namespace looptrace::loader::node
