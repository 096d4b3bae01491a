#include "loader/plan/attach_plan.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "loader/plan/probe_placement.h"
#include "loader/runtimes/runtimes.h"
#include "looptrace/symbols/data_pointer.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/imports.h"
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
  c.type = arg.type == ArgType::kStr ? LT_ARG_STR : arg.type == ArgType::kInt ? LT_ARG_INT : LT_ARG_UINT;  // sym: uint
  c.length_source = arg.type == ArgType::kStr ? arg.length_source : LT_SOURCE_NONE;
  return c;
}

uint8_t PredicateOp(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return LT_PRED_EQ;
    case CompareOp::kNe:
      return LT_PRED_NE;
    case CompareOp::kLt:
      return LT_PRED_LT;
    case CompareOp::kLe:
      return LT_PRED_LE;
    case CompareOp::kGt:
      return LT_PRED_GT;
    case CompareOp::kGe:
      return LT_PRED_GE;
    case CompareOp::kStrEq:
      return LT_PRED_STR_EQ;
    case CompareOp::kStrNe:
      return LT_PRED_STR_NE;
    case CompareOp::kStrPrefix:
      return LT_PRED_STR_PREFIX;
    case CompareOp::kStrSuffix:
      return LT_PRED_STR_SUFFIX;
    case CompareOp::kStrGlob:
      return LT_PRED_STR_GLOB;
  }
  return 0;
}

}  // namespace

lt_probe_config MakeProbeConfig(const ResolvedProbe& probe) {
  const ProbeSpec& spec = probe.spec;
  lt_probe_config c{};
  c.role = static_cast<uint16_t>(spec.role);
  // Loader-filled arguments (func) come last and are not read by BPF.
  const size_t recorded = static_cast<size_t>(
      std::count_if(spec.args.begin(), spec.args.end(), [](const ArgSpec& a) { return a.source != kSourceFunction; }));
  c.nargs = static_cast<uint8_t>(std::min<size_t>(recorded, LT_MAX_ARGS));
  c.npredicates = static_cast<uint8_t>(std::min<size_t>(spec.conditions.size(), LT_MAX_PREDICATES));
  if (IsBeatRole(spec.role)) {
    c.flags |= LT_PROBE_BEAT;
    c.enter = spec.role == Role::kMethodEnter;
    for (const auto& a : spec.args)
      if (a.type == ArgType::kStr) c.flags |= LT_PROBE_IDENTITY;
  }
  // Roles other threads fire for the loop thread (posting, GC, monitor releases): LT_ROLES.
  if (InfoOf(spec.role).all_threads) c.flags |= LT_PROBE_ALL_THREADS;
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

std::string_view PlacementName(Placement placement) {
  switch (placement) {
    case Placement::kEntry:
      return "entry";
    case Placement::kEntryBlock:
      return "entry block";
    case Placement::kCallSites:
      return "call sites";
    case Placement::kAfterCalls:
      return "after calls";
  }
  return "entry";
}

std::vector<uint64_t> AttachOffsets(const ResolvedProbe& probe) {
  if (probe.placement == Placement::kEntry) return {probe.file_offset};
  std::vector<uint64_t> offsets;
  for (const ProbeLocation& location : probe.locations) offsets.push_back(location.file_offset);
  return offsets;
}

bool AttachAsReturnProbe(const ResolvedProbe& probe) {
  return probe.spec.kind == ProbeKind::kUretprobe && probe.placement != Placement::kAfterCalls;
}

size_t AttachPointCount(const ResolvedProbe& probe) {
  return probe.placement == Placement::kEntry ? 1 : probe.locations.size();
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
      std::error_code ec;
      if (*path == library || std::filesystem::equivalent(*path, library, ec)) return true;
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
    return MakeError(
        fmt::format("pid {} has no library '{}' mapped", target.pid, binary), ExitCode::kProfile,
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
      return MakeError(fmt::format("{} does not link {}", target.exe_path, binary), ExitCode::kProfile);
    return *path;
  }
  return MakeError(fmt::format("library '{}' not found in the library search path", binary), ExitCode::kProfile,
                   "give the library's absolute path in the profile");
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
    if (size_t at = word.find('@'); at != std::string_view::npos) std::from_chars(word.data(), word.data() + at, size);
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
    return fmt::format("usdt {} in {} has {} argument{}{}", spec.point, path, sizes.size(),
                       sizes.size() == 1 ? "" : "s", sizes.empty() ? "" : " (" + site.arguments + ")");
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

namespace {

bool IsThunk(const std::string& demangled) {
  return demangled.starts_with("virtual thunk to ") || demangled.starts_with("non-virtual thunk to ") ||
         demangled.starts_with("covariant return thunk to ");
}

// `requires BINARY SYMBOL`: the runtime's mark. Errors say what is missing from the target.
Result<void> CheckRequirement(const Requirement& r, const TargetBinaries& target,
                              std::map<std::string, symbols::ElfFile>& elf_cache) {
  auto resolved = ResolveBinary(r.binary, target);
  if (!resolved) {
    Error e = resolved.error();
    e.message = fmt::format("needs {} in {}: {}", r.symbol, r.binary, e.message);
    e.code = ExitCode::kProfile;
    return std::unexpected(e);
  }
  auto it = elf_cache.find(*resolved);
  if (it == elf_cache.end()) {
    auto elf = symbols::ElfFile::Open(*resolved);
    if (!elf)
      return MakeError(fmt::format("needs {} in {}: {}", r.symbol, r.binary, elf.error().message), ExitCode::kProfile);
    it = elf_cache.emplace(*resolved, std::move(*elf)).first;
  }
  if (it->second.FindFunctions(r.symbol).empty())
    return MakeError(fmt::format("needs {} in {}: {} has no such function", r.symbol, r.binary, *resolved),
                     ExitCode::kProfile);
  return {};
}

// The target's ELF objects: the files it maps (record), or its executable and the DT_NEEDED
// closure (run).
std::vector<std::pair<std::string, std::string>> TargetObjects(const TargetBinaries& target) {
  std::vector<std::pair<std::string, std::string>> out;  // (name to show, path to open)
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

// "a|b|c": a requires-call / requires-loaded list as the profile line wrote it.
std::string JoinBars(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : "|") + item;
  return out;
}

// `requires-call`: some object of the target imports one of the functions. Returns what.
Result<std::string> CheckCallRequirement(const CallRequirement& r, const TargetBinaries& target) {
  const std::string names = JoinBars(r.symbols);
  for (const auto& [name, path] : TargetObjects(target)) {
    auto found = symbols::FirstImported(path, r.symbols);
    if (found && !found->empty())
      return fmt::format("{} calls {}", std::filesystem::path(name).filename().string(), *found);
  }
  return MakeError(fmt::format("needs a call to {}: neither {} nor a library it {} imports one", names, target.exe_path,
                               target.pid > 0 ? "maps" : "links"),
                   ExitCode::kProfile);
}

// `requires-loaded`: the file (name matching a glob) a running target has mapped, or an
// error; nullopt when the target is not running yet.
Result<std::optional<std::string>> CheckLoadedRequirement(const LoadedRequirement& r, const TargetBinaries& target) {
  if (target.pid <= 0) return std::nullopt;
  auto maps = symbols::ReadProcMaps(target.pid);
  if (!maps) return std::unexpected(maps.error());
  for (const auto& m : *maps) {
    if (!m.is_file()) continue;
    const std::string name = std::filesystem::path(m.path).filename().string();
    for (const auto& glob : r.globs)
      if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) return std::optional<std::string>(name + " loaded");
  }
  return MakeError(fmt::format("needs {} loaded: pid {} has no such file mapped", JoinBars(r.globs), target.pid),
                   ExitCode::kProfile);
}

}  // namespace

Result<AttachPlan> ResolveProfile(const Profile& profile, const TargetBinaries& target) {
  AttachPlan plan;
  plan.profile_name = profile.name;
  std::map<std::string, symbols::ElfFile> elf_cache;  // one pass per ELF file

  for (const Requirement& r : profile.requirements) {
    if (auto ok = CheckRequirement(r, target, elf_cache); !ok) {
      Error e = ok.error();
      e.message = fmt::format("{} line {}: {}", r.source, r.line, e.message);
      return std::unexpected(e);
    }
    plan.marks.push_back(fmt::format("{} in {}", r.symbol, r.binary));
  }
  for (const CallRequirement& r : profile.call_requirements) {
    auto found = CheckCallRequirement(r, target);
    if (!found) {
      Error e = found.error();
      e.message = fmt::format("{} line {}: {}", r.source, r.line, e.message);
      return std::unexpected(e);
    }
    plan.marks.push_back(*found);
  }
  for (const LoadedRequirement& r : profile.loaded_requirements) {
    auto found = CheckLoadedRequirement(r, target);
    const std::string globs = JoinBars(r.globs);
    if (!found) {
      Error e = found.error();
      e.message = fmt::format("{} line {}: {}", r.source, r.line, e.message);
      if (target.detecting) return std::unexpected(e);
      plan.assumptions.push_back(
          fmt::format("expects {} loaded ({} line {}), which pid {} has not", globs, r.source, r.line, target.pid));
    } else if (!*found) {
      plan.assumptions.push_back(
          fmt::format("assumes the program loads {}, which cannot be checked before it runs", globs));
    } else {
      plan.marks.push_back(**found);
    }
  }

  for (const ProbeSpec& spec : profile.probes) {
    // The line's own file: an included profile's lines name the included file.
    auto where = fmt::format("{} line {}", spec.source.empty() ? profile.source : spec.source, spec.line);
    // An optional probe that resolves to nothing is left out (and said at -v).
    auto skip_optional = [&](const Error& e) -> bool {
      if (!spec.optional) return false;
      std::string note =
          fmt::format("{}: optional {} {} left out: {}", spec.Where(), RoleName(spec.role), spec.point, e.message);
      log::V1("{}", note);
      plan.left_out.push_back(std::move(note));
      return true;
    };
    auto resolved = ResolveBinary(spec.binary, target);
    if (!resolved) {
      if (skip_optional(resolved.error())) continue;
      Error e = resolved.error();
      e.message = where + ": " + e.message;
      return std::unexpected(e);
    }
    const std::string path = *resolved;
    auto it = elf_cache.find(path);
    if (it == elf_cache.end()) {
      auto elf = symbols::ElfFile::Open(path);
      if (!elf) {
        if (skip_optional(elf.error())) continue;
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
        Error e =
            MakeError(fmt::format("{}: usdt probe {} not found in {}", where, spec.point, path), ExitCode::kProfile,
                      known.empty() ? "the binary has no USDT probes (readelf -n shows .note.stapsdt)"
                                    : "probes in this binary include: " + JoinNames(known))
                .error();
        if (skip_optional(e)) continue;
        return std::unexpected(e);
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
      probe.entry_instruction = probe.instruction;
      RETURN_IF_ERROR(add(std::move(probe)));
      continue;
    }

    if (auto pointer = ParsePointerPoint(spec.point)) {
      // A function pointer stored in the file's data: the function it points to.
      auto address = symbols::ReadStoredPointer(elf, pointer->symbol, pointer->offset);
      auto offset = address ? elf.AddressToFileOffset(*address) : Result<uint64_t>(std::unexpected(address.error()));
      if (!offset) {
        Error e = offset.error();
        e.message = fmt::format("{}: {}: {}", where, spec.point, e.message);
        e.code = ExitCode::kProfile;
        if (skip_optional(e)) continue;
        return std::unexpected(e);
      }
      ResolvedProbe probe;
      probe.spec = spec;
      probe.binary_path = path;
      const symbols::Symbol* fn = elf.FindFunctionByAddress(*address);
      probe.symbol = fn && fn->address == *address ? fmt::format("{} = {}", spec.point, fn->demangled)
                                                   : fmt::format("{} = {:#x}", spec.point, *address);
      probe.address = *address;
      probe.file_offset = *offset;
      if (auto bytes = elf.ReadAtAddress(probe.address, 16))
        probe.instruction = symbols::ClassifyProbeInstruction(*bytes);
      probe.entry_instruction = probe.instruction;
      RETURN_IF_ERROR(add(std::move(probe)));
      continue;
    }

    auto functions = elf.FindFunctions(spec.point);
    // A glob names functions, not the thunks that adjust `this` and jump to them (the
    // function itself matches too: a thunk would make every call count twice).
    if (IsGlobPoint(spec.point))
      std::erase_if(functions, [](const symbols::Symbol* fn) { return IsThunk(fn->demangled); });
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
      Error e = MakeError(fmt::format("{}: symbol '{}' not found in {}", where, spec.point, path), ExitCode::kProfile,
                          closest.empty() ? "the binary has no function symbols (stripped?)"
                                          : "closest names: " + JoinNames(closest))
                    .error();
      if (skip_optional(e)) continue;
      return std::unexpected(e);
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
      probe.entry_instruction = probe.instruction;
      RETURN_IF_ERROR(add(std::move(probe)));
    }
  }
  PlaceProbes(plan, elf_cache, target);
  return plan;
}

Detection DetectProfile(const TargetBinaries& target, bool stop_at_first) {
  Detection d;
  TargetBinaries strict = target;
  strict.require_linked = true;
  strict.detecting = true;
  for (const auto& builtin : BuiltinProfiles()) {
    if (builtin.fragment) continue;
    ProfileCandidate c;
    c.name = std::string(builtin.name);
    if (d.picked && stop_at_first) break;
    auto profile = ParseProfile(builtin.text, "builtin:" + std::string(builtin.name));
    if (!profile) {
      c.reason = profile.error().message;
      d.candidates.push_back(std::move(c));
      continue;
    }
    auto plan = ResolveProfile(*profile, strict);
    if (!plan) {
      c.reason = plan.error().message;
      log::V1("profile {} does not match: {}", c.name, c.reason);
    } else {
      c.matches = true;
      std::set<std::string> seen;
      for (const auto& p : plan->probes) seen.insert(p.binary_path);
      c.reason = fmt::format("{} probe point{} in {}", plan->probes.size(), plan->probes.size() == 1 ? "" : "s",
                             JoinNames(std::vector<std::string>(seen.begin(), seen.end())));
      if (!plan->marks.empty()) c.reason = fmt::format("{}; {}", JoinNames(plan->marks), c.reason);
      if (!d.picked) {
        log::V1("profile {} matches the target: {}", c.name, c.reason);
        d.picked = d.candidates.size();
        d.profile = std::move(*profile);
        d.plan = std::move(*plan);
      }
    }
    d.candidates.push_back(std::move(c));
  }
  return d;
}

Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested, const TargetBinaries& target) {
  const std::string who = target.pid > 0 ? fmt::format("pid {}", target.pid) : target.exe_path;
  if (!requested.empty()) {
    ASSIGN_OR_RETURN(Profile profile, LoadProfile(requested));
    RETURN_IF_ERROR(CheckRuntimePresent(profile, target));
    auto plan = ResolveProfile(profile, target);
    if (!plan) {
      // A profile for a runtime the target does not have: say so, and how to find one that fits.
      Error e = plan.error();
      if (e.code == ExitCode::kProfile) {
        e.message = fmt::format("profile {} does not fit {}: {}", profile.name, who, e.message);
        if (e.hint.empty() || e.message.find("no library") != std::string::npos ||
            e.message.find("needs ") != std::string::npos || e.message.find("does not link") != std::string::npos)
          e.hint =
              fmt::format("`looptrace probes {}` shows which built-in profile fits; or omit --profile to detect one",
                          target.pid > 0 ? fmt::format("-p {}", target.pid) : "--exe " + target.exe_path);
      }
      return std::unexpected(e);
    }
    if (target.pid <= 0) {
      // run: a library the command does not link may still be dlopen()ed (interpreters load
      // their runtimes so), so this is a warning, not an error.
      std::set<std::string> warned;
      for (const auto& p : plan->probes) {
        if (p.spec.binary == "exe" || p.spec.binary.starts_with("/") || !warned.insert(p.binary_path).second) continue;
        if (!LinksLibrary(target, p.binary_path))
          log::Warning("profile {}: {} does not link {}; its probes fire only if the program loads it at run time",
                       profile.name, target.exe_path, p.binary_path);
      }
    }
    log::V1("profile {} ({}): {} probe points", profile.name, profile.source, plan->probes.size());
    return std::pair{std::move(profile), std::move(*plan)};
  }
  Detection d = DetectProfile(target, /*stop_at_first=*/true);
  if (d.picked) return std::pair{std::move(d.profile), std::move(d.plan)};
  std::string tried;
  for (const auto& c : d.candidates) tried += (tried.empty() ? "" : ", ") + c.name;
  return MakeError(fmt::format("no built-in profile matches {} (tried {})", who, tried), ExitCode::kProfile,
                   fmt::format("pass --profile FILE with the target's probe points (see README \"Profiles\"); "
                               "`looptrace probes {}` says why no built-in fits",
                               target.pid > 0 ? fmt::format("-p {}", target.pid) : "--exe " + target.exe_path));
}

}  // namespace looptrace::loader
