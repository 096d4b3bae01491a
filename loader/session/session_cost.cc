#include "loader/session/session_cost.h"

#include <sys/resource.h>

#include <algorithm>

#include "looptrace/tracers/roles.h"

namespace looptrace::loader {
namespace {

uint64_t ProcessCpuNs() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto ns = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(tv.tv_usec) * 1000ull;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

// Spans a report may show with stacks or off-CPU time outside any message.
bool SpansOutsideMessages(SpanKind kind) {
  switch (kind) {
    case SpanKind::kIdle:
    case SpanKind::kInput:
    case SpanKind::kFrame:
    case SpanKind::kPhase:
    case SpanKind::kAppCreate:
    case SpanKind::kLaunch:
      return true;
    default:
      return false;
  }
}

}  // namespace

uint64_t ShortestSlowMessageNs(const Pipeline& pipeline) { return pipeline.ShortestInterestingNs(SpanKind::kMessage); }

SwitchStackPolicy ChooseSwitchStacks(const AttachPlan& plan, std::string_view message_definition, bool idle_stacks,
                                     uint64_t slow_message_ns) {
  SwitchStackPolicy policy;
  bool dispatch = false, poll = false;
  for (const ResolvedProbe& p : plan.probes) {
    if (p.shadow_only) continue;
    if (SpansOutsideMessages(InfoOf(p.spec.role).span)) return policy;
    dispatch |= p.spec.role == Role::kDispatchBegin;
    poll |= p.spec.role == Role::kPollBegin;
  }
  // As the span tracker defines messages (SpanTracker::Configure).
  if (message_definition == "poll-bounded" && poll)
    policy.poll_bounded = true;
  else if (!(message_definition == "dispatch" && dispatch))
    policy.poll_bounded = !dispatch && poll;
  // Wait-bounded messages end at a switch-out's stack (span_tracker.h): every switch-out
  // of the loop thread is stacked, and BPF never sees it idle.
  if (message_definition.starts_with("wait-bounded ")) {
    policy.at_idle = true;
    return policy;
  }
  if (!dispatch && !poll) return policy;  // no messages: nothing tells idle from busy
  policy.at_idle = idle_stacks;
  if (!idle_stacks && slow_message_ns != UINT64_MAX)
    policy.preempt_stacks_after_ns = slow_message_ns / kEarlyPreemptionShare;
  return policy;
}

int CostBudget::Update(uint64_t now_ns, uint64_t cost_ns, uint64_t sampling_ns) {
  if (!started_) {
    started_ = true;
    window_start_ns_ = now_ns;
    window_cost_ns_ = cost_ns;
    window_sampling_ns_ = sampling_ns;
    return hz_;
  }
  const uint64_t elapsed = now_ns - window_start_ns_;
  if (elapsed < kWindowNs) return hz_;
  const double spent = static_cast<double>(cost_ns - std::min(cost_ns, window_cost_ns_));
  const double sampled = std::min(spent, static_cast<double>(sampling_ns - std::min(sampling_ns, window_sampling_ns_)));
  const double allowed = share_ * static_cast<double>(elapsed);
  if (hz_ < asked_hz_) lowered_ns_ += elapsed;
  if (spent > allowed) over_ns_ += elapsed;
  const int floor_hz = std::min(hz_, kMinHz);
  if (sampled > 0) {
    // The samples' cost follows the rate; the rest does not.
    const double fits = hz_ * (0.9 * allowed - (spent - sampled)) / sampled;
    if (spent > allowed)
      hz_ = std::max(floor_hz, static_cast<int>(std::clamp(fits, hz_ / 8.0, hz_ * 0.9)));
    else if (fits >= 1.25 * hz_ && hz_ < asked_hz_)  // a step worth a change of the rate
      hz_ = std::min(asked_hz_, static_cast<int>(std::min(fits, hz_ * 2.0)));
  } else if (spent > allowed) {
    hz_ = std::max(hz_ / 2, floor_hz);
  } else if (spent < allowed / 2 && hz_ < asked_hz_) {
    hz_ = std::min(hz_ * 2, asked_hz_);
  }
  lowest_hz_ = std::min(lowest_hz_, hz_);
  window_start_ns_ = now_ns;
  window_cost_ns_ = cost_ns;
  window_sampling_ns_ = sampling_ns;
  return hz_;
}

OwnCpuClock::OwnCpuClock() : start_ns_(ProcessCpuNs()) {}

uint64_t OwnCpuClock::ElapsedNs() const {
  const uint64_t now = ProcessCpuNs();
  return now > start_ns_ ? now - start_ns_ : 0;
}

}  // namespace looptrace::loader
