// A profile's BINARY names (exe, an absolute path, a library name) -> files of the target:
// what a running process maps, or what a command not started yet links (DT_NEEDED) or, for a
// runtime's launcher, loads with dlopen (runtimes.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loader/plan/attach_plan.h"

namespace looptrace::loader {

// Path of a profile BINARY ("exe", absolute path, or library name) for the target. A library
// the target does not map (or, with require_linked, link) is a kDoesNotFit error.
PlanResult<std::string> ResolveBinary(const std::string& binary, const TargetBinaries& target);

// Whether `library` is in the executable's DT_NEEDED closure (a few levels deep).
bool LinksLibrary(const TargetBinaries& target, const std::string& library);

// The target's ELF objects: the files it maps (record), or its executable and the DT_NEEDED
// closure (run), as (name to show, path to open).
std::vector<std::pair<std::string, std::string>> TargetObjects(const TargetBinaries& target);

}  // namespace looptrace::loader
