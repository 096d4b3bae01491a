#include "loader/bpf/perf_sampler.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace looptrace::loader {

Result<UniqueFd> OpenCpuClock(pid_t tid, int hz) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = static_cast<uint64_t>(hz);
  int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0)
    return SystemError(fmt::format("cannot sample thread {} (perf cpu-clock)", tid), errno, ExitCode::kUnsupported);
  return UniqueFd(fd);
}

}  // namespace looptrace::loader
