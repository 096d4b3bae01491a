#include "loader/plan/marks.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <filesystem>
#include <optional>

#include "loader/plan/binaries.h"
#include "looptrace/symbols/imports.h"
#include "looptrace/symbols/proc_maps.h"

namespace looptrace::loader {
namespace {

// `requires BINARY SYMBOL`: the runtime's mark. Errors say what is missing from the target.
PlanResult<void> CheckRequirement(const Requirement& r, const TargetBinaries& target, ElfCache* elf_cache) {
  auto resolved = ResolveBinary(r.binary, target);
  if (!resolved)
    return DoesNotFit(fmt::format("needs {} in {}: {}", r.symbol, r.binary, resolved.error().message),
                      resolved.error().hint);
  auto it = elf_cache->find(*resolved);
  if (it == elf_cache->end()) {
    auto elf = symbols::ModuleCache::Default()->Elf(*resolved);
    if (!elf) return DoesNotFit(fmt::format("needs {} in {}: {}", r.symbol, r.binary, elf.error().message));
    it = elf_cache->emplace(*resolved, std::move(*elf)).first;
  }
  if (it->second->FindFunctions(r.symbol).empty())
    return DoesNotFit(fmt::format("needs {} in {}: {} has no such function", r.symbol, r.binary, *resolved));
  return {};
}

// `requires-call`: some object of the target imports one of the functions. Returns what.
PlanResult<std::string> CheckCallRequirement(const CallRequirement& r, const TargetBinaries& target) {
  const std::string names = JoinBars(r.symbols);
  for (const auto& [name, path] : TargetObjects(target)) {
    auto found = symbols::FirstImported(path, r.symbols);
    if (found && !found->empty())
      return fmt::format("{} calls {}", std::filesystem::path(name).filename().string(), *found);
  }
  return DoesNotFit(fmt::format("needs a call to {}: neither {} nor a library it {} imports one", names,
                                target.exe_path, target.pid > 0 ? "maps" : "links"));
}

// `requires-loaded`: the file (name matching a glob) a running target has mapped, or an
// error; nullopt when the target is not running yet.
PlanResult<std::optional<std::string>> CheckLoadedRequirement(const LoadedRequirement& r,
                                                              const TargetBinaries& target) {
  if (target.pid <= 0) return std::nullopt;
  auto maps = symbols::ReadProcMaps(target.pid);
  if (!maps) return std::unexpected(maps.error());
  for (const auto& m : *maps) {
    if (!m.is_file()) continue;
    const std::string name = std::filesystem::path(m.path).filename().string();
    for (const auto& glob : r.globs)
      if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) return std::optional<std::string>(name + " loaded");
  }
  return DoesNotFit(fmt::format("needs {} loaded: pid {} has no such file mapped", JoinBars(r.globs), target.pid));
}

// The error of a mark, prefixed with the line that asked for it.
PlanError AtLine(PlanError e, const std::string& source, int line) {
  e.message = fmt::format("{} line {}: {}", source, line, e.message);
  return e;
}

}  // namespace

std::string JoinBars(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : "|") + item;
  return out;
}

PlanResult<void> CheckMarks(const Profile& profile, const TargetBinaries& target, ElfCache* elf_cache,
                            AttachPlan* plan) {
  for (const Requirement& r : profile.requirements) {
    if (auto ok = CheckRequirement(r, target, elf_cache); !ok)
      return std::unexpected(AtLine(ok.error(), r.source, r.line));
    plan->marks.push_back(fmt::format("{} in {}", r.symbol, r.binary));
  }
  for (const CallRequirement& r : profile.call_requirements) {
    auto found = CheckCallRequirement(r, target);
    if (!found) return std::unexpected(AtLine(found.error(), r.source, r.line));
    plan->marks.push_back(*found);
  }
  for (const LoadedRequirement& r : profile.loaded_requirements) {
    auto found = CheckLoadedRequirement(r, target);
    const std::string globs = JoinBars(r.globs);
    if (!found) {
      if (target.detecting) return std::unexpected(AtLine(found.error(), r.source, r.line));
      plan->assumptions.push_back(
          fmt::format("expects {} loaded ({} line {}), which pid {} has not", globs, r.source, r.line, target.pid));
    } else if (!*found) {
      plan->assumptions.push_back(
          fmt::format("assumes the program loads {}, which cannot be checked before it runs", globs));
    } else {
      plan->marks.push_back(**found);
    }
  }
  return {};
}

}  // namespace looptrace::loader
