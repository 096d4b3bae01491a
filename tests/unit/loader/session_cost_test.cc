#include "loader/session/session_cost.h"

#include <gtest/gtest.h>

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

TEST(OwnCpuClock, CountsThisProcessesCpuTime) {
  OwnCpuClock clock;
  volatile uint64_t sink = 0;
  while (clock.ElapsedNs() < 5'000'000)  // getrusage's granularity is a tick or finer
    for (int i = 0; i < 100000; ++i) sink = sink + i;
  EXPECT_GE(clock.ElapsedNs(), 5'000'000u);
}

}  // namespace
}  // namespace looptrace::loader
