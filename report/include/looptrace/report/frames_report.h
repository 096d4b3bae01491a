// Frame report data (FrameTracer's output), kept apart so report.h can hold it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "looptrace/report/call_tree.h"
#include "looptrace/report/sampled_call_tree.h"

namespace looptrace {

// The five buckets of Matrix's dropped-frame counts, BEST first: BEST, NORMAL, MIDDLE,
// HIGH, FROZEN.
const std::vector<std::string>& DropBuckets();

struct PhaseCost {
  uint32_t phase = 0;
  std::string name;  // the Choreographer queue: INPUT, ANIMATION, ..., else PHASE_<n>
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;

  uint64_t cost_ns() const { return end_ns - begin_ns; }
};

struct FrameRecord {
  uint32_t tid = 0;
  uint64_t frame_id = 0;
  uint64_t vsync_ns = 0;           // the frame time (after Android's skip adjustment)
  uint64_t intended_vsync_ns = 0;  // the vsync the app received for it (vsync role), else vsync_ns
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t interval_ns = 0;  // of the refresh rate current at vsync_ns
  double refresh_hz = 0;
  uint64_t skipped_frames = 0;        // Android's skipped vsyncs: round((vsync - intended) / interval)
  std::vector<PhaseCost> phases;      // in order, only phases that ran
  uint64_t dropped_frames = 0;        // Android: floor((end - vsync) / interval), the vsyncs it missed
  double matrix_dropped = 0;          // Matrix: max(0, (total - interval) / interval), total = end - vsync
  std::string bucket;                 // DropBucket(matrix_dropped)
  bool deadline_missed = false;       // end > vsync + interval ("janky")
  bool slow = false;                  // end - vsync > 16 ms scaled to the refresh rate (16 * 60 / hz)
  bool frozen = false;                // end - vsync >= 700 ms
  uint64_t delay_by_messages_ns = 0;  // other (non-frame) messages on the thread in [intended vsync, begin]
  std::string scene;                  // the activity focused last when the frame began
  bool finished = true;               // false: its end was never seen (session end, or lost)
  std::vector<NamedCallNode> tree;    // janky frame's message call tree (beats, cost >= threshold)
  SampledCallTree sampled;            // the frame's own span from stack samples (same frames)

  uint64_t cost_ns() const { return end_ns - begin_ns; }
  uint64_t total_ns() const { return end_ns - vsync_ns; }
};

// One scene over the session, or one Matrix window. Unfinished frames are not counted.
struct FpsSummary {
  std::string scene;
  uint64_t begin_ns = 0;  // first frame's vsync
  uint64_t end_ns = 0;    // last frame's end
  size_t frames = 0;
  double matrix_fps = 0;  // Matrix: min(refresh, frames * 1e9 / sum(max(total, interval)))
  // What the screen really got: frames * 1e9 / sum over frames of
  // max(end - max(intended vsync, previous frame's end), interval), capped at the refresh rate.
  // Unlike Matrix it counts the vsyncs skipped while other messages held the thread; unlike a
  // plain wall-clock span it does not count idle time when the app asked for no frame.
  double delivered_fps = 0;
  double refresh_hz = 0;                     // mean over the frames (Matrix's REFRESH_RATE)
  std::map<std::string, size_t> drop_level;  // Matrix dropLevel: frames per bucket (all five keys)
  std::map<std::string, double> drop_sum;    // Matrix dropSum: rounded dropped frames per bucket
  size_t janky = 0;                          // deadline_missed
  size_t slow = 0;
  size_t frozen = 0;
  uint64_t delay_by_messages_ns = 0;
  uint64_t dropped_frames = 0;  // sum of Android's dropped_frames
};

struct FramesReport {
  bool enabled = false;               // false when the profile maps no frame roles
  std::vector<FrameRecord> frames;    // by begin (then tid)
  std::vector<FpsSummary> scenes;     // per scene, by first frame
  std::vector<FpsSummary> windows;    // Matrix windows (window_ns, >= min frames), per scene, in time order
  std::vector<size_t> worst;          // indices into frames, by total desc, ties by begin
  std::vector<double> refresh_rates;  // distinct rates in the order they were first used
};

}  // namespace looptrace
