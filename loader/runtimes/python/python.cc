// CPython: its USDT probes (provider "python": function__entry/return, gc__start/done, ...)
// exist only in builds configured --with-dtrace, in the interpreter executable (Debian's
// /usr/bin/python3.11) or in libpython3.X.so (builds with --enable-shared that link the
// interpreter against it). A python3 found first on PATH may be another build (pyenv,
// conda, a source build) without them, or a version manager's shim script.
#include "loader/runtimes/python/python.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>

#include "loader/runtimes/python/python_process.h"
#include "loader/target/target_process.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/log.h"

namespace looptrace::loader::python {
namespace {

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// "pid 42 (/usr/bin/python3.11)", or the command's executable.
std::string Describe(const TargetBinaries& target) {
  if (target.pid > 0) return fmt::format("pid {} ({})", target.pid, target.exe_path);
  return target.exe_path;
}

bool IsInterpreterName(const std::string& name) { return name.starts_with("python"); }

bool MapsAsyncio(int pid) {
  auto maps = symbols::ReadProcMaps(pid);
  if (!maps) return true;  // cannot tell: blame nothing
  for (const auto& m : *maps)
    if (Basename(m.path).starts_with("_asyncio.")) return true;
  return false;
}

bool HasProbes(const std::string& path) {
  auto elf = symbols::ElfFile::Open(path);
  return elf && !elf->FindUsdt("python", "gc__start").empty();
}

// CPython's object layouts on 64-bit platforms, unchanged since 3.0: PyTypeObject's tp_name
// and tp_methods, and the PyMethodDef entries of a method table.
constexpr uint64_t kTpName = 24;
constexpr uint64_t kTpMethods = 232;
constexpr uint64_t kMethodDefSize = 32;  // ml_name, ml_meth, ml_flags (+pad), ml_doc
constexpr int kMaxMethods = 256;

std::optional<std::string> ReadCString(const symbols::ElfFile& elf, uint64_t address, size_t max) {
  auto bytes = elf.ReadAtAddress(address, max);
  if (!bytes) return std::nullopt;
  auto nul = std::find(bytes->begin(), bytes->end(), uint8_t{0});
  if (nul == bytes->end()) return std::nullopt;
  return std::string(bytes->begin(), nul);
}

}  // namespace

// 11 for ".../python3.11" or "libpython3.11.so.1.0", else nullopt.
std::optional<int> MinorVersionOf(const std::string& path) {
  std::string name = Basename(path);
  size_t at = name.find("python3.");
  if (at == std::string::npos) return std::nullopt;
  int minor = 0;
  size_t i = at + 8;
  if (i >= name.size() || !isdigit(static_cast<unsigned char>(name[i]))) return std::nullopt;
  while (i < name.size() && isdigit(static_cast<unsigned char>(name[i]))) minor = minor * 10 + (name[i++] - '0');
  return minor;
}

// libpython3.X.so the target maps (live) or links (run), if any.
std::optional<std::string> LibpythonOf(const TargetBinaries& target) {
  if (target.pid > 0) {
    auto maps = symbols::ReadProcMaps(target.pid);
    if (!maps) return std::nullopt;
    for (const auto& m : *maps)
      if (m.is_file() && Basename(m.path).starts_with("libpython3")) return m.path;
    return std::nullopt;
  }
  auto info = symbols::ReadDynamicInfo(target.exe_path);
  if (!info) return std::nullopt;
  for (const auto& needed : info->needed)
    if (needed.starts_with("libpython3"))
      return symbols::SearchLibrary(needed, target.ld_library_path, target.exe_path);
  return std::nullopt;
}

std::optional<uint64_t> ResolveTypeMethod(const symbols::ElfFile& elf, std::string_view point) {
  const size_t dot = point.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == point.size() ||
      point.find_first_of(".:*?[ ", dot + 1) != std::string_view::npos)
    return std::nullopt;
  auto type = elf.FindObject(point.substr(0, dot));
  if (!type) return std::nullopt;
  // A type object names itself ("_contextvars.Context"): a sanity check of the layout.
  auto name_ptr = elf.ReadPointer(*type + kTpName);
  auto type_name = name_ptr ? ReadCString(elf, *name_ptr, 128) : std::nullopt;
  auto methods = elf.ReadPointer(*type + kTpMethods);
  if (!type_name || type_name->empty() || !methods || !*methods) return std::nullopt;
  for (int i = 0; i < kMaxMethods; ++i) {
    const uint64_t entry = *methods + i * kMethodDefSize;
    auto ml_name = elf.ReadPointer(entry);
    if (!ml_name || !*ml_name) break;
    auto name = ReadCString(elf, *ml_name, 128);
    if (!name) break;
    if (*name == point.substr(dot + 1)) {
      auto function = elf.ReadPointer(entry + 8);
      if (function && *function) log::V1("{}: {} is {}.{} at {:#x}", elf.path(), point, *type_name, *name, *function);
      return function && *function ? function : std::nullopt;
    }
  }
  return std::nullopt;
}

namespace {

class CPythonRuntime : public Runtime {
 public:
  std::string_view name() const override { return "python"; }
  std::string_view title() const override { return "CPython"; }

  std::optional<RuntimeInfo> Detect(const TargetBinaries& target) const override {
    if (target.exe_path.empty()) return std::nullopt;
    const std::string real = RealPath(target.exe_path);
    auto lib = LibpythonOf(target);
    if (!IsInterpreterName(Basename(real)) && !IsInterpreterName(Basename(target.exe_path)) && !lib)
      return std::nullopt;
    RuntimeInfo info;
    info.name = "python";
    info.what = fmt::format("CPython ({})", real);
    if (HasProbes(target.exe_path))
      info.binary = target.exe_path;
    else if (lib && HasProbes(*lib))
      info.binary = *lib;
    return info;
  }

  // A profile whose every probe point is a USDT probe of the python provider (method beats)
  // needs a CPython built with them; python-asyncio reads none it cannot do without.
  Result<void> CheckPresent(const RuntimeInfo& info, const TargetBinaries& target,
                            const std::vector<std::string>& usdt_points) const override {
    if (!info.binary.empty() || usdt_points.empty()) return {};
    std::string why = Diagnose(target, TargetCommand{});
    return MakeError(why.empty() ? fmt::format("{} has no CPython USDT probes", Describe(target)) : why,
                     ExitCode::kProfile,
                     "use a CPython configured --with-dtrace, such as Debian's /usr/bin/python3.11 "
                     "(readelf -n shows its 'python' probes), or --profile python-asyncio");
  }

  // CPython's C code: libpython3.X.so in a shared build (pyenv's), else the executable.
  std::optional<std::string> InterpreterBinary(const TargetBinaries& target) const override {
    if (auto lib = LibpythonOf(target)) return lib;
    if (!target.exe_path.empty()) return target.exe_path;
    return std::nullopt;
  }

  Result<std::unique_ptr<InterpreterSupport>> Interpreter(const TargetBinaries& target, int pid) const override {
    return MakeCPythonSupport(target, pid);
  }

  Result<void> Check(const RuntimeCheck& check, const TargetBinaries& target,
                     const TargetCommand& command) const override {
    const bool beats =
        std::find(check.points.begin(), check.points.end(), "python:function__entry") != check.points.end();
    if (!beats) return {};
    log::V1(
        "profile {}: every Python call and return hits a USDT probe (a kernel trap each): call-heavy code "
        "runs several times slower; --profile python-asyncio keeps callbacks and GC only",
        check.profile_name);
    // CPython 3.11 to 3.14 fire function__entry only from their tracing path, taken while a
    // profile or trace function is set (CPython issue gh-98894, fixed in 3.15).
    std::optional<int> minor = MinorVersionOf(RealPath(target.exe_path));
    if (!minor)
      if (auto lib = LibpythonOf(target)) minor = MinorVersionOf(*lib);
    if (!minor || *minor < 11 || *minor > 14) return {};
    bool profiled = false;
    for (size_t i = 1; i + 1 < command.argv.size(); ++i)
      profiled |= command.argv[i] == "-m" && (command.argv[i + 1] == "cProfile" || command.argv[i + 1] == "profile");
    if (profiled) return {};
    log::Warning(
        "CPython 3.{} fires python:function__entry only while a profiler is active (CPython issue "
        "gh-98894): without one, profile {} gets no Python call trees (messages and GC are not affected); "
        "run the program as python3.{} -m cProfile -o /dev/null APP, or use --profile python-asyncio",
        *minor, check.profile_name, *minor);
    return {};
  }

  std::string Diagnose(const TargetBinaries& target, const TargetCommand& command) const override {
    const std::string who = target.pid > 0 ? fmt::format("pid {} runs", target.pid) : "the command runs";
    if (auto info = Detect(target)) {
      // python-asyncio needs no USDT probe: what else keeps it from fitting.
      if (target.pid > 0 && !MapsAsyncio(target.pid))
        return fmt::format(
            "{} {}, which has not imported asyncio (no _asyncio module mapped): python-asyncio "
            "fits once it has{}",
            who, RealPath(target.exe_path),
            info->binary.empty() ? "; the python profile needs USDT probes, which this build lacks" : "");
      if (!info->binary.empty()) return "";
      auto lib = LibpythonOf(target);
      return fmt::format("{} {}, a CPython built without USDT probes (no 'python' probe notes in it{})", who,
                         RealPath(target.exe_path), lib ? " or in " + *lib : "");
    }
    // run: a command named python* that is a script (a pyenv/asdf shim) starting the real one.
    if (target.pid <= 0 && !command.argv.empty() && IsInterpreterName(Basename(command.argv[0]))) {
      auto path = FindInPath(command.argv[0]);
      if (path && *path != target.exe_path)
        return fmt::format(
            "{} is {}, a script run by {} (a version manager's shim?): looptrace attaches to the "
            "program a command starts, so give the interpreter's path, e.g. /usr/bin/python3.11",
            command.argv[0], *path, target.exe_path);
    }
    return "";
  }

  std::optional<uint64_t> ResolvePoint(const symbols::ElfFile& elf, std::string_view point) const override {
    return ResolveTypeMethod(elf, point);
  }
};

}  // namespace

const Runtime& CPython() {
  static const CPythonRuntime runtime;
  return runtime;
}

}  // namespace looptrace::loader::python
