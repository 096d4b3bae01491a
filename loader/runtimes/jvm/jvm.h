// HotSpot: detected by the libjvm.so a process maps or a java launcher loads with dlopen;
// checked for the DTrace probe flags its method and monitor probes need.
#pragma once

#include <optional>
#include <string>

#include "loader/runtimes/runtime.h"

namespace looptrace::loader::jvm {

// The registered runtime (registry.cc).
const Runtime& HotSpot();

// The libjvm.so the java launcher at `exe_path` loads: JAVA_HOME/lib/<vm>/libjvm.so, <vm> as
// lib/jvm.cfg picks. Nothing when `library` is not libjvm or `exe_path` is not in a JDK's bin/.
std::optional<std::string> LauncherLibjvm(const std::string& library, const std::string& exe_path);

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

}  // namespace looptrace::loader::jvm
