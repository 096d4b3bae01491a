// USDT probes guarded by a semaphore (CPython's, sys/sdt.h's STAP_PROBE with
// _SDT_HAS_SEMAPHORES) fire only while their semaphore counter is non-zero; the kernel raises
// it in every process mapping the binary when a probe with its offset is attached. A counter
// still zero after attaching means the probe is disabled and will never fire (typically: the
// process runs another copy of the file than the one probed).
#pragma once

#include <string>
#include <vector>

#include "loader/plan/attach_plan.h"

namespace looptrace::loader {

// One warning per binary of `plan` that process `pid` does not map (a profile naming another
// copy of the program by its absolute path), and per USDT probe point whose semaphore reads
// zero in the process.
std::vector<std::string> DisabledUsdtProbes(int pid, const AttachPlan& plan);

}  // namespace looptrace::loader
