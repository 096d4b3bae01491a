#include "loader/bpf/perf_sampler.h"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>

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

namespace {

std::optional<int> ParseCpu(std::string_view text) {
  int cpu = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), cpu);
  if (ec != std::errc() || end != text.data() + text.size() || cpu < 0) return std::nullopt;
  return cpu;
}

}  // namespace

Result<std::vector<int>> ParseCpuList(std::string_view list) {
  while (!list.empty() && (list.back() == '\n' || list.back() == ' ')) list.remove_suffix(1);
  std::vector<int> cpus;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view range = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    const size_t dash = range.find('-');
    const auto first = ParseCpu(range.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : ParseCpu(range.substr(dash + 1));
    if (!first || !last || *last < *first || (!cpus.empty() && *first <= cpus.back()))
      return MakeError(fmt::format("malformed cpu list near \"{}\"", range));
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.push_back(cpu);
  }
  if (cpus.empty()) return MakeError("empty cpu list");
  return cpus;
}

Result<std::vector<int>> OnlineCpus() {
  constexpr const char* kPath = "/sys/devices/system/cpu/online";
  std::ifstream in(kPath);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return MakeError(fmt::format("cannot read {}", kPath), ExitCode::kUnsupported);
  auto cpus = ParseCpuList(text.str());
  if (!cpus) return MakeError(fmt::format("{}: {}", kPath, cpus.error().message), ExitCode::kUnsupported);
  return cpus;
}

}  // namespace looptrace::loader
