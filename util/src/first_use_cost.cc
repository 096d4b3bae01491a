#include "looptrace/util/first_use_cost.h"

#include <time.h>

#include <atomic>
#include <mutex>
#include <utility>

namespace looptrace {
namespace {

std::atomic<uint64_t> total_ns{0};
thread_local int depth = 0;

// Outermost scopes open on every thread, and who hears when that goes from or to none.
std::mutex busy_mutex;
int busy_scopes = 0;
std::function<void(bool)> busy_observer;

void NoteOutermost(int delta) {
  std::lock_guard lock(busy_mutex);
  const bool was = busy_scopes > 0;
  busy_scopes += delta;
  if (busy_observer && was != (busy_scopes > 0)) busy_observer(busy_scopes > 0);
}

uint64_t ThreadCpuNs() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

FirstUseScope::FirstUseScope() : outermost_(depth++ == 0) {
  if (!outermost_) return;
  NoteOutermost(+1);
  start_ns_ = ThreadCpuNs();
}

FirstUseScope::~FirstUseScope() {
  --depth;
  if (!outermost_) return;
  const uint64_t now = ThreadCpuNs();
  if (now > start_ns_) total_ns.fetch_add(now - start_ns_, std::memory_order_relaxed);
  NoteOutermost(-1);
}

void FirstUseScope::SetBusyObserver(std::function<void(bool busy)> observer) {
  std::lock_guard lock(busy_mutex);
  busy_observer = std::move(observer);
  if (busy_observer) busy_observer(busy_scopes > 0);
}

uint64_t FirstUseScope::TotalNs() { return total_ns.load(std::memory_order_relaxed); }

}  // namespace looptrace
