#include "loader/bpf/perf_sampler.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "loader/target/proc_readers.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {

Result<UniqueFd> OpenCpuClockOfCpu(int cpu, int hz) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = static_cast<uint64_t>(hz);
  int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0)
    return SystemError(fmt::format("cannot sample CPU {} (perf cpu-clock)", cpu), errno, ExitCode::kUnsupported);
  return UniqueFd(fd);
}

Result<std::vector<int>> ParseCpuList(std::string_view list) {
  while (!list.empty() && (list.back() == '\n' || list.back() == ' ')) list.remove_suffix(1);
  std::vector<int> cpus;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    const size_t dash = range.find('-');
    const auto first = ParseUnsigned(range.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : ParseUnsigned(range.substr(dash + 1));
    if (!first || !last || *last < *first || (!cpus.empty() && *first <= static_cast<uint64_t>(cpus.back())))
      return MakeError(fmt::format("malformed cpu list near \"{}\"", range));
    if (*last >= (1u << 20)) return MakeError(fmt::format("cpu {} in the cpu list is out of range", *last));
    for (uint64_t cpu = *first; cpu <= *last; ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  if (cpus.empty()) return MakeError("empty cpu list");
  return cpus;
}

Result<std::vector<int>> OnlineCpus() {
  constexpr const char* kPath = "/sys/devices/system/cpu/online";
  ASSIGN_OR_RETURN(std::string text, ReadRegularFile(kPath, "the online CPUs", 4096, ExitCode::kUnsupported));
  auto cpus = ParseCpuList(text);
  if (!cpus) return MakeError(fmt::format("{}: {}", kPath, cpus.error().message), ExitCode::kUnsupported);
  return cpus;
}

}  // namespace looptrace::loader
