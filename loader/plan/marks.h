// A profile's marks against the target: `requires BINARY SYMBOL` (the runtime's function),
// `requires-call SYMBOL|...` (an import of the executable or a library), `requires-loaded
// GLOB|...` (a file a running process maps). Auto-detection picks a profile only when its
// marks are present; an explicit profile lacking one gets an error saying what is missing.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/symbolizer.h"

namespace looptrace::loader {

// ELF files opened while planning, by path (one pass over each file).
// By path; each file read once per run (symbols::ModuleCache::Elf: shared with the frame
// namer, so a large executable such as node's is not read again once tracing runs).
using ElfCache = std::map<std::string, std::shared_ptr<const symbols::ElfFile>>;

// The marks found go to plan->marks ("g_main_context_iteration in libglib-2.0.so"); a
// `requires-loaded` mark that cannot be checked yet (a command not started), or that a
// running target lacks when the profile was chosen explicitly, goes to plan->assumptions.
// A missing mark is a kDoesNotFit error naming its line.
PlanResult<void> CheckMarks(const Profile& profile, const TargetBinaries& target, ElfCache* elf_cache,
                            AttachPlan* plan);

// "a|b|c": a requires-call / requires-loaded list as the profile line wrote it.
std::string JoinBars(const std::vector<std::string>& items);

}  // namespace looptrace::loader
