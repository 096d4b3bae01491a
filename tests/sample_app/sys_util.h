// Clock and thread helpers shared by the sample target.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_SYS_UTIL_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_SYS_UTIL_H_

#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace looptrace::sample {

inline constexpr uint64_t kNsPerUs = 1'000;
inline constexpr uint64_t kNsPerMs = 1'000'000;
inline constexpr uint64_t kNsPerSec = 1'000'000'000;

// CLOCK_MONOTONIC in nanoseconds: the clock of every timestamp in the truth
// file and of every Message::when_ns.
inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in nanoseconds: the truth of
// each message's CPU time.
inline uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

// How many times the calling thread left its CPU (voluntary and involuntary context
// switches, getrusage RUSAGE_THREAD): unchanged over a stretch means the thread held its CPU
// throughout, so its wall time there is its time on the CPU (steal included).
inline uint64_t ThreadContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<uint64_t>(usage.ru_nvcsw) + static_cast<uint64_t>(usage.ru_nivcsw);
}

inline timespec ToTimespec(uint64_t ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / kNsPerSec);
  ts.tv_nsec = static_cast<long>(ns % kNsPerSec);
  return ts;
}

// Kernel thread id of the calling thread (cached per thread).
inline pid_t CurrentTid() {
  thread_local const pid_t tid = gettid();
  return tid;
}

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_SYS_UTIL_H_
