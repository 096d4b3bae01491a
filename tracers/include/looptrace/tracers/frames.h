// FrameTracer (Matrix's FrameTracer, from outside): Choreographer frames from frame/phase
// probes, each with its vsync, refresh interval, dropped frames (Android's and Matrix's
// fractional count and bucket), deadline/slow/frozen flags, phase costs, the time non-UI
// messages delayed it, and for long janky frames the call tree of their doFrame message.
// Aggregated like Matrix (per scene, and per 10 s window with more than 20 frames).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/frames_report.h"
#include "looptrace/tracers/report.h"
#include "looptrace/tracers/stats.h"

namespace looptrace {

struct FrameOptions {
  uint64_t jank_tree_threshold_ns = 700'000'000;  // janky frames at least this long (cost) keep the call tree of their message
  double refresh_hz = 0;                 // 0 = detect from vsync timestamps; else forced
  uint64_t window_ns = 10'000'000'000;   // Matrix's FPS window (DEFAULT_FPS_TIME_SLICE_ALIVE_MS)
  size_t min_window_frames = 21;         // Matrix reports a window only with > 20 frames
  size_t worst_n = 10;
  size_t max_nodes = 30;
  CallTreeOptions tree;
};

// Choreographer callback queues, in the order doFrame runs them.
inline constexpr uint32_t kPhaseInput = 0;
inline constexpr uint32_t kPhaseAnimation = 1;
inline constexpr uint32_t kPhaseInsetsAnimation = 2;
inline constexpr uint32_t kPhaseTraversal = 3;
inline constexpr uint32_t kPhaseCommit = 4;

// "INPUT", "ANIMATION", "INSETS_ANIMATION", "TRAVERSAL", "COMMIT", else "PHASE_<n>".
std::string PhaseName(uint32_t phase);

// Matrix's bucket of a dropped-frame count: by round(dropped) (Java Math.round),
// >= 42 FROZEN, >= 24 HIGH, >= 9 MIDDLE, >= 3 NORMAL, else BEST.
std::string DropBucket(double matrix_dropped);

// The five bucket names, BEST first.
const std::vector<std::string>& DropBuckets();

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

// Bad or unusual input, counted (FrameTracer never drops it silently).
struct FrameProblems {
  uint64_t phase_without_frame = 0;      // phase.begin/end with no open frame on the thread (ignored)
  uint64_t phase_end_without_begin = 0;  // phase.end with no open phase in the frame (ignored)
  uint64_t phase_mismatch = 0;           // phase.end naming another phase than the open one (closed it)
  uint64_t phase_unclosed = 0;           // phases closed by the next phase.begin or by the frame's end
  uint64_t frame_end_without_begin = 0;  // frame.end with no open frame on the thread (ignored)
  uint64_t frame_id_mismatch = 0;        // frame.end whose frame_id is not open (closed the innermost)
  uint64_t nested_frames = 0;            // frame.begin while another frame was open on the thread
  uint64_t frame_end_lost = 0;           // frames closed by an outer frame's end or by their message's end
  uint64_t unfinished_frames = 0;        // frames still open at session end (end = session end)
  uint64_t frame_without_vsync = 0;      // frame.begin without a usable vsync_ns (begin used)
  uint64_t vsync_without_timestamp = 0;  // vsync events without a vsync_ns argument (ignored)
  uint64_t refresh_rate_assumed = 0;     // too few vsync timestamps to detect the rate (guessed / 60 Hz)
  uint64_t refresh_rate_changes = 0;     // info: refresh-rate changes detected
};

class FrameTracer {
 public:
  FrameTracer(FrameOptions options, Stats* stats, const MethodNamer* namer);

  void OnProbe(const ProbeEvent& event);
  void OnMessage(const Message& message);  // every completed message
  void OnBeats(const MethodBeats& beats);
  void Finish(uint64_t end_ns);
  void Contribute(FramesReport* report);

  const FrameProblems& problems() const { return problems_; }

 private:
  struct OpenFrame {
    FrameRecord record;
    std::optional<PhaseCost> phase;  // the phase running now
  };
  struct DoneMessage {
    uint64_t begin_ns = 0;
    uint64_t end_ns = 0;
    bool has_frame = false;  // a frame began inside it (a doFrame message)
  };
  struct ThreadState {
    std::vector<OpenFrame> open;                 // innermost last
    std::deque<DoneMessage> recent;              // completed messages that may delay a frame
    std::optional<uint64_t> vsync_received;      // latest vsync event since the last frame.begin
    std::optional<uint64_t> last_frame_begin_ns;
    std::vector<size_t> awaiting_message;        // frames_ waiting for their doFrame message
    std::optional<MethodBeats> beats;            // latest message beats
  };

  void CloseInnermost(ThreadState& thread, uint64_t end_ns, bool finished);
  uint64_t DelayByMessages(const ThreadState& thread, uint64_t from_ns, uint64_t to_ns) const;
  std::vector<NamedCallNode> Tree(const MethodBeats& beats);

  FrameOptions options_;
  Stats* stats_;
  Stats own_stats_;  // when constructed without one
  const MethodNamer* namer_;
  FrameProblems problems_;
  std::map<uint32_t, ThreadState> threads_;
  std::vector<FrameRecord> frames_;  // closed, in closing order
  std::vector<uint64_t> vsync_events_;  // vsync_ns of vsync events (refresh-rate detection)
  std::vector<uint64_t> frame_vsyncs_;  // frames' vsync_ns (detection, with the vsync events)
  uint64_t last_ts_ns_ = 0;
  std::string scene_;
  bool saw_frames_ = false;
  bool finished_ = false;
  FramesReport report_;
};

}  // namespace looptrace
