// The runtime registry (registry.cc: one line per runtime, in detection order) and what is
// asked of every runtime at once: which one a target runs, a hint when none of its profiles
// fits, special probe points, libraries a launcher loads with dlopen. The checks a chosen
// profile goes through are in plan/runtime_checks.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loader/runtimes/runtime.h"

namespace looptrace::loader {

// Every runtime looptrace knows, in detection order.
const std::vector<const Runtime*>& AllRuntimes();
// The runtime a profile's `runtime NAME` names, or null.
const Runtime* FindRuntime(std::string_view name);

TargetCommand ReadTargetCommand(int pid);
TargetCommand CommandOf(const std::vector<std::string>& argv);  // with looptrace's environment

// The runtime of the target (live: its executable and mapped files; run: the executable and
// the libraries it links or, for a java launcher, loads); name "" when none.
RuntimeInfo IdentifyRuntime(const TargetBinaries& target);

// The first runtime's hint for "no built-in profile matches", or "".
std::string DiagnoseRuntime(const TargetBinaries& target, const TargetCommand& command);

// A point in a runtime's own syntax, resolved by the first runtime that knows it.
std::optional<uint64_t> ResolveRuntimePoint(const symbols::ElfFile& elf, std::string_view point);

// A library a runtime's launcher loads with dlopen (for the java launcher,
// JAVA_HOME/lib/server/libjvm.so, as lib/jvm.cfg picks). Nothing when `library` is not such a
// library of `exe_path`.
std::optional<std::string> DlopenedRuntimeLibrary(const std::string& library, const std::string& exe_path);

// The profile BINARY `interpreter`: the file the target's runtime interprets with (the
// executable, or a shared build's libpython3.X.so); nothing when no runtime knows one.
std::optional<std::string> InterpreterBinaryOf(const TargetBinaries& target);

// Interpreter frames for the target's runtime (process `pid`), or null: none known, or its
// interpreter cannot be read (then one warning line says why; messages still work).
std::unique_ptr<InterpreterSupport> InterpreterOf(const TargetBinaries& target, int pid);

}  // namespace looptrace::loader
