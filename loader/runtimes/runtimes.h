// Runtimes whose event loops live in interpreted code (CPython, HotSpot): what looptrace
// needs to know about them beyond a profile's probe points. Which runtime a target runs,
// where a runtime keeps a library it loads with dlopen (HotSpot's libjvm.so), whether the
// probes a profile needs are on (CPython built with USDT probes, HotSpot's method and monitor
// probe flags), and one-line diagnostics naming the cause and the fix when they are not.
// Implemented per runtime in runtime_python.cc and runtime_jvm.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// What a target runs, as far as runtime profiles care.
struct RuntimeInfo {
  std::string name;    // "python", "jvm", or "" (none looptrace knows)
  std::string binary;  // the file its probes are in (python's executable, libjvm.so), if found
  std::string what;    // for messages: "CPython (/usr/bin/python3.11)", "HotSpot JVM (.../libjvm.so)"
};

// The target's command line and environment (run: the command and looptrace's environment;
// record: /proc/PID/cmdline and /proc/PID/environ), for runtime options given there.
struct TargetCommand {
  std::vector<std::string> argv;
  std::vector<std::string> environ;  // "NAME=value"
  bool known = false;                // false when /proc could not be read
};
TargetCommand ReadTargetCommand(int pid);
TargetCommand CommandOf(const std::vector<std::string>& argv);  // with looptrace's environment

// The runtime of the target (live: its executable and mapped files; run: the executable and
// the libraries it links or, for a java launcher, loads).
RuntimeInfo IdentifyRuntime(const TargetBinaries& target);

// A library a runtime's launcher loads with dlopen instead of linking it: for the java
// launcher, JAVA_HOME/lib/server/libjvm.so (as lib/jvm.cfg picks). Nothing when `library`
// is not such a library of `exe_path`.
std::optional<std::string> DlopenedRuntimeLibrary(const std::string& library, const std::string& exe_path);

// Before attaching: every runtime the profile declares (`runtime python`) must be the
// target's, and have what the profile needs on. An error names the cause and the fix; what
// only degrades the report is a warning (logged). `plan` is the resolved profile.
Result<void> CheckRuntimes(const Profile& profile, const AttachPlan& plan, const TargetBinaries& target,
                           const TargetCommand& command);

// Before resolving a profile that declares runtimes: the target must run them (a python
// profile on a JVM is a one-line error saying what the target runs).
Result<void> CheckRuntimePresent(const Profile& profile, const TargetBinaries& target);

// A hint for "no built-in profile matches": what looptrace sees of a runtime it knows in the
// target and what is missing (a CPython built without USDT probes, a shim script), or "".
std::string DiagnoseRuntime(const TargetBinaries& target, const TargetCommand& command);

// Per runtime (runtime_python.cc, runtime_jvm.cc).
namespace python {
// A C method of a CPython type, by the type's method table: POINT "PyContext_Type.run" is the
// C function behind contextvars.Context.run (the exported PyTypeObject's tp_methods). Nothing
// when `point` is not TYPE.METHOD, or the binary has no such type or method.
std::optional<uint64_t> ResolveTypeMethod(const symbols::ElfFile& elf, std::string_view point);

bool Looks(const TargetBinaries& target, RuntimeInfo* info);
Result<void> Check(const Profile& profile, const AttachPlan& plan, const TargetBinaries& target,
                   const TargetCommand& command);
std::string Diagnose(const TargetBinaries& target, const TargetCommand& command);
}  // namespace python

namespace jvm {
bool Looks(const TargetBinaries& target, RuntimeInfo* info);
Result<void> Check(const Profile& profile, const AttachPlan& plan, const TargetBinaries& target,
                   const TargetCommand& command);
std::string Diagnose(const TargetBinaries& target, const TargetCommand& command);

// HotSpot's DTrace probe flags as the command line and environment set them
// (-XX:+DTraceMethodProbes, -XX:+DTraceMonitorProbes, -XX:+ExtendedDTraceProbes; the last
// word wins; JAVA_TOOL_OPTIONS and _JAVA_OPTIONS apply to every JVM, JDK_JAVA_OPTIONS to the
// java launcher). `certain` is false when options may come from elsewhere (@argfiles,
// -XX:Flags=, -XX:VMOptionsFile=).
struct ProbeFlags {
  bool method = false;
  bool monitor = false;
  bool certain = true;
};
ProbeFlags ParseProbeFlags(const TargetCommand& command);
}  // namespace jvm

}  // namespace looptrace::loader
