// FrameTracer (Matrix's FrameTracer, from outside): Choreographer frames from frame/phase
// probes, each with its vsync, refresh interval, dropped frames (Android's and Matrix's
// fractional count and bucket), deadline/slow/frozen flags, phase costs, the time non-UI
// messages delayed it, and for long janky frames the call tree of their doFrame message.
// Aggregated like Matrix (per scene, and per 10 s window with more than 20 frames).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/report/frames_report.h"
#include "looptrace/report/report.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/compact_queue.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

struct FrameOptions : TracerOptions {
  uint64_t jank_tree_threshold_ns =
      700'000'000;                      // janky frames at least this long (cost) keep the call tree of their message
  uint64_t window_ns = 10'000'000'000;  // Matrix's FPS window (DEFAULT_FPS_TIME_SLICE_ALIVE_MS)
  size_t min_window_frames = 21;        // Matrix reports a window only with > 20 frames
  CallTreeOptions tree;
  void Declare(OptionSet& options) override;
};

// Choreographer callback queues, in the order doFrame runs them.
inline constexpr uint32_t kPhaseInput = 0;
inline constexpr uint32_t kPhaseAnimation = 1;
inline constexpr uint32_t kPhaseInsetsAnimation = 2;
inline constexpr uint32_t kPhaseTraversal = 3;
inline constexpr uint32_t kPhaseCommit = 4;

// Matrix's bucket of a dropped-frame count: by round(dropped) (Java Math.round),
// >= 42 FROZEN, >= 24 HIGH, >= 9 MIDDLE, >= 3 NORMAL, else BEST.
std::string DropBucket(double matrix_dropped);

// One stretch of constant refresh rate, from `from_ns` (a vsync timestamp; 0 for the first).
struct RefreshSegment {
  uint64_t from_ns = 0;
  double hz = 0;
  uint64_t interval_ns = 0;  // floor(1e9 / hz) for a whole rate (Android's mFrameIntervalNanos)
};

// The refresh rates behind vsync timestamps (any order, duplicates allowed). Empty when there
// are fewer than two distinct timestamps. `guessed` is set when no rate was confirmed by
// enough agreeing deltas (the best candidate is returned). Heuristic: see frames.cc.
std::vector<RefreshSegment> DetectRefreshRate(std::vector<uint64_t> vsync_ns, bool* guessed);

class FrameTracer : public CopyableTracer<FrameTracer> {
 public:
  FrameTracer(const FrameOptions& options, const TracerContext& context);
  // Messages only in a session that may have frames (frame delays, long frames' trees).
  uint32_t span_kinds() const override {
    return SpanBit(SpanKind::kFrame) | SpanBit(SpanKind::kPhase) | (frames_possible_ ? SpanBit(SpanKind::kMessage) : 0);
  }
  uint32_t slice_kinds() const override { return frames_possible_ ? SpanBit(SpanKind::kMessage) : 0; }
  uint32_t begin_kinds() const override { return SpanBit(SpanKind::kFrame); }
  uint32_t event_types() const override { return EventBit<ProbeEvent>() | EventBit<SessionStart>(); }
  uint64_t probe_roles() const override {
    return RoleBit(Role::kVsync) | RoleBit(Role::kFrameBegin) | RoleBit(Role::kFrameEnd) | RoleBit(Role::kPhaseBegin) |
           RoleBit(Role::kPhaseEnd);
  }

  void OnEvent(const Event& event) override;
  void OnSpanBegin(const Span& span) override;
  void OnSpanEnd(const Span& span) override;
  std::optional<SliceRequest> WantSlice(const Span& span) override;
  void Contribute(Report& report) override;

 private:
  struct DoneMessage {
    uint64_t begin_ns = 0;
    uint64_t end_ns = 0;
    bool has_frame = false;  // a frame began inside it (a doFrame message)
  };
  struct ThreadState {
    CompactQueue<DoneMessage> recent;        // completed messages that may delay a frame
    std::optional<uint64_t> vsync_received;  // latest vsync event since the last frame.begin
    std::optional<uint64_t> last_frame_begin_ns;
    std::vector<size_t> awaiting_message;  // frames_ waiting for their doFrame message
  };

  uint64_t DelayByMessages(const ThreadState& thread, uint64_t from_ns, uint64_t to_ns) const;
  void Summarize(FramesReport* report);

  const FrameOptions& options_;
  std::map<uint32_t, ThreadState> threads_;
  std::map<uint64_t, FrameRecord> open_;  // by span id
  std::vector<FrameRecord> frames_;       // closed, in closing order
  std::vector<uint64_t> vsync_events_;    // vsync_ns of vsync events (refresh-rate detection)
  std::vector<uint64_t> frame_vsyncs_;    // frames' vsync_ns (detection, with the vsync events)
  bool saw_frames_ = false;
  bool frame_probed_ = false;  // the profile binds frame.begin
  // False when the session's probes have no frame role: no frame for a message to delay,
  // so messages are not kept for it.
  bool frames_possible_ = true;
};

}  // namespace looptrace
