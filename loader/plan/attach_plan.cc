#include "loader/plan/attach_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "loader/plan/binaries.h"
#include "loader/plan/marks.h"
#include "loader/plan/probe_placement.h"
#include "loader/runtimes/runtimes.h"
#include "looptrace/symbols/data_pointer.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {

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

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

bool IsThunk(const std::string& demangled) {
  return demangled.starts_with("virtual thunk to ") || demangled.starts_with("non-virtual thunk to ") ||
         demangled.starts_with("covariant return thunk to ");
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

// A point that is not in the binary: an optional probe's line is left out for it.
std::unexpected<PlanError> NoSuchPoint(std::string message, std::string hint) {
  return std::unexpected(
      PlanError(Error{std::move(message), std::move(hint), ExitCode::kProfile}, PlanErrorKind::kNoSuchPoint));
}

// One line's probe at `address` of `path`, its first instruction classified.
ResolvedProbe ProbeAt(const ProbeSpec& spec, const symbols::ElfFile& elf, const std::string& path, std::string symbol,
                      uint64_t address, uint64_t file_offset) {
  ResolvedProbe probe;
  probe.spec = spec;
  probe.binary_path = path;
  probe.symbol = std::move(symbol);
  probe.address = address;
  probe.file_offset = file_offset;
  if (auto bytes = elf.ReadAtAddress(address, 16)) probe.instruction = symbols::ClassifyProbeInstruction(*bytes);
  probe.entry_instruction = probe.instruction;
  return probe;
}

// provider:name -> its first site (and how many there are).
PlanResult<std::vector<ResolvedProbe>> ResolveUsdt(const ProbeSpec& spec, const symbols::ElfFile& elf,
                                                   const std::string& path, const std::string& where) {
  size_t colon = spec.point.find(':');
  auto sites = elf.FindUsdt(spec.point.substr(0, colon), spec.point.substr(colon + 1));
  if (sites.empty()) {
    std::vector<std::string> known;
    for (const auto& p : elf.usdt_probes()) {
      std::string full = p.provider + ":" + p.name;
      if (std::find(known.begin(), known.end(), full) == known.end()) known.push_back(full);
      if (known.size() == 8) break;
    }
    return NoSuchPoint(fmt::format("{}: usdt probe {} not found in {}", where, spec.point, path),
                       known.empty() ? "the binary has no USDT probes (readelf -n shows .note.stapsdt)"
                                     : "probes in this binary include: " + JoinNames(known));
  }
  RETURN_IF_ERROR(CheckUsdtArguments(spec, *sites.front(), path, where));
  ResolvedProbe probe = ProbeAt(spec, elf, path, spec.point, sites.front()->address, sites.front()->file_offset);
  probe.usdt_sites = sites.size();
  probe.semaphore_address = sites.front()->semaphore_address;
  return std::vector<ResolvedProbe>{std::move(probe)};
}

// *(SYMBOL+OFFSET): a function pointer stored in the file's data, the function it points to.
PlanResult<std::vector<ResolvedProbe>> ResolvePointer(const ProbeSpec& spec, const PointerPoint& pointer,
                                                      const symbols::ElfFile& elf, const std::string& path,
                                                      const std::string& where) {
  auto address = symbols::ReadStoredPointer(elf, pointer.symbol, pointer.offset);
  auto offset = address ? elf.AddressToFileOffset(*address) : Result<uint64_t>(std::unexpected(address.error()));
  if (!offset)
    return NoSuchPoint(fmt::format("{}: {}: {}", where, spec.point, offset.error().message), offset.error().hint);
  const symbols::Symbol* fn = elf.FindFunctionByAddress(*address);
  std::string symbol = fn && fn->address == *address ? fmt::format("{} = {}", spec.point, fn->demangled)
                                                     : fmt::format("{} = {:#x}", spec.point, *address);
  return std::vector<ResolvedProbe>{ProbeAt(spec, elf, path, std::move(symbol), *address, *offset)};
}

// A symbol or glob: every function it names; else a point in a runtime's own syntax.
PlanResult<std::vector<ResolvedProbe>> ResolveSymbols(const ProbeSpec& spec, const symbols::ElfFile& elf,
                                                      const std::string& path, const std::string& where) {
  auto functions = elf.FindFunctions(spec.point);
  // A glob names functions, not the thunks that adjust `this` and jump to them (the
  // function itself matches too: a thunk would make every call count twice).
  if (IsGlobPoint(spec.point))
    std::erase_if(functions, [](const symbols::Symbol* fn) { return IsThunk(fn->demangled); });
  std::vector<ResolvedProbe> probes;
  for (const symbols::Symbol* fn : functions)
    probes.push_back(ProbeAt(spec, elf, path, fn->demangled, fn->address, fn->file_offset));
  if (!probes.empty()) return probes;
  // A runtime's point ("PyContext_Type.run": a C method found through its type's method table).
  if (auto address = ResolveRuntimePoint(elf, spec.point)) {
    auto offset = elf.AddressToFileOffset(*address);
    if (!offset) {
      Error e = offset.error();
      e.message = where + ": " + e.message;
      return std::unexpected(e);
    }
    ResolvedProbe probe = ProbeAt(spec, elf, path, spec.point, *address, *offset);
    probe.entry_instruction = {};  // left unclassified: placement keeps the probe on the method's entry
    return std::vector<ResolvedProbe>{std::move(probe)};
  }
  std::string message = fmt::format("{}: symbol '{}' not found in {}", where, spec.point, path);
  // An optional line left out shows no hint: the "did you mean" search scans every symbol
  // (a JVM's optional lines cost ~5% of a session's CPU computing hints nobody read).
  if (spec.optional) return NoSuchPoint(std::move(message), "");
  auto closest = elf.ClosestNames(spec.point, 5);
  return NoSuchPoint(std::move(message), closest.empty() ? "the binary has no function symbols (stripped?)"
                                                         : "closest names: " + JoinNames(closest));
}

// Two lines of one role that land on one instruction (a symbol and its alias, a glob and a
// name, a pointer and the function it holds) make two events of every hit: a message
// nested in itself, 0 ms long. Said, naming both lines; the second still attaches.
void WarnAboutRolesBoundTwice(AttachPlan& plan) {
  std::map<std::tuple<Role, ProbeKind, std::string, uint64_t>, const ResolvedProbe*> first;
  std::set<std::pair<std::string, std::string>> said;
  for (const ResolvedProbe& probe : plan.probes) {
    if (probe.spec.kind == ProbeKind::kUsdt) continue;
    auto [it, added] =
        first.try_emplace({probe.spec.role, probe.spec.kind, probe.binary_path, probe.file_offset}, &probe);
    const ResolvedProbe& other = *it->second;
    if (added || other.spec.Where() == probe.spec.Where() || other.spec.conditions != probe.spec.conditions) continue;
    if (!said.insert({other.spec.Where(), probe.spec.Where()}).second) continue;
    plan.warnings.push_back(fmt::format(
        "{} and {} both bind {} at {} in {}: every hit makes two events (a 0 ms message inside each message); "
        "keep one of the two lines",
        other.spec.Where(), probe.spec.Where(), RoleName(probe.spec.role), probe.symbol,
        std::filesystem::path(probe.binary_path).filename().string()));
  }
}

}  // namespace

PlanResult<AttachPlan> ResolveProfile(const Profile& profile, const TargetBinaries& target) {
  AttachPlan plan;
  plan.profile_name = profile.name;
  ElfCache elf_cache;  // one pass per ELF file
  RETURN_IF_ERROR(CheckMarks(profile, target, &elf_cache, &plan));

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
      PlanError e = resolved.error();
      e.message = where + ": " + e.message;
      return std::unexpected(e);
    }
    const std::string path = *resolved;
    auto it = elf_cache.find(path);
    if (it == elf_cache.end()) {
      auto elf = symbols::ModuleCache::Default()->Elf(path);
      if (!elf) {
        if (skip_optional(elf.error())) continue;
        Error e = elf.error();
        e.message = where + ": " + e.message;
        e.code = ExitCode::kProfile;
        return std::unexpected(e);
      }
      it = elf_cache.emplace(path, std::move(*elf)).first;
    }
    const symbols::ElfFile& elf = *it->second;

    PlanResult<std::vector<ResolvedProbe>> probes;
    if (spec.kind == ProbeKind::kUsdt)
      probes = ResolveUsdt(spec, elf, path, where);
    else if (auto pointer = ParsePointerPoint(spec.point))
      probes = ResolvePointer(spec, *pointer, elf, path, where);
    else
      probes = ResolveSymbols(spec, elf, path, where);
    if (!probes) {
      if (probes.error().kind == PlanErrorKind::kNoSuchPoint && skip_optional(probes.error())) continue;
      return std::unexpected(probes.error());
    }
    for (ResolvedProbe& probe : *probes) {
      if (plan.probes.size() >= 0xFFFF)
        return MakeError(fmt::format("{}: too many probe points", where), ExitCode::kProfile);
      probe.probe_id = static_cast<uint16_t>(plan.probes.size());
      plan.probes.push_back(std::move(probe));
    }
  }
  WarnAboutRolesBoundTwice(plan);
  PlaceProbes(plan, elf_cache, target);
  return plan;
}

}  // namespace looptrace::loader
