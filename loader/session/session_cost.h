// What a session costs the target and the machine, and what it leaves out to cost less:
// which switch-outs BPF takes stacks at, and the loader's own CPU time.
#pragma once

#include <cstdint>
#include <string_view>

#include "loader/plan/attach_plan.h"
#include "looptrace/tracers/pipeline.h"

namespace looptrace::loader {

// At which switch-outs of the loop thread BPF takes stacks (loop_idle in bpf/looptrace.bpf.c).
struct SwitchStackPolicy {
  bool at_idle = true;        // at every switch-out, idle or not (as before issue 32)
  bool poll_bounded = false;  // messages are the busy time between polls: idle only inside the poll
  // Preemptions (the thread still runnable) in a message open for less than this get no
  // stack (0: every one does): a tenth of the shortest message a report shows with stacks.
  uint64_t preempt_stacks_after_ns = 0;
};

// A preemption early in a message is stackless; a message that turns slow loses at most
// this share of its threshold's worth of preempted time to "[no stack]".
inline constexpr uint64_t kEarlyPreemptionShare = 10;

// The shortest message a report shows with its stacks: the evil-method threshold, or the
// first stall snapshot (LAG), whichever is smaller (UINT64_MAX: none).
uint64_t ShortestSlowMessageNs(const Pipeline& pipeline);

// A switch-out of the loop thread with no message open (between messages, or in its poll
// wait) needs no stack when every span a report shows with stacks or off-CPU reasons is a
// message or runs inside one (GC runs, monitor waits). A profile with spans of their own
// outside messages (idle handlers, input events, frames, app creation, launches: the
// startup tracer weighs every off-CPU stretch of a cold start) keeps stacks everywhere, and
// so does --idle-stacks (the session's folded stacks then show the idle waits too).
// Voluntary switch-outs inside messages always get stacks: what a message waits for is
// why it is slow. Preemptions get them once the message is `slow_message_ns` /
// kEarlyPreemptionShare old.
SwitchStackPolicy ChooseSwitchStacks(const AttachPlan& plan, std::string_view message_definition, bool idle_stacks,
                                     uint64_t slow_message_ns = UINT64_MAX);

// --cpu-budget: keeps what the session costs as it runs (the cost block's total after the
// start and the files first met: the loader's CPU, BPF time, probe traps) within a share of
// one CPU by changing the cpu-clock sample rate, the one cost a session can shed without
// losing messages or their off-CPU reasons. Once a second, from what the last second cost
// and what of it the samples cost (the sampler program and the loader's work on on-CPU
// samples): the rate whose samples fit in the budget beside the rest, aiming at 90% of it,
// lowered only over the budget, raised only by a quarter or more, at most eight times lower
// or twice higher at a step, never above the rate asked for. A second without sample costs
// halves the rate when over the budget and doubles it when under half. What probe hits and
// the scheduler programs cost is not shed: the seconds over the budget are counted.
class CostBudget {
 public:
  static constexpr int kMinHz = 7;
  static constexpr uint64_t kWindowNs = 1'000'000'000;

  // `share`: of one CPU (0.02 for 2%); `sample_hz`: the rate asked for.
  CostBudget(double share, int sample_hz) : share_(share), asked_hz_(sample_hz), hz_(sample_hz) {}
  // The session's running cost so far (ns of CPU) at `now_ns`, and the part of it its
  // samples cost (`sampling_ns`): the sample rate from now on.
  int Update(uint64_t now_ns, uint64_t cost_ns, uint64_t sampling_ns = 0);

  int hz() const { return hz_; }
  int lowest_hz() const { return lowest_hz_; }
  uint64_t lowered_ns() const { return lowered_ns_; }  // time at a rate below the one asked for
  uint64_t over_ns() const { return over_ns_; }        // the seconds that cost more than the budget
  uint64_t ns_per_s() const { return static_cast<uint64_t>(share_ * 1e9); }

 private:
  double share_;
  int asked_hz_;
  int hz_;
  int lowest_hz_ = asked_hz_;
  bool started_ = false;
  uint64_t window_start_ns_ = 0, window_cost_ns_ = 0, window_sampling_ns_ = 0;
  uint64_t lowered_ns_ = 0, over_ns_ = 0;
};

// CPU time (user + system) of this process since construction. A background daemon's
// covers every session it runs.
class OwnCpuClock {
 public:
  OwnCpuClock();
  uint64_t ElapsedNs() const;

 private:
  uint64_t start_ns_;
};

}  // namespace looptrace::loader
