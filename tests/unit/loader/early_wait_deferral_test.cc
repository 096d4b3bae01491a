// When BPF may defer the loop thread's early-wait stacks (loader/session/early_wait_stacks.h):
// only once the loader has read no file it met first for a while, and never during such a read.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "loader/session/early_wait_stacks.h"

namespace looptrace::loader {
namespace {

constexpr uint64_t kMs = 1'000'000;

struct Told {
  std::vector<bool> calls;
  EarlyWaitDeferral deferral{[this](bool now) { calls.push_back(now); }};
};

TEST(EarlyWaitDeferral, DefersOnlyOnceTheLoaderHasSettled) {
  Told told;
  told.deferral.Tick(1000 * kMs);  // nothing heard yet: not deferring
  EXPECT_TRUE(told.calls.empty());
  told.deferral.OnLoaderBusy(false, 1000 * kMs);  // the state when the session starts
  told.deferral.Tick(1000 * kMs + EarlyWaitDeferral::kSettleNs - 1);
  EXPECT_FALSE(told.deferral.deferring());
  told.deferral.Tick(1000 * kMs + EarlyWaitDeferral::kSettleNs);
  EXPECT_TRUE(told.deferral.deferring());
  told.deferral.Tick(2000 * kMs);  // said once
  EXPECT_EQ(told.calls, (std::vector<bool>{true}));
}

TEST(EarlyWaitDeferral, StopsAtOnceWhenTheLoaderReadsAFileItMetFirst) {
  Told told;
  told.deferral.OnLoaderBusy(false, 0);
  told.deferral.Tick(EarlyWaitDeferral::kSettleNs);
  told.deferral.OnLoaderBusy(true, 300 * kMs);
  EXPECT_FALSE(told.deferral.deferring());
  told.deferral.Tick(1000 * kMs);  // still reading: never while busy
  EXPECT_FALSE(told.deferral.deferring());
  EXPECT_EQ(told.calls, (std::vector<bool>{true, false}));
}

// Reads in a burst, a few ms apart (a session's start): the settling starts over at each.
TEST(EarlyWaitDeferral, ABurstOfReadsKeepsItOffUntilTheLastHasSettled) {
  Told told;
  uint64_t now = 0;
  for (int i = 0; i < 10; ++i) {
    told.deferral.OnLoaderBusy(true, now);
    told.deferral.OnLoaderBusy(false, now + 5 * kMs);
    now += 30 * kMs;
    told.deferral.Tick(now);
  }
  EXPECT_TRUE(told.calls.empty());
  const uint64_t last_end = now - 30 * kMs + 5 * kMs;
  told.deferral.Tick(last_end + EarlyWaitDeferral::kSettleNs);
  EXPECT_EQ(told.calls, (std::vector<bool>{true}));
}

}  // namespace
}  // namespace looptrace::loader
