// One HotSpot process read from outside, through the layouts the JVM exports for debuggers
// (vm_structs.h): its Java threads, their frames (interpreted: the Method* and bcp the
// interpreter keeps below fp; compiled: the nmethod found through the code heap's segment
// map, unwound by its frame size) from each thread's last Java frame anchor, named by
// method_namer.h. Stall snapshots get a jstack-like dump of every Java thread that is
// stopped in the VM or in native code (a thread running Java code has no anchor to start
// from: its snapshot keeps its native stack).
#pragma once

#include <memory>

#include "loader/runtimes/interpreter.h"
#include "loader/target/target_binaries.h"

namespace looptrace::loader::jvm {

Result<std::unique_ptr<InterpreterSupport>> MakeHotSpotSupport(const TargetBinaries& target, int pid);

}  // namespace looptrace::loader::jvm
