#include "looptrace/util/first_use_cost.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <thread>

namespace looptrace {
namespace {

uint64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Burns `ns` of this thread's CPU time (not wall time: a busy machine only stretches it).
void Spin(uint64_t ns) {
  const uint64_t until = ThreadCpuNs() + ns;
  while (ThreadCpuNs() < until) {
  }
}

TEST(FirstUseScope, CountsTheCpuOfOutermostScopesOnEveryThread) {
  const uint64_t before = FirstUseScope::TotalNs();
  Spin(20'000'000);  // outside any scope: not counted
  {
    FirstUseScope outer;
    Spin(30'000'000);
    {
      FirstUseScope inner;  // inside the outer one: its 20 ms are counted once
      Spin(20'000'000);
    }
  }
  std::thread other([] {
    FirstUseScope scope;
    Spin(10'000'000);
  });
  other.join();
  const uint64_t counted = FirstUseScope::TotalNs() - before;
  EXPECT_GE(counted, 60'000'000u);
  EXPECT_LT(counted, 75'000'000u);  // 80 ms if the inner scope or the spin outside counted
}

}  // namespace
}  // namespace looptrace
