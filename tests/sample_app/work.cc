#include "work.h"

#include <cerrno>
#include <ctime>

#include "sys_util.h"

namespace looptrace::sample {

std::string_view WorkKindName(WorkKind kind) {
  switch (kind) {
    case WorkKind::kSpin:
      return "spin";
    case WorkKind::kSleep:
      return "sleep";
    case WorkKind::kMixed:
      return "mixed";
  }
  return "unknown";
}

__attribute__((noinline)) void SpinUntil(uint64_t deadline_ns) {
  while (NowNs() < deadline_ns) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
}

__attribute__((noinline)) void SleepUntil(uint64_t deadline_ns) {
  const timespec deadline = ToTimespec(deadline_ns);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr) == EINTR) {
  }
}

void SpinFor(uint64_t duration_ns) { SpinUntil(NowNs() + duration_ns); }

void SleepFor(uint64_t duration_ns) { SleepUntil(NowNs() + duration_ns); }

__attribute__((noinline)) void DoWork(WorkKind kind, uint64_t cost_ns) {
  const uint64_t start_ns = NowNs();
  const uint64_t end_ns = start_ns + cost_ns;
  switch (kind) {
    case WorkKind::kSpin:
      SpinUntil(end_ns);
      break;
    case WorkKind::kSleep:
      SleepUntil(end_ns);
      break;
    case WorkKind::kMixed:
      SpinUntil(start_ns + cost_ns / 2);
      SleepUntil(end_ns);
      break;
  }
}

}  // namespace looptrace::sample
