// What is asked of every registered runtime at once (runtimes.h), and the target's command
// line the runtimes' checks read.
#include "loader/runtimes/runtimes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "looptrace/util/log.h"

extern char** environ;

namespace looptrace::loader {
namespace {

// NUL-separated words of a /proc file.
std::optional<std::vector<std::string>> ReadNulSeparated(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

}  // namespace

const Runtime* FindRuntime(std::string_view name) {
  for (const Runtime* runtime : AllRuntimes())
    if (runtime->name() == name) return runtime;
  return nullptr;
}

TargetCommand ReadTargetCommand(int pid) {
  TargetCommand c;
  auto argv = ReadNulSeparated(fmt::format("/proc/{}/cmdline", pid));
  auto env = ReadNulSeparated(fmt::format("/proc/{}/environ", pid));
  c.known = argv.has_value() && env.has_value();
  if (argv) c.argv = std::move(*argv);
  if (env) c.environ = std::move(*env);
  return c;
}

TargetCommand CommandOf(const std::vector<std::string>& argv) {
  TargetCommand c;
  c.argv = argv;
  for (char** e = environ; e && *e; ++e) c.environ.emplace_back(*e);
  c.known = true;
  return c;
}

RuntimeInfo IdentifyRuntime(const TargetBinaries& target) {
  for (const Runtime* runtime : AllRuntimes())
    if (auto info = runtime->Detect(target)) return *info;
  return {};
}

std::string DiagnoseRuntime(const TargetBinaries& target, const TargetCommand& command) {
  for (const Runtime* runtime : AllRuntimes())
    if (std::string why = runtime->Diagnose(target, command); !why.empty()) return why;
  return "";
}

std::optional<uint64_t> ResolveRuntimePoint(const symbols::ElfFile& elf, std::string_view point) {
  for (const Runtime* runtime : AllRuntimes())
    if (auto address = runtime->ResolvePoint(elf, point)) return address;
  return std::nullopt;
}

std::optional<std::string> DlopenedRuntimeLibrary(const std::string& library, const std::string& exe_path) {
  for (const Runtime* runtime : AllRuntimes())
    if (auto path = runtime->DlopenedLibrary(library, exe_path)) return path;
  return std::nullopt;
}

InterpreterFrame InterpreterFrame::Marker(std::string_view marker) {
  InterpreterFrame frame;
  frame.function = marker;
  frame.marker = true;
  return frame;
}

std::string InterpreterFrame::Name() const {
  const std::string_view base = std::string_view(file).substr(file.find_last_of('/') + 1);
  if (file.empty()) return function;
  if (line <= 0) return fmt::format("{} ({})", function, base);
  return fmt::format("{} ({}:{})", function, base, line);
}

std::optional<std::string> InterpreterBinaryOf(const TargetBinaries& target) {
  for (const Runtime* runtime : AllRuntimes())
    if (runtime->Detect(target))
      if (auto path = runtime->InterpreterBinary(target)) return path;
  return std::nullopt;
}

std::unique_ptr<InterpreterSupport> InterpreterOf(const TargetBinaries& target, int pid) {
  const RuntimeInfo info = IdentifyRuntime(target);
  const Runtime* runtime = info.name.empty() ? nullptr : FindRuntime(info.name);
  if (!runtime) return nullptr;
  auto support = runtime->Interpreter(target, pid);
  if (!support) {
    log::Warning("{}", support.error().message);
    return nullptr;
  }
  if (*support) log::V1("interpreter frames: {}", (*support)->what());
  return std::move(*support);
}

}  // namespace looptrace::loader
