// LiveStatsTracer: what a session looks like right now, readable at any moment while it
// runs (`looptrace status`, `top`, the Prometheus endpoint) at a small fixed cost per span:
// counters and histograms since the session began, a sliding window of the main thread's
// recent messages and frames, the message running now, and the records the other tracers
// will report (ANR, LAG, slow idle handlers, ...) counted as they happen, with the same
// thresholds (read from their options, never from their state). It adds nothing to the
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

#include "looptrace/tracers/cost_accumulator.h"
#include "looptrace/tracers/report.h"
#include "looptrace/tracers/stats.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

struct LiveStatsOptions : TracerOptions {
  void Declare(OptionSet&) override {}
};

// Upper bounds of the message-duration histogram, in seconds (1 ms ... 10 s; +Inf after).
inline constexpr std::array<double, 13> kMessageBucketsSeconds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                  0.25,  0.5,    1,     2.5,  5,     10};
inline constexpr size_t kMessageBuckets = kMessageBucketsSeconds.size() + 1;  // + Inf

// A frame's class by Android's definitions, exclusive: smooth (ended within its vsync + one
// refresh interval), janky (missed that deadline), frozen (took at least 700 ms). Android
// vitals' "slow" (over 16 ms at 60 Hz, scaled) overlaps them and is counted on its own.
inline constexpr std::array<const char*, 3> kJankClasses = {"smooth", "janky", "frozen"};

// The window the "now" figures cover.
inline constexpr uint64_t kLiveWindowNs = 10'000'000'000;
// A message at least this long is "slow" in the live view (one 60 Hz frame).
inline constexpr uint64_t kLiveSlowMessageNs = 16'000'000;

struct LiveThread {
  uint32_t tid = 0;
  uint64_t messages = 0;
  uint64_t busy_ns = 0;                             // top-level messages only
  uint64_t total_ns = 0;                            // every message (the histogram's sum)
  std::array<uint64_t, kMessageBuckets> buckets{};  // per bucket, not cumulative
};

struct LiveMessage {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;  // 0 while it runs
  std::optional<uint64_t> msg_id;
  std::string name;
};

struct LiveStall {
  std::string kind;  // anr | lag
  uint32_t tid = 0;
  uint64_t at_ns = 0;  // the snapshot
  uint64_t message_begin_ns = 0;
  std::string name;
};

struct LiveStatus {
  uint32_t pid = 0;
  std::string command;
  std::string profile;
  std::string message_definition = "dispatch";
  uint64_t begin_ns = 0;      // CLOCK_MONOTONIC
  uint64_t wall_time_ns = 0;  // CLOCK_REALTIME at begin
  uint64_t now_ns = 0;
  bool messages_enabled = false;
  bool frames_enabled = false;

  // Since the session began.
  std::vector<LiveThread> threads;  // by tid
  uint64_t frames = 0;
  std::array<uint64_t, kJankClasses.size()> frames_by_jank{};
  uint64_t slow_frames = 0;
  std::map<std::string, uint64_t> frames_by_bucket;  // Matrix's five buckets, all present
  uint64_t dropped_frames = 0;
  uint64_t anrs = 0, lags = 0, signal_anrs = 0, self_sigquits = 0, idle_lags = 0, input_lags = 0, barrier_leaks = 0,
           evil_methods = 0;

  // The main thread over the last window (window_ns: how much of it the session covers).
  uint64_t window_ns = 0;
  uint64_t window_messages = 0;
  double messages_per_s = 0;
  uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
  double busy_percent = 0;  // of the window, the running message included
  uint64_t window_frames = 0;
  uint64_t window_janky = 0;  // janky or frozen
  double fps = 0;             // Matrix's formula over the window's frames (0: no frame)
  double refresh_hz = 0;      // as measured so far (or forced)

  // Now.
  std::optional<LiveMessage> current;  // the main thread's outermost running message
  uint64_t current_running_ns = 0;
  std::string state = "idle";  // idle | running | lag | anr (by the running message)
  std::string frame;           // "frame 12 phase TRAVERSAL" while one runs
  std::string scene;
  uint64_t lag_threshold_ns = 0, anr_threshold_ns = 0;
  std::vector<LiveMessage> recent_slow;  // newest first, at least kLiveSlowMessageNs
  std::optional<LiveStall> last_stall;

  Stats stats;  // the tracers' counters (the loader adds the BPF side)
};

// The message intervals a ClickHouse sink takes as rows: per thread, what ended since the
// last take.
struct MessageInterval {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;  // the previous take (or the session begin)
  uint64_t end_ns = 0;
  CostSummary cost;
  uint64_t busy_ns = 0;
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
  uint64_t last_ts_ns_ = 0;
  uint32_t loop_tid_ = 0;  // --threads loop: the first thread seen in a message
};

// The bucket of a message duration (0 .. kMessageBuckets - 1).
size_t MessageBucketOf(uint64_t ns);

}  // namespace looptrace
