// Simulated work inside a message: busy-spinning (on CPU) and sleeping (off
// CPU). These functions are never inlined so that stack samples show them.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_WORK_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_WORK_H_

#include <cstdint>
#include <string_view>

namespace looptrace::sample {

enum class WorkKind {
  kSpin,   // busy-spin on the monotonic clock for the whole cost
  kSleep,  // clock_nanosleep for the whole cost
  kMixed,  // spin for the first half, sleep for the second
};

std::string_view WorkKindName(WorkKind kind);

// Busy-spins until CLOCK_MONOTONIC reaches deadline_ns.
void SpinUntil(uint64_t deadline_ns);
// Sleeps (absolute clock_nanosleep, restarted on EINTR) until deadline_ns.
void SleepUntil(uint64_t deadline_ns);
void SpinFor(uint64_t duration_ns);
void SleepFor(uint64_t duration_ns);

// Spends about cost_ns of wall time starting now, in the manner of `kind`.
// Sleeping may overshoot by the kernel's wake-up latency (tens of us).
void DoWork(WorkKind kind, uint64_t cost_ns);

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_WORK_H_
