#include "loader/plan/probe_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "loader/target/kernel_release.h"
#include "looptrace/events.h"
#include "looptrace/symbols/probe_relocation.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

constexpr size_t kMaxSites = 1u << 16;
constexpr size_t kMaxSitesWithoutMulti = 8;

bool KernelHasUprobeMulti() { return KernelAtLeast(6, 6); }

bool IsSingleStep(const ResolvedProbe& p) {
  return p.spec.kind != ProbeKind::kUsdt && p.entry_instruction.cost == symbols::ProbeCost::kSingleStep;
}

// Registers a probe reads (arguments 1..6, the return value), for its recorded arguments,
// string lengths and conditions; whether it reads memory through them (strings); and the
// first stack argument (7..12) it reads, if any: those sit at the entry's %rsp + 8 * k,
// which a call site (no return address pushed yet) or a skipped push/sub moves.
symbols::ArgumentMask ArgumentsRead(const ProbeSpec& spec, bool* reads_memory, int* stack_argument) {
  symbols::ArgumentMask mask = 0;
  *reads_memory = false;
  *stack_argument = 0;
  auto add = [&](uint8_t source) {
    if (source < 6)
      mask |= 1u << source;
    else if (source < LT_MAX_SOURCES && !*stack_argument)
      *stack_argument = source + 1;
    if (source == LT_SOURCE_RETVAL) mask |= symbols::kReturnRegister;
  };
  auto add_arg = [&](const ArgSource& arg) {
    add(arg.source);
    if (arg.length_source != LT_SOURCE_NONE) add(arg.length_source);
    if (arg.type == ArgType::kStr || arg.type == ArgType::kPyCallable) *reads_memory = true;
  };
  for (const ArgSpec& arg : spec.args) add_arg(arg);
  for (const Condition& condition : spec.conditions) {
    add_arg(condition.arg);
    if (IsStringOp(condition.op)) *reads_memory = true;
  }
  return mask;
}

std::string RegisterList(symbols::ArgumentMask mask) {
  std::string out;
  for (int i = 0; i < 7; ++i) {
    if (!(mask & (1u << i))) continue;
    if (!out.empty()) out += ", ";
    out += i == 6 ? "%rax (ret)" : fmt::format("{} (arg{})", symbols::ArgumentRegisterName(i), i + 1);
  }
  return out;
}

ProbeLocation ToLocation(const symbols::CodeLocation& code, std::string where) {
  return ProbeLocation{code.address, code.file_offset, code.instruction, std::move(where)};
}

// The most expensive instruction among the locations (what a hit costs at worst).
symbols::InstructionInfo Worst(const std::vector<ProbeLocation>& locations) {
  auto rank = [](symbols::ProbeCost c) {
    return c == symbols::ProbeCost::kSingleStep ? 2 : c == symbols::ProbeCost::kUnknown ? 1 : 0;
  };
  symbols::InstructionInfo worst = locations.front().instruction;
  for (const ProbeLocation& l : locations)
    if (rank(l.instruction.cost) > rank(worst.cost)) worst = l.instruction;
  return worst;
}

std::string Plural(size_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

// The target's modules besides `binary`, with what each imports.
symbols::OtherModules ModulesOtherThan(const std::string& binary, const TargetBinaries& target) {
  std::vector<std::string> paths;
  if (target.pid > 0) {
    if (auto maps = symbols::ReadProcMaps(target.pid))
      for (const auto& m : *maps)
        if (m.path.starts_with("/")) paths.push_back(symbols::MappedFileOpenPath(target.pid, m));
  } else {
    paths.push_back(target.exe_path);
    if (const char* preload = getenv("LD_PRELOAD")) {
      std::string list = preload;
      for (size_t at = 0; at < list.size();) {
        size_t end = list.find_first_of(": ", at);
        if (end == std::string::npos) end = list.size();
        if (end > at) paths.push_back(list.substr(at, end - at));
        at = end + 1;
      }
    }
    for (size_t i = 0; i < paths.size() && i < 512; ++i) {
      auto info = symbols::ReadDynamicInfo(paths[i]);
      if (!info) continue;
      for (const auto& needed : info->needed)
        if (auto path = symbols::SearchLibrary(needed, target.ld_library_path, target.exe_path)) paths.push_back(*path);
    }
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  symbols::OtherModules others;
  for (const std::string& path : paths) {
    if (path == binary) continue;
    if (auto imports = symbols::ReadDynamicImports(path)) others.imports.emplace_back(path, std::move(*imports));
  }
  return others;
}

// Every probe on one function entry of one binary.
struct Group {
  std::string binary;
  uint64_t address = 0;
  std::vector<ResolvedProbe*> probes;
  const symbols::Symbol* function = nullptr;
  symbols::RelocationAnalysis analysis;
  std::string error;        // the analysis could not run
  std::string keep_return;  // why its uretprobes must stay (a collision), "" if free
};

void Keep(ResolvedProbe& p, std::string why) {
  p.placement = Placement::kEntry;
  p.locations.clear();
  p.instruction = p.entry_instruction;
  p.placement_note = "entry kept (single-stepped): " + std::move(why);
}

// Decides every probe of the group; see probe_placement.h for the rules.
void Decide(Group& g, size_t max_sites) {
  const symbols::EntryBlockPoint& block = g.analysis.entry_block;
  const symbols::CallSites& calls = g.analysis.call_sites;
  const std::string name = g.function ? g.function->demangled : g.probes.front()->symbol;
  std::string calls_why = calls.why_not;
  if (calls.complete && calls.sites.size() > max_sites)
    calls_why = fmt::format("{} exceed the limit of {}{}", Plural(calls.sites.size(), "call site"), max_sites,
                            max_sites == kMaxSitesWithoutMulti ? " without uprobe_multi (kernel < 6.6)" : "");
  const bool calls_ok = calls.complete && calls_why.empty();

  std::string first_kept;  // role of the first probe that stays at the entry, and why
  for (ResolvedProbe* p : g.probes) {
    if (!g.error.empty()) {
      Keep(*p, g.error);
      continue;
    }
    bool reads_memory = false;
    int stack_argument = 0;
    const symbols::ArgumentMask reads = ArgumentsRead(p->spec, &reads_memory, &stack_argument);
    if (stack_argument) {
      Keep(*p,
           fmt::format("it reads arg{}, a stack argument, whose slot is relative to the entry's %rsp", stack_argument));
      if (first_kept.empty())
        first_kept = fmt::format("its {} {}", RoleName(p->spec.role), ProbeKindName(p->spec.kind));
      continue;
    }
    if (p->spec.kind == ProbeKind::kUprobe) {
      std::string block_why = block.why_not;
      if (block.point) {
        if (block.written_arguments & reads)
          block_why =
              fmt::format("the skipped '{}' write {}", block.skipped, RegisterList(block.written_arguments & reads));
        else if (reads_memory && block.writes_memory)
          block_why = fmt::format("the skipped '{}' write memory a string argument may point to", block.skipped);
      }
      if (block.point && block_why.empty()) {
        const uint64_t offset = block.point->address - p->address;
        p->placement = Placement::kEntryBlock;
        p->locations = {ToLocation(*block.point, fmt::format("entry+{:#x}", offset))};
        p->placement_note = fmt::format(
            "entry block: the first instruction '{}' is single-stepped; +{:#x} is emulated and only "
            "the entry reaches it; the skipped '{}' write no register the probe reads",
            p->entry_instruction.mnemonic, offset, block.skipped);
      } else if (calls_ok) {
        p->placement = Placement::kCallSites;
        p->locations.clear();
        for (const symbols::CallSite& s : calls.sites)
          p->locations.push_back(ToLocation(
              s.site, fmt::format("{} in {}", s.tail_call ? "tail call" : "call", s.caller.empty() ? "?" : s.caller)));
        p->placement_note = fmt::format(
            "call sites: all entries are direct calls ({}; address never taken, {}), the arguments "
            "in their registers; entry block: {}",
            calls.sites.size(), calls.note.empty() ? "not exported" : calls.note, block_why);
      } else {
        Keep(*p, fmt::format("entry block: {}; call sites: {}", block_why, calls_why));
        if (first_kept.empty()) first_kept = fmt::format("its {} uprobe", RoleName(p->spec.role));
      }
      continue;
    }
    // A uretprobe.
    std::string after_why = calls_why;
    if (calls_ok && !g.keep_return.empty()) after_why = g.keep_return;
    if (calls_ok && after_why.empty()) {
      for (const symbols::CallSite& s : calls.sites) {
        if (!s.after) {
          after_why = fmt::format("after the call at {:#x}: {}", s.site.address, s.after_why_not);
          break;
        }
      }
    }
    if (after_why.empty()) {
      p->placement = Placement::kAfterCalls;
      p->locations.clear();
      size_t later = 0;
      for (const symbols::CallSite& s : calls.sites) {
        const std::string caller = s.caller.empty() ? "?" : s.caller;
        // Later in the block the call returns to, when the skipped instructions leave
        // what the probe reads alone.
        if (s.after_emulated && !(s.after_written & reads) && !(reads_memory && s.after_writes_memory)) {
          ++later;
          p->locations.push_back(ToLocation(
              *s.after_emulated, fmt::format("after call in {} +{:#x} (skips {})", caller,
                                             s.after_emulated->address - s.after->address, s.after_skipped)));
        } else {
          p->locations.push_back(ToLocation(*s.after, fmt::format("after call in {}", caller)));
        }
      }
      p->placement_note = fmt::format(
          "after calls: {} returns to {} where %rax holds its result and nothing else jumps in{}; "
          "no trap at its single-stepped entry",
          name, Plural(calls.sites.size(), "call site"),
          later ? fmt::format(" ({} probed at the first emulated instruction of that block)", later) : "");
    } else {
      Keep(*p, "instructions after its calls: " + after_why);
      if (first_kept.empty()) first_kept = fmt::format("its {} uretprobe", RoleName(p->spec.role));
    }
  }
  if (first_kept.empty()) return;
  // The entry keeps a breakpoint: moving the other probes would only add traps.
  for (ResolvedProbe* p : g.probes) {
    if (p->placement == Placement::kEntry) continue;
    Keep(*p, fmt::format("{} stays at the entry, which keeps its breakpoint; moving this probe "
                         "would add a trap",
                         first_kept));
  }
}

}  // namespace

void PlaceProbes(AttachPlan& plan, const std::map<std::string, std::shared_ptr<const symbols::ElfFile>>& elves,
                 const TargetBinaries& target) {
  const bool exact_entry = target.exact_entry;
  std::vector<Group> groups;
  std::map<std::pair<std::string, uint64_t>, size_t> group_of;
  for (ResolvedProbe& p : plan.probes) {
    if (!IsSingleStep(p)) continue;
    if (exact_entry) {
      Keep(p, "--exact-entry");
      continue;
    }
    auto [it, fresh] = group_of.try_emplace({p.binary_path, p.address}, groups.size());
    if (fresh) groups.push_back(Group{p.binary_path, p.address, {}, nullptr, {}, "", ""});
    groups[it->second].probes.push_back(&p);
  }
  if (groups.empty()) return;

  // One analysis per binary, for all its functions at once.
  std::map<std::string, std::vector<Group*>> by_binary;
  for (Group& g : groups) by_binary[g.binary].push_back(&g);
  for (auto& [binary, members] : by_binary) {
    auto elf = elves.find(binary);
    if (elf == elves.end()) {
      for (Group* g : members) g->error = "the binary is not open";
      continue;
    }
    std::vector<const symbols::Symbol*> functions;
    for (Group* g : members) {
      const symbols::Symbol* fn = elf->second->FindFunctionByAddress(g->address);
      if (fn && fn->address == g->address) {
        g->function = fn;
        functions.push_back(fn);
      } else {
        g->error = "no function symbol starts there";
      }
    }
    auto relocator = symbols::ProbeRelocator::Create(*elf->second);
    if (!relocator) {
      for (Group* g : members) g->error = relocator.error().message;
      continue;
    }
    const symbols::OtherModules others = ModulesOtherThan(binary, target);
    const auto started = std::chrono::steady_clock::now();
    auto analyses = (*relocator)->Analyze(functions, &others);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (seconds > 1.0)
      log::Info("disassembling {} for cheaper probe points took {:.1f} s ({} functions; --exact-entry skips it)",
                binary, seconds, functions.size());
    size_t next = 0;
    for (Group* g : members)
      if (g->function) g->analysis = std::move(analyses[next++]);
  }

  const size_t max_sites = KernelHasUprobeMulti() ? kMaxSites : kMaxSitesWithoutMulti;
  // Decide; an instruction after a call that another probe also uses sends that
  // function's uretprobes back to the entry, then the group is decided again.
  for (int round = 0; round < 8; ++round) {
    for (Group& g : groups) Decide(g, max_sites);
    std::map<std::pair<std::string, uint64_t>, std::vector<const ResolvedProbe*>> at;
    for (const ResolvedProbe& p : plan.probes) {
      if (p.spec.kind == ProbeKind::kUsdt) continue;
      if (p.placement == Placement::kEntry) at[{p.binary_path, p.address}].push_back(&p);
      for (const ProbeLocation& l : p.locations) at[{p.binary_path, l.address}].push_back(&p);
    }
    bool changed = false;
    for (Group& g : groups) {
      if (!g.keep_return.empty()) continue;
      for (const ResolvedProbe* p : g.probes) {
        if (p->placement != Placement::kAfterCalls) continue;
        for (const ProbeLocation& l : p->locations) {
          for (const ResolvedProbe* other : at[{p->binary_path, l.address}]) {
            if (other == p || !g.keep_return.empty()) continue;
            g.keep_return = fmt::format(
                "the instruction after the call at {:#x} is also where {} {} "
                "fires, and two probes at one address fire in no defined order",
                l.address, RoleName(other->spec.role), other->symbol);
          }
        }
      }
      changed |= !g.keep_return.empty();
    }
    if (!changed) break;
  }
  for (ResolvedProbe& p : plan.probes)
    if (p.placement != Placement::kEntry) p.instruction = Worst(p.locations);
}

}  // namespace looptrace::loader
