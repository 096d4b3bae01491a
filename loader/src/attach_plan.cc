#include "looptrace/loader/attach_plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "looptrace/loader/runtimes.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {

uint64_t MakeCookie(const ResolvedProbe& probe) {
  return LT_COOKIE(probe.probe_id, static_cast<uint16_t>(probe.spec.role) & 0xFF);
}

namespace {

lt_arg_config ArgConfig(const ArgSource& arg) {
  lt_arg_config c{};
  c.source = arg.source;
  c.type = arg.type == ArgType::kStr ? LT_ARG_STR : arg.type == ArgType::kInt ? LT_ARG_INT : LT_ARG_UINT;
  c.length_source = arg.type == ArgType::kStr ? arg.length_source : LT_SOURCE_NONE;
  return c;
}

uint8_t PredicateOp(CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return LT_PRED_EQ;
    case CompareOp::kNe: return LT_PRED_NE;
    case CompareOp::kLt: return LT_PRED_LT;
    case CompareOp::kLe: return LT_PRED_LE;
    case CompareOp::kGt: return LT_PRED_GT;
    case CompareOp::kGe: return LT_PRED_GE;
    case CompareOp::kStrEq: return LT_PRED_STR_EQ;
    case CompareOp::kStrNe: return LT_PRED_STR_NE;
    case CompareOp::kStrPrefix: return LT_PRED_STR_PREFIX;
    case CompareOp::kStrSuffix: return LT_PRED_STR_SUFFIX;
    case CompareOp::kStrGlob: return LT_PRED_STR_GLOB;
  }
  return 0;
}

}  // namespace

lt_probe_config MakeProbeConfig(const ResolvedProbe& probe) {
  const ProbeSpec& spec = probe.spec;
  lt_probe_config c{};
  c.role = static_cast<uint16_t>(spec.role);
  c.nargs = static_cast<uint8_t>(std::min<size_t>(spec.args.size(), LT_MAX_ARGS));
  c.npredicates = static_cast<uint8_t>(std::min<size_t>(spec.conditions.size(), LT_MAX_PREDICATES));
  if (IsBeatRole(spec.role)) {
    c.flags |= LT_PROBE_BEAT;
    c.enter = spec.role == Role::kMethodEnter;
    for (const auto& a : spec.args)
      if (a.type == ArgType::kStr) c.flags |= LT_PROBE_IDENTITY;
  }
  // Other threads post to the looper; GC runs and monitor releases happen on other threads
  // (HotSpot's VM thread, a lock holder) and matter to the loop thread all the same.
  if (spec.role == Role::kMessageEnqueue || spec.role == Role::kGcBegin || spec.role == Role::kGcEnd ||
      spec.role == Role::kLockRelease)
    c.flags |= LT_PROBE_ALL_THREADS;
  if (spec.role == Role::kDispatchBegin) c.flags |= LT_PROBE_CLAIMS_LOOP;
  // The holder of a monitor is named by its thread name, taken at the hit.
  if (spec.role == Role::kLockRelease && c.nargs <= LT_COMM_ARG_SLOT) c.flags |= LT_PROBE_COMM;
  for (size_t i = 0; i < c.nargs; ++i) c.args[i] = ArgConfig(spec.args[i]);
  for (size_t i = 0; i < c.npredicates; ++i) {
    const Condition& cond = spec.conditions[i];
    lt_predicate& p = c.predicates[i];
    p.arg = ArgConfig(cond.arg);
    p.op = PredicateOp(cond.op);
    p.value = cond.value;
    p.pattern_len = static_cast<uint8_t>(std::min<size_t>(cond.pattern.size(), LT_MAX_PATTERN));
    std::memcpy(p.pattern, cond.pattern.data(), p.pattern_len);
  }
  return c;
}

std::vector<lt_probe_config> MakeProbeConfigs(const AttachPlan& plan) {
  bool dispatch = false;
  for (const auto& p : plan.probes) dispatch |= p.spec.role == Role::kDispatchBegin;
  std::vector<lt_probe_config> configs;
  for (const auto& p : plan.probes) {
    configs.push_back(MakeProbeConfig(p));
    // Poll-bounded messages begin when a poll returns: that thread runs the loop.
    if (!dispatch && p.spec.role == Role::kPollEnd) configs.back().flags |= LT_PROBE_CLAIMS_LOOP;
  }
  return configs;
}

namespace {

// Whether `library` is in the executable's DT_NEEDED closure (a few levels deep).
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
      if (*path == library) return true;
      todo.push_back(*path);
    }
  }
  return false;
}

}  // namespace

Result<std::string> ResolveBinary(const std::string& binary, const TargetBinaries& target) {
  if (binary == "exe") {
    if (!target.exe_path.empty()) return target.exe_path;
    return MakeError("no executable known for the target", ExitCode::kTarget);
  }
  if (target.pid > 0) {
    auto maps = symbols::ReadProcMaps(target.pid);
    if (!maps) return std::unexpected(maps.error());
    if (auto path = symbols::FindMappedFile(*maps, binary)) return *path;
    if (binary.starts_with("/")) {
      if (access(binary.c_str(), R_OK) == 0) return binary;
      return MakeError(fmt::format("binary {} does not exist", binary), ExitCode::kProfile);
    }
    return MakeError(fmt::format("pid {} has no library '{}' mapped", target.pid, binary),
                     ExitCode::kProfile,
                     "check /proc/" + std::to_string(target.pid) +
                         "/maps, or give the library's absolute path in the profile");
  }
  if (binary.starts_with("/")) {
    if (access(binary.c_str(), R_OK) == 0) return binary;
    return MakeError(fmt::format("binary {} does not exist", binary), ExitCode::kProfile);
  }
  // A runtime's launcher may load it with dlopen (the java launcher and libjvm.so).
  if (auto path = DlopenedRuntimeLibrary(binary, target.exe_path)) return *path;
  if (auto path = symbols::SearchLibrary(binary, target.ld_library_path, target.exe_path)) {
    if (target.require_linked && !LinksLibrary(target, *path))
      return MakeError(fmt::format("{} does not link {}", target.exe_path, binary), ExitCode::kProfile);
    return *path;
  }
  return MakeError(fmt::format("library '{}' not found in the library search path", binary),
                   ExitCode::kProfile, "give the library's absolute path in the profile");
}

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// The byte size of each argument of a USDT note ("8@%rdi -4@%eax" -> {8, -4}; negative:
// signed).
std::vector<int> UsdtArgSizes(const std::string& arguments) {
  std::vector<int> sizes;
  size_t i = 0;
  while (i < arguments.size()) {
    while (i < arguments.size() && arguments[i] == ' ') ++i;
    if (i >= arguments.size()) break;
    size_t end = arguments.find(' ', i);
    if (end == std::string::npos) end = arguments.size();
    std::string_view word(arguments.data() + i, end - i);
    int size = 0;
    if (size_t at = word.find('@'); at != std::string_view::npos)
      std::from_chars(word.data(), word.data() + at, size);
    sizes.push_back(size);
    i = end;
  }
  return sizes;
}

// Every argument a USDT probe line reads must exist, and a string must be a pointer (8 bytes).
Result<void> CheckUsdtArguments(const ProbeSpec& spec, const symbols::UsdtProbe& site, const std::string& path,
                                const std::string& where) {
  const std::vector<int> sizes = UsdtArgSizes(site.arguments);
  auto describe = [&] {
    return fmt::format("usdt {} in {} has {} argument{}{}", spec.point, path, sizes.size(), sizes.size() == 1 ? "" : "s",
                       sizes.empty() ? "" : " (" + site.arguments + ")");
  };
  auto check = [&](const ArgSource& a, const std::string& what) -> Result<void> {
    for (uint8_t source : {a.source, a.type == ArgType::kStr ? a.length_source : uint8_t{LT_SOURCE_NONE}}) {
      if (source == LT_SOURCE_NONE || source == LT_SOURCE_RETVAL) continue;
      if (source >= sizes.size())
        return MakeError(fmt::format("{}: {} reads arg{}, but {}", where, what, source + 1, describe()),
                         ExitCode::kProfile, "check the probe's arguments with `readelf -n` on the binary");
    }
    if (a.type == ArgType::kStr && a.source < sizes.size() && std::abs(sizes[a.source]) != 8)
      return MakeError(fmt::format("{}: {} reads arg{} as a string, but it is a {}-byte integer ({})", where, what,
                                   a.source + 1, std::abs(sizes[a.source]), describe()),
                       ExitCode::kProfile, "compare it as a number: drop :str and the quotes");
    return {};
  };
  for (const auto& a : spec.args) RETURN_IF_ERROR(check(a, fmt::format("argument '{}'", a.name)));
  for (const auto& c : spec.conditions) RETURN_IF_ERROR(check(c.arg, fmt::format("condition '{}'", c.text)));
  return {};
}

}  // namespace

Result<AttachPlan> ResolveProfile(const Profile& profile, const TargetBinaries& target) {
  AttachPlan plan;
  plan.profile_name = profile.name;
  std::map<std::string, symbols::ElfFile> elf_cache;  // one pass per ELF file

  for (const ProbeSpec& spec : profile.probes) {
    auto where = fmt::format("{} line {}", profile.source, spec.line);
    auto resolved = ResolveBinary(spec.binary, target);
    if (!resolved) {
      Error e = resolved.error();
      e.message = where + ": " + e.message;
      return std::unexpected(e);
    }
    const std::string path = *resolved;
    auto it = elf_cache.find(path);
    if (it == elf_cache.end()) {
      auto elf = symbols::ElfFile::Open(path);
      if (!elf) {
        Error e = elf.error();
        e.message = where + ": " + e.message;
        e.code = ExitCode::kProfile;
        return std::unexpected(e);
      }
      it = elf_cache.emplace(path, std::move(*elf)).first;
    }
    const symbols::ElfFile& elf = it->second;

    auto add = [&](ResolvedProbe probe) -> Result<void> {
      if (plan.probes.size() >= 0xFFFF)
        return MakeError(fmt::format("{}: too many probe points", where), ExitCode::kProfile);
      probe.probe_id = static_cast<uint16_t>(plan.probes.size());
      plan.probes.push_back(std::move(probe));
      return {};
    };

    if (spec.kind == ProbeKind::kUsdt) {
      size_t colon = spec.point.find(':');
      std::string provider = spec.point.substr(0, colon);
      std::string name = spec.point.substr(colon + 1);
      auto sites = elf.FindUsdt(provider, name);
      if (sites.empty()) {
        std::vector<std::string> known;
        for (const auto& p : elf.usdt_probes()) {
          std::string full = p.provider + ":" + p.name;
          if (std::find(known.begin(), known.end(), full) == known.end()) known.push_back(full);
          if (known.size() == 8) break;
        }
        return MakeError(fmt::format("{}: usdt probe {} not found in {}", where, spec.point, path),
                         ExitCode::kProfile,
                         known.empty() ? "the binary has no USDT probes (readelf -n shows .note.stapsdt)"
                                       : "probes in this binary include: " + JoinNames(known));
      }
      RETURN_IF_ERROR(CheckUsdtArguments(spec, *sites.front(), path, where));
      ResolvedProbe probe;
      probe.spec = spec;
      probe.binary_path = path;
      probe.symbol = spec.point;
      probe.address = sites.front()->address;
      probe.file_offset = sites.front()->file_offset;
      probe.usdt_sites = sites.size();
      probe.semaphore_address = sites.front()->semaphore_address;
      if (auto bytes = elf.ReadAtAddress(probe.address, 16))
        probe.instruction = symbols::ClassifyProbeInstruction(*bytes);
      RETURN_IF_ERROR(add(std::move(probe)));
      continue;
    }

    auto functions = elf.FindFunctions(spec.point);
    if (functions.empty()) {
      // A C method of a CPython type ("PyContext_Type.run"), found through its method table.
      if (auto address = python::ResolveTypeMethod(elf, spec.point)) {
        ResolvedProbe probe;
        probe.spec = spec;
        probe.binary_path = path;
        probe.symbol = spec.point;
        probe.address = *address;
        auto offset = elf.AddressToFileOffset(*address);
        if (!offset) {
          Error e = offset.error();
          e.message = where + ": " + e.message;
          return std::unexpected(e);
        }
        probe.file_offset = *offset;
        if (auto bytes = elf.ReadAtAddress(*address, 16)) probe.instruction = symbols::ClassifyProbeInstruction(*bytes);
        RETURN_IF_ERROR(add(std::move(probe)));
        continue;
      }
      auto closest = elf.ClosestNames(spec.point, 5);
      return MakeError(fmt::format("{}: symbol '{}' not found in {}", where, spec.point, path),
                       ExitCode::kProfile,
                       closest.empty() ? "the binary has no function symbols (stripped?)"
                                       : "closest names: " + JoinNames(closest));
    }
    for (const symbols::Symbol* fn : functions) {
      ResolvedProbe probe;
      probe.spec = spec;
      probe.binary_path = path;
      probe.symbol = fn->demangled;
      probe.address = fn->address;
      probe.file_offset = fn->file_offset;
      if (auto bytes = elf.ReadAtAddress(fn->address, 16))
        probe.instruction = symbols::ClassifyProbeInstruction(*bytes);
      RETURN_IF_ERROR(add(std::move(probe)));
    }
  }
  return plan;
}

Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested, const TargetBinaries& target) {
  if (!requested.empty()) {
    ASSIGN_OR_RETURN(Profile profile, LoadProfile(requested));
    RETURN_IF_ERROR(CheckRuntimePresent(profile, target));
    ASSIGN_OR_RETURN(AttachPlan plan, ResolveProfile(profile, target));
    return std::pair{std::move(profile), std::move(plan)};
  }
  std::string tried;
  TargetBinaries strict = target;
  strict.require_linked = true;
  for (const auto& builtin : BuiltinProfiles()) {
    ASSIGN_OR_RETURN(Profile profile, ParseProfile(builtin.text, "builtin:" + std::string(builtin.name)));
    auto plan = ResolveProfile(profile, strict);
    if (plan) {
      log::V1("profile {} matches the target", profile.name);
      return std::pair{std::move(profile), std::move(*plan)};
    }
    log::V1("profile {} does not match: {}", profile.name, plan.error().message);
    tried += (tried.empty() ? "" : ", ") + profile.name;
  }
  return MakeError(fmt::format("no built-in profile matches {} (tried {})",
                               target.pid > 0 ? fmt::format("pid {}", target.pid) : target.exe_path, tried),
                   ExitCode::kProfile, "pass --profile FILE with the target's probe points (see README \"Profiles\")");
}

}  // namespace looptrace::loader
