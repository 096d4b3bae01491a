// perf cpu-clock events that drive BPF sampling programs.
#pragma once

#include <sys/types.h>

#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

// A software cpu-clock event counting thread `tid`'s CPU time, `hz` samples per second of
// it (no samples while the thread does not run).
Result<UniqueFd> OpenCpuClock(pid_t tid, int hz);

}  // namespace looptrace::loader
