// Moves uprobes off function entries the kernel would single-step onto equivalent
// instructions it emulates (symbols/probe_relocation.h), and records why for each probe
// (`looptrace probes` shows it).
//
// The rules, per function whose first instruction is single-stepped (a probe whose entry
// is emulated or cannot be decoded is never moved):
// - an entry uprobe moves to the entry block's first emulated instruction when the
//   skipped instructions write no argument register the probe reads (nor memory, when
//   it reads a string), else to every call site when those are all of the function's
//   entries (symbols::CallSites::complete: direct calls in the same binary, not
//   exported, address never taken);
// - a uretprobe moves to the instruction after every call when all sites are calls whose
//   next instruction nothing else reaches: there the callee has returned and %rax holds
//   its result, as a uretprobe sees it; each return fires once;
// - all or nothing per function: when one of its probes must stay at the entry (which
//   keeps its single-stepped breakpoint), the others stay too, because moving them would
//   add traps instead of removing one;
// - an instruction after a call that is also another probe's location keeps the
//   uretprobe (two probes on one instruction fire in no defined order).
// Kernels without uprobe_multi attach one link per location, each costing ~0.1 s to
// detach: there a probe moves to at most 8 call sites.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "loader/plan/attach_plan.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::loader {

// Places every uprobe/uretprobe of `plan` (in place). `elves` holds the plan's binaries.
// With target.exact_entry nothing moves; single-stepped probes get a note saying so. An
// exported function counts as called only from its own binary when none of the target's
// other modules (mapped by target.pid, else the executable's DT_NEEDED closure and
// LD_PRELOAD) imports its name.
void PlaceProbes(AttachPlan& plan, const std::map<std::string, std::shared_ptr<const symbols::ElfFile>>& elves,
                 const TargetBinaries& target);

}  // namespace looptrace::loader
