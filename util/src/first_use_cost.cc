#include "looptrace/util/first_use_cost.h"

#include <time.h>

#include <atomic>

namespace looptrace {
namespace {

std::atomic<uint64_t> total_ns{0};
thread_local int depth = 0;

uint64_t ThreadCpuNs() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

FirstUseScope::FirstUseScope() : outermost_(depth++ == 0) {
  if (outermost_) start_ns_ = ThreadCpuNs();
}

FirstUseScope::~FirstUseScope() {
  --depth;
  if (!outermost_) return;
  const uint64_t now = ThreadCpuNs();
  if (now > start_ns_) total_ns.fetch_add(now - start_ns_, std::memory_order_relaxed);
}

uint64_t FirstUseScope::TotalNs() { return total_ns.load(std::memory_order_relaxed); }

}  // namespace looptrace
