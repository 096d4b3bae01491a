#include "loader/plan/binaries.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "loader/runtimes/runtimes.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"

namespace looptrace::loader {

bool LinksLibrary(const TargetBinaries& target, const std::string& library) {
  std::vector<std::string> todo = {target.exe_path};
  std::set<std::string> seen;
  for (size_t i = 0; i < todo.size() && i < 256; ++i) {
    if (!seen.insert(todo[i]).second) continue;
    auto info = symbols::ReadDynamicInfo(todo[i]);
    if (!info) continue;
    for (const auto& needed : info->needed) {
      auto path = symbols::SearchLibrary(needed, target.ld_library_path, target.exe_path);
      if (!path) continue;
      std::error_code ec;
      if (*path == library || std::filesystem::equivalent(*path, library, ec)) return true;
      todo.push_back(*path);
    }
  }
  return false;
}

PlanResult<std::string> ResolveBinary(const std::string& binary, const TargetBinaries& target) {
  if (binary == "exe") {
    if (!target.exe_path.empty()) return target.exe_path;
    return MakeError("no executable known for the target", ExitCode::kTarget);
  }
  if (binary == "interpreter") {
    // The runtime's interpreter: a shared build's libpython3.X.so, else the executable.
    if (auto path = InterpreterBinaryOf(target)) return *path;
    return DoesNotFit(fmt::format("{} runs no interpreter looptrace knows", target.exe_path));
  }
  if (target.pid > 0) {
    auto maps = symbols::ReadProcMaps(target.pid);
    if (!maps) return std::unexpected(maps.error());
    if (auto path = symbols::FindMappedFile(*maps, binary)) return *path;
    if (binary.starts_with("/")) {
      if (access(binary.c_str(), R_OK) == 0) return binary;
      return MakeError(fmt::format("binary {} does not exist", binary), ExitCode::kProfile);
    }
    return DoesNotFit(
        fmt::format("pid {} has no library '{}' mapped", target.pid, binary),
        "check /proc/" + std::to_string(target.pid) + "/maps, or give the library's absolute path in the profile");
  }
  if (binary.starts_with("/")) {
    if (access(binary.c_str(), R_OK) == 0) return binary;
    return MakeError(fmt::format("binary {} does not exist", binary), ExitCode::kProfile);
  }
  // A runtime's launcher may load it with dlopen (the java launcher and libjvm.so).
  if (auto path = DlopenedRuntimeLibrary(binary, target.exe_path)) return *path;
  if (auto path = symbols::SearchLibrary(binary, target.ld_library_path, target.exe_path)) {
    if (target.require_linked && !LinksLibrary(target, *path))
      return DoesNotFit(fmt::format("{} does not link {}", target.exe_path, binary));
    return *path;
  }
  return MakeError(fmt::format("library '{}' not found in the library search path", binary), ExitCode::kProfile,
                   "give the library's absolute path in the profile");
}

std::vector<std::pair<std::string, std::string>> TargetObjects(const TargetBinaries& target) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> seen;
  if (target.pid > 0) {
    auto maps = symbols::ReadProcMaps(target.pid);
    if (!maps) return out;
    for (const auto& m : *maps)
      if (m.is_file() && seen.insert(m.path).second)
        out.emplace_back(m.path, symbols::MappedFileOpenPath(target.pid, m));
    return out;
  }
  std::vector<std::string> todo = {target.exe_path};
  for (size_t i = 0; i < todo.size() && i < 256; ++i) {
    if (!seen.insert(todo[i]).second) continue;
    out.emplace_back(todo[i], todo[i]);
    auto info = symbols::ReadDynamicInfo(todo[i]);
    if (!info) continue;
    for (const auto& needed : info->needed)
      if (auto path = symbols::SearchLibrary(needed, target.ld_library_path, target.exe_path)) todo.push_back(*path);
  }
  return out;
}

}  // namespace looptrace::loader
