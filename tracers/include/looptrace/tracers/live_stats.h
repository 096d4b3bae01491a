// LiveStatsTracer: what a session looks like right now, readable at any moment while it
// runs (`looptrace status`, `top`, the Prometheus endpoint) at a small fixed cost per span:
// counters and histograms since the session began, a sliding window of the main thread's
// recent messages and frames, the message running now, and the records the other tracers
// will report (ANR, LAG, slow idle handlers, ...) counted as they happen, with the same
// thresholds (the common options, never another tracer's options or state). It adds nothing to the
// report; its memory does not grow with the session's length.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/report/live_status.h"
#include "looptrace/report/report.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/cost_accumulator.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

struct LiveStatsOptions : TracerOptions {
  void Declare(OptionSet&) override {}
};

class LiveStatsTracer : public CopyableTracer<LiveStatsTracer> {
 public:
  LiveStatsTracer(const LiveStatsOptions& options, const TracerContext& context);

  uint32_t span_kinds() const override {
    return SpanBit(SpanKind::kMessage) | SpanBit(SpanKind::kFrame) | SpanBit(SpanKind::kIdle) |
           SpanBit(SpanKind::kInput) | SpanBit(SpanKind::kBarrier);
  }
  uint32_t begin_kinds() const override { return span_kinds(); }  // the latest time seen
  uint32_t event_types() const override {
    return EventBit<SessionStart>() | EventBit<ProbeEvent>() | EventBit<StallSnapshot>() | EventBit<SignalSent>();
  }
  uint64_t probe_roles() const override { return RoleBit(Role::kVsync) | RoleBit(Role::kMessageEnqueue); }
  void OnEvent(const Event& event) override;
  // The thread whose loop the live figures follow: the main thread, or with `--threads
  // loop...` the first thread seen dispatching (the BPF side picks the same one).
  uint32_t LoopTid() const;
  void OnSpanBegin(const Span& span) override;
  void OnSpanEnd(const Span& span) override;
  void Contribute(Report&) override {}

  LiveStatus Read(uint64_t now_ns) const;
  // Turns on per-interval summaries (off: nothing is kept for them).
  void KeepIntervals() { keep_intervals_ = true; }
  // The summaries of messages that ended since the last call, per thread, up to `now_ns`.
  std::vector<MessageInterval> TakeIntervals(uint64_t now_ns);

 private:
  struct WindowMessage {
    uint64_t begin_ns, end_ns;
    bool top_level;
  };
  struct WindowFrame {
    uint64_t end_ns, total_ns, interval_ns;
    bool janky;
  };
  struct Interval {
    CostAccumulator costs{100'000};
    uint64_t busy_ns = 0;
  };
  void OnMessageEnd(const Span& span);
  void OnFrameEnd(const Span& span);
  uint64_t IntervalNs();
  void Trim(uint64_t now_ns);

  std::map<uint32_t, LiveThread> threads_;
  std::deque<WindowMessage> window_messages_;  // main thread, by end
  std::deque<WindowFrame> window_frames_;
  std::deque<LiveMessage> recent_slow_;
  std::optional<LiveStall> last_stall_;
  std::set<std::tuple<uint32_t, uint64_t, bool>> stalls_seen_;  // AnrTracer's one-per-level rule
  std::map<uint64_t, uint64_t> barrier_sync_;                   // open barrier span -> sync messages posted
  std::deque<uint64_t> vsyncs_;                                 // recent, for the refresh rate
  uint64_t vsyncs_since_detect_ = 0;
  uint64_t interval_ns_ = 0;  // the refresh interval measured so far
  double refresh_hz_ = 0;
  uint64_t frames_ = 0;
  std::array<uint64_t, kJankClasses.size()> frames_by_jank_{};
  uint64_t slow_frames_ = 0;
  std::map<std::string, uint64_t> frames_by_bucket_;
  uint64_t dropped_frames_ = 0;
  uint64_t anrs_ = 0, lags_ = 0, signal_anrs_ = 0, self_sigquits_ = 0, idle_lags_ = 0, input_lags_ = 0,
           barrier_leaks_ = 0, evil_methods_ = 0;
  bool saw_messages_ = false, saw_frames_ = false;
  bool keep_intervals_ = false;
  uint64_t evil_threshold_ns_;  // EvilMethodTracer's, looked up once (not per message)
  uint64_t interval_begin_ns_ = 0;
  std::map<uint32_t, Interval> intervals_;
  CostAccumulator loop_delays_{100'000};  // since the session began
  uint64_t last_ts_ns_ = 0;
  uint32_t loop_tid_ = 0;  // --threads loop: the first thread seen in a message
};

// The bucket of a message duration (0 .. kMessageBuckets - 1).
size_t MessageBucketOf(uint64_t ns);

}  // namespace looptrace
