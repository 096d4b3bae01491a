#include "looptrace/util/first_use_cost.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdint>
#include <future>
#include <thread>
#include <vector>

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

TEST(FirstUseScope, TellsItsObserverWhenTheFirstScopeOpensAndTheLastCloses) {
  std::vector<bool> heard;
  FirstUseScope::SetBusyObserver([&](bool busy) { heard.push_back(busy); });
  EXPECT_EQ(heard, (std::vector<bool>{false}));  // the state when it was set
  heard.clear();
  {
    FirstUseScope outer;
    { FirstUseScope inner; }  // nested: nothing to tell
  }
  EXPECT_EQ(heard, (std::vector<bool>{true, false}));
  heard.clear();
  // Overlapping scopes on two threads: busy from the first opening to the last closing.
  std::promise<void> opened, close;
  std::thread other([&] {
    FirstUseScope scope;
    opened.set_value();
    close.get_future().wait();
  });
  opened.get_future().wait();
  {
    FirstUseScope mine;  // the other thread's is open: still busy
    close.set_value();
    other.join();  // its scope closed, mine is open
    EXPECT_EQ(heard, (std::vector<bool>{true}));
  }
  EXPECT_EQ(heard, (std::vector<bool>{true, false}));
  FirstUseScope::SetBusyObserver({});
  { FirstUseScope after; }
  EXPECT_EQ(heard.size(), 2u);
}

}  // namespace
}  // namespace looptrace
