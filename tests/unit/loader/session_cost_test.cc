#include "loader/session/session_cost.h"

#include <gtest/gtest.h>

#include <vector>

namespace looptrace::loader {
namespace {

AttachPlan PlanOf(std::initializer_list<Role> roles) {
  AttachPlan plan;
  uint16_t id = 0;
  for (Role role : roles) {
    ResolvedProbe p;
    p.probe_id = id++;
    p.spec.role = role;
    plan.probes.push_back(p);
  }
  return plan;
}

// Stacks at idle switch-outs are left out only where no report can show them (issue 32).
TEST(SwitchStacks, LeftOutWhileIdleWhenEveryReportedSpanIsAMessage) {
  // python-asyncio: dispatch messages, GC runs inside them.
  SwitchStackPolicy dispatch =
      ChooseSwitchStacks(PlanOf({Role::kDispatchBegin, Role::kDispatchEnd, Role::kGcBegin, Role::kGcEnd}), "", false);
  EXPECT_FALSE(dispatch.at_idle);
  EXPECT_FALSE(dispatch.poll_bounded);
  // epoll: loop iterations, idle only inside the poll.
  SwitchStackPolicy poll = ChooseSwitchStacks(PlanOf({Role::kPollBegin, Role::kPollEnd}), "", false);
  EXPECT_FALSE(poll.at_idle);
  EXPECT_TRUE(poll.poll_bounded);
  // A poll-bounded profile naming dispatches too follows its `messages` line.
  EXPECT_TRUE(ChooseSwitchStacks(PlanOf({Role::kPollBegin, Role::kPollEnd, Role::kDispatchBegin, Role::kDispatchEnd}),
                                 "poll-bounded", false)
                  .poll_bounded);
  EXPECT_FALSE(ChooseSwitchStacks(PlanOf({Role::kPollBegin, Role::kPollEnd, Role::kDispatchBegin, Role::kDispatchEnd}),
                                  "", false)
                   .poll_bounded);
}

TEST(SwitchStacks, PreemptionsGetStacksAfterATenthOfTheShortestSlowMessage) {
  const AttachPlan plan = PlanOf({Role::kDispatchBegin, Role::kDispatchEnd});
  EXPECT_EQ(ChooseSwitchStacks(plan, "", false, 700'000'000).preempt_stacks_after_ns, 70'000'000u);
  EXPECT_EQ(ChooseSwitchStacks(plan, "", false).preempt_stacks_after_ns, 0u);  // nothing shows them slow
  EXPECT_EQ(ChooseSwitchStacks(plan, "", true, 700'000'000).preempt_stacks_after_ns, 0u);
  EXPECT_EQ(ChooseSwitchStacks(PlanOf({Role::kDispatchBegin, Role::kFrameBegin}), "", false, 700'000'000)
                .preempt_stacks_after_ns,
            0u);
}

TEST(SwitchStacks, KeptEverywhereForSpansOutsideMessagesOrOnRequest) {
  for (Role role : {Role::kFrameBegin, Role::kIdleBegin, Role::kInputReceive, Role::kAppCreateBegin,
                    Role::kActivityLaunch, Role::kFullyDrawn})
    EXPECT_TRUE(ChooseSwitchStacks(PlanOf({Role::kDispatchBegin, Role::kDispatchEnd, role}), "", false).at_idle)
        << InfoOf(role).name;
  EXPECT_TRUE(ChooseSwitchStacks(PlanOf({Role::kDispatchBegin, Role::kDispatchEnd}), "", /*idle_stacks=*/true).at_idle);
  // No message roles: nothing tells idle from busy.
  EXPECT_TRUE(ChooseSwitchStacks(PlanOf({Role::kGcBegin, Role::kGcEnd}), "", false).at_idle);
}

TEST(CostBudget, HalvesTheSampleRateOverTheBudgetAndRestoresItUnderHalf) {
  constexpr uint64_t kS = 1'000'000'000;
  CostBudget budget(0.02, 997);  // 2% of one CPU: 20 ms a second
  uint64_t cost = 0, now = 5 * kS;
  EXPECT_EQ(budget.Update(now, cost), 997);  // the first look only starts the window
  // A quarter second is no window yet, whatever it cost.
  EXPECT_EQ(budget.Update(now + kS / 4, cost + 100'000'000), 997);
  // 30 ms in a second: over 2%, halved a step a second (to the floor, and no further).
  std::vector<int> rates;
  for (int i = 0; i < 9; ++i) rates.push_back(budget.Update(now += kS, cost += 30'000'000));
  EXPECT_EQ(rates, (std::vector<int>{498, 249, 124, 62, 31, 15, 7, 7, 7}));
  EXPECT_EQ(budget.lowest_hz(), CostBudget::kMinHz);
  EXPECT_EQ(budget.over_ns(), 9 * kS);
  // 15 ms: within the budget but over half of it, the rate holds; 5 ms: doubled back, not past 997.
  EXPECT_EQ(budget.Update(now += kS, cost += 15'000'000), 7);
  rates.clear();
  for (int i = 0; i < 9; ++i) rates.push_back(budget.Update(now += kS, cost += 5'000'000));
  EXPECT_EQ(rates, (std::vector<int>{14, 28, 56, 112, 224, 448, 896, 997, 997}));
  // Seconds that began below 997: 8 of the 9 over the budget, the one at 15 ms, 8 of the 9 after.
  EXPECT_EQ(budget.lowered_ns(), 8 * kS + 1 * kS + 8 * kS);
  EXPECT_EQ(budget.ns_per_s(), 20'000'000u);
}

// Where the samples' share of the cost is known, the rate goes at once to where they fit
// beside the rest, and back up as soon as they would fit at a higher one.
TEST(CostBudget, SetsTheRateTheSamplesFitAtFromWhatTheyCost) {
  constexpr uint64_t kS = 1'000'000'000;
  CostBudget budget(0.02, 997);  // 20 ms a second, aiming at 18
  uint64_t cost = 0, sampling = 0, now = 5 * kS;
  EXPECT_EQ(budget.Update(now, cost, sampling), 997);
  // 30 ms, 25 of them the samples': the other 5 leave 13 for samples, 52% of 997 Hz.
  EXPECT_EQ(budget.Update(now += kS, cost += 30'000'000, sampling += 25'000'000), 518);
  // At 518 Hz the samples cost 13 ms: 18 in all, within the budget; not raised (it would
  // not fit 25% more).
  EXPECT_EQ(budget.Update(now += kS, cost += 18'000'000, sampling += 13'000'000), 518);
  // A start's burst (the first seconds of a runtime's frames) gone: 5 + 3 ms fit at 997.
  EXPECT_EQ(budget.Update(now += kS, cost += 8'000'000, sampling += 3'000'000), 997);
  EXPECT_EQ(budget.lowest_hz(), 518);
  EXPECT_EQ(budget.over_ns(), 1 * kS);
  EXPECT_EQ(budget.lowered_ns(), 2 * kS);
  // Rate-independent costs over the budget: eight times lower a second at most, to the floor.
  std::vector<int> rates;
  for (int i = 0; i < 4; ++i) rates.push_back(budget.Update(now += kS, cost += 40'000'000, sampling += 1'000'000));
  EXPECT_EQ(rates, (std::vector<int>{124, 15, 7, 7}));
  // Doubled at most a second on the way back.
  rates.clear();
  for (int i = 0; i < 3; ++i) rates.push_back(budget.Update(now += kS, cost += 2'000'000, sampling += 1'000'000));
  EXPECT_EQ(rates, (std::vector<int>{14, 28, 56}));
}

TEST(OwnCpuClock, CountsThisProcessesCpuTime) {
  OwnCpuClock clock;
  volatile uint64_t sink = 0;
  while (clock.ElapsedNs() < 5'000'000)  // getrusage's granularity is a tick or finer
    for (int i = 0; i < 100000; ++i) sink = sink + i;
  EXPECT_GE(clock.ElapsedNs(), 5'000'000u);
}

}  // namespace
}  // namespace looptrace::loader
