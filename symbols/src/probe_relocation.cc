#include "looptrace/symbols/probe_relocation.h"

#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "looptrace/symbols/symbolizer.h"
#include "probe_relocation_impl.h"

namespace looptrace::symbols {
namespace {

using relocation::DescribeReference;
using relocation::Reference;
using relocation::RefKind;
using relocation::TargetSet;

constexpr const char* kArgumentRegisters[7] = {"%rdi", "%rsi", "%rdx", "%rcx", "%r8", "%r9", "%rax"};

// Why an exported function may be entered from another module ("" if no known module
// imports it; `note` then says what the conclusion rests on).
std::string ExportedWhy(const Symbol& fn, const OtherModules* others, std::string* note) {
  if (!others) return "it is exported (.dynsym): other modules may call it";
  for (const auto& [path, names] : others->imports)
    if (std::binary_search(names.begin(), names.end(), fn.name))
      return fmt::format("it is exported (.dynsym) and {} imports it: calls from there would be missed", path);
  *note = fmt::format(
      "exported (.dynsym) but imported by none of the target's {} other modules; a "
      "library loaded later that calls it would be missed, --exact-entry keeps the entry",
      others->imports.size());
  return "";
}

}  // namespace

const char* ArgumentRegisterName(int index) { return index >= 0 && index < 7 ? kArgumentRegisters[index] : "?"; }

ProbeRelocator::ProbeRelocator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProbeRelocator::~ProbeRelocator() = default;

Result<std::unique_ptr<ProbeRelocator>> ProbeRelocator::Create(const ElfFile& elf) {
  auto impl = std::make_unique<Impl>(elf);
  RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<ProbeRelocator>(new ProbeRelocator(std::move(impl)));
}

Result<std::vector<std::string>> ReadDynamicImports(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<const ElfFile> elf, ModuleCache::Default()->Elf(path));
  std::vector<std::string> names;
  Elf* e = elf->elf();
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (size_t i = 1; d && i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(d, static_cast<int>(i), &sym) || sym.st_shndx != SHN_UNDEF) continue;
      if (const char* name = elf_strptr(e, shdr.sh_link, sym.st_name); name && *name) names.emplace_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::vector<RelocationAnalysis> ProbeRelocator::Analyze(std::span<const Symbol* const> functions,
                                                        const OtherModules* others) {
  Impl& m = *impl_;
  std::vector<RelocationAnalysis> results(functions.size());
  if (m.code.empty()) {
    for (auto& r : results) {
      r.entry_block.why_not = r.call_sites.why_not = "the binary has no executable section";
    }
    return results;
  }
  const uint64_t low = m.code.front().address;
  const uint64_t high = m.code.back().address + m.code.back().size;

  // Pass 1: references to the entries (call sites) and to the skipped instructions.
  TargetSet targets(low, high);
  std::unordered_map<uint64_t, std::vector<size_t>> by_entry;
  std::vector<std::tuple<uint64_t, uint64_t, size_t>> skipped;  // (first, last, index)
  for (size_t i = 0; i < functions.size(); ++i) {
    const Symbol& fn = *functions[i];
    RelocationAnalysis& r = results[i];
    r.entry_block = m.EntryBlock(fn);
    if (r.entry_block.point) {
      targets.Add(fn.address + 1, r.entry_block.point->address);
      skipped.emplace_back(fn.address + 1, r.entry_block.point->address, i);
    }
    std::string& why = r.call_sites.why_not;
    if (fn.is_ifunc)
      why = "it is an IFUNC resolver";
    else if (m.exported.contains(fn.address))
      why = ExportedWhy(fn, others, &r.call_sites.note);
    if (why.empty()) why = m.FallThroughInto(fn);
    if (why.empty()) {
      targets.Add(fn.address, fn.address);
      by_entry[fn.address].push_back(i);
    }
  }
  std::sort(skipped.begin(), skipped.end());
  bool over_budget = false;
  std::vector<Reference> refs = m.Scan(targets, &over_budget);
  if (over_budget) {
    // Give up the call sites (they need the most checking), then try the entry blocks alone.
    for (auto& [entry, indices] : by_entry)
      for (size_t i : indices) results[i].call_sites.why_not = m.budget_note;
    by_entry.clear();
    TargetSet blocks(low, high);
    for (auto& [first, last, i] : skipped) blocks.Add(first, last);
    refs = m.Scan(blocks, &over_budget);
    if (over_budget) {
      for (auto& [first, last, i] : skipped) {
        results[i].entry_block.point.reset();
        results[i].entry_block.why_not = m.budget_note;
      }
      skipped.clear();
    }
  }
  for (const Reference& ref : refs) {
    if (auto it = by_entry.find(ref.target); it != by_entry.end()) {
      for (size_t i : it->second) {
        CallSites& cs = results[i].call_sites;
        if (ref.kind == RefKind::kCall || ref.kind == RefKind::kJump) {
          CallSite site;
          site.site = m.Locate(ref.at);
          site.tail_call = ref.kind == RefKind::kJump;
          if (const Symbol* caller = m.elf.FindFunctionByAddress(ref.at)) site.caller = caller->demangled;
          cs.sites.push_back(std::move(site));
          // the after-call candidate is the next instruction: remember its address
          cs.sites.back().after = CodeLocation{ref.at + ref.size, 0, {}};
        } else if (cs.why_not.empty()) {
          cs.why_not = "it is reached by " + DescribeReference(ref) +
                       (ref.kind == RefKind::kConditionalJump ? "" : ", not only by direct calls");
          if (ref.kind == RefKind::kOperand || ref.kind == RefKind::kData || ref.kind == RefKind::kRelocation)
            cs.why_not =
                "its address is taken: " + DescribeReference(ref) + " (calls through pointers would be missed)";
        }
      }
      continue;
    }
    // A reference into a skipped range. Ranges of different functions do not overlap;
    // aliases of one function share theirs.
    auto it = std::upper_bound(skipped.begin(), skipped.end(), ref.target,
                               [](uint64_t t, const auto& s) { return t < std::get<0>(s); });
    if (it == skipped.begin()) continue;
    const uint64_t first = std::get<0>(*std::prev(it));
    while (it != skipped.begin() && std::get<0>(*std::prev(it)) == first) {
      --it;
      auto& [range_first, last, i] = *it;
      if (ref.target > last) continue;
      EntryBlockPoint& eb = results[i].entry_block;
      if (eb.point) {
        eb.why_not = fmt::format("{} reaches +{:#x}, inside the entry block", DescribeReference(ref),
                                 ref.target - functions[i]->address);
        eb.point.reset();
      }
    }
  }

  // Pass 2: the instruction after each call must be reachable only by that return.
  TargetSet afters(low, high);
  std::vector<std::tuple<uint64_t, uint64_t, CallSite*>> after_ranges;  // [after, last]
  for (size_t i = 0; i < functions.size(); ++i) {
    CallSites& cs = results[i].call_sites;
    if (!cs.why_not.empty()) {
      cs.sites.clear();
      continue;
    }
    std::sort(cs.sites.begin(), cs.sites.end(),
              [](const CallSite& a, const CallSite& b) { return a.site.address < b.site.address; });
    if (cs.sites.empty()) {
      cs.why_not = "it has no direct call site";
      continue;
    }
    cs.complete = true;
    const CallSite* tail = nullptr;
    for (const CallSite& s : cs.sites)
      if (s.tail_call && !tail) tail = &s;
    for (CallSite& s : cs.sites) {
      const uint64_t after = s.after ? s.after->address : 0;
      s.after.reset();
      if (s.tail_call) {
        s.after_why_not = "a tail call returns to its caller's caller";
        continue;
      }
      if (tail) {
        s.after_why_not =
            fmt::format("the function is also tail-called at {:#x}, returning elsewhere", tail->site.address);
        continue;
      }
      const Symbol* caller = m.elf.FindFunctionByAddress(s.site.address);
      if (!caller || caller->size == 0) {
        s.after_why_not = "the call is outside any sized function";
        continue;
      }
      if (after >= caller->address + caller->size) {
        s.after_why_not = fmt::format("the call is the last instruction of {}", caller->demangled);
        continue;
      }
      const Impl::Flow& flow = m.FlowOf(*caller);
      if (!flow.understood || flow.indirect_jump) {
        s.after_why_not = flow.why;
        continue;
      }
      s.after = m.Locate(after);
      uint64_t last = after;
      if (s.after->instruction.cost != ProbeCost::kEmulated) {
        Impl::BlockWalk walk = m.WalkBlock(after, caller->address + caller->size);
        if (walk.point) {
          s.after_emulated = m.Locate(*walk.point);
          s.after_skipped = walk.skipped;
          s.after_written = walk.written;
          s.after_writes_memory = walk.writes_memory;
          last = *walk.point;
        }
      }
      afters.Add(after, last);
      after_ranges.emplace_back(after, last, &s);
    }
  }
  std::sort(after_ranges.begin(), after_ranges.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<Reference> after_refs = m.Scan(afters, &over_budget);
  if (over_budget) {
    for (auto& [first, last, site] : after_ranges) {
      site->after.reset();
      site->after_emulated.reset();
      site->after_why_not = m.budget_note;
    }
    after_ranges.clear();
  }
  for (const Reference& ref : after_refs) {
    // The ranges of different sites do not overlap (each ends before the next call).
    auto it = std::upper_bound(after_ranges.begin(), after_ranges.end(), ref.target,
                               [](uint64_t t, const auto& r) { return t < std::get<0>(r); });
    if (it == after_ranges.begin()) continue;
    auto& [first, last, s] = *std::prev(it);
    if (ref.target > last) continue;
    if (ref.target == first) {
      if (!s->after) continue;
      s->after.reset();
      s->after_emulated.reset();
      s->after_why_not = DescribeReference(ref) + " reaches it as well";
    } else if (s->after_emulated) {
      s->after_emulated.reset();
    }
  }
  return results;
}

}  // namespace looptrace::symbols
