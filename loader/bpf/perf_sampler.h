// perf cpu-clock events that drive BPF sampling programs.
#pragma once

#include <string_view>
#include <vector>

#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

// A software cpu-clock event of CPU `cpu`, `hz` samples a second of whatever runs on it
// (perf record -a's clock). One per CPU rather than one per sampled thread: a thread's
// clock arms a timer at each of its switch-ins and cancels it at each switch-out, which a
// loop thread that sleeps in epoll_wait between requests pays twice a request.
Result<UniqueFd> OpenCpuClockOfCpu(int cpu, int hz);

// The CPUs of a sysfs cpu list ("0-3,6,8-9\n"), ascending.
Result<std::vector<int>> ParseCpuList(std::string_view list);

// The online CPUs (/sys/devices/system/cpu/online).
Result<std::vector<int>> OnlineCpus();

}  // namespace looptrace::loader
