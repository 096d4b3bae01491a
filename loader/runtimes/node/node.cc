#include "loader/runtimes/node/node.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include "loader/runtimes/node/v8_support.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/symbolizer.h"

namespace looptrace::loader::node {
namespace {

// The libuv function whose absence means the executable's symbol table is gone: every line
// of the node profile probes a function libuv or Node keep local, or whose symbols a strip
// removes.
constexpr std::string_view kLibuvMark = "uv__io_poll";

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

bool IsNodeName(const std::string& name) { return name.starts_with("node"); }

// The libnode.so a Node executable links (Debian's own nodejs package builds it shared).
std::optional<std::string> LinkedLibnode(const std::string& exe) {
  auto info = symbols::ReadDynamicInfo(exe);
  if (!info) return std::nullopt;
  for (const auto& needed : info->needed)
    if (needed.starts_with("libnode.so")) return needed;
  return std::nullopt;
}

class NodeRuntime : public Runtime {
 public:
  std::string_view name() const override { return "node"; }
  std::string_view title() const override { return "Node.js"; }

  std::optional<RuntimeInfo> Detect(const TargetBinaries& target) const override {
    if (target.exe_path.empty()) return std::nullopt;
    const std::string real = RealPath(target.exe_path);
    if (!IsNodeName(Basename(real)) && !IsNodeName(Basename(target.exe_path))) return std::nullopt;
    RuntimeInfo info;
    info.name = "node";
    info.binary = target.exe_path;
    info.what = fmt::format("Node.js ({})", real);
    return info;
  }

  Result<void> Check(const RuntimeCheck& check, const TargetBinaries& target,
                     const TargetCommand& command) const override {
    (void)check;
    (void)target;
    (void)command;
    return {};
  }

  // Why the node profile did not fit a Node: the symbols it probes are not in the executable.
  std::string Diagnose(const TargetBinaries& target, const TargetCommand& command) const override {
    (void)command;
    auto info = Detect(target);
    if (!info) return "";
    const std::string who = target.pid > 0 ? fmt::format("pid {} runs", target.pid) : "the command runs";
    if (auto libnode = LinkedLibnode(target.exe_path))
      return fmt::format("{} {}, which links {}: the node profile probes libuv in the executable only", who, info->what,
                         *libnode);
    auto elf = symbols::ModuleCache::Default()->Elf(target.exe_path);
    if (!elf || !(*elf)->FindFunctions(kLibuvMark).empty()) return "";
    return fmt::format(
        "{} {}, whose executable has no libuv symbol table ({} is missing: a stripped build), so no "
        "callbacks are named",
        who, info->what, kLibuvMark);
  }

  // JavaScript frames: V8's post-mortem metadata in the executable tells the walker its frames.
  Result<std::unique_ptr<InterpreterSupport>> Interpreter(const TargetBinaries& target, int pid) const override {
    if (!Detect(target)) return std::unique_ptr<InterpreterSupport>();
    return MakeV8Support(target, pid);
  }
};

}  // namespace

const Runtime& NodeJs() {
  static const NodeRuntime runtime;
  return runtime;
}

}  // namespace looptrace::loader::node
