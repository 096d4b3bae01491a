// Choreographer (android.view.Choreographer) on the main looper. When a
// callback is posted and no frame is scheduled it requests the next vsync from
// its VsyncSource. The vsync arrives through the looper's poll (fd callback:
// sample_vsync, truth "vsync"), which posts the asynchronous message
// "Choreographer#doFrame" due at the vsync time. doFrame applies Android's
// skipped-frame rule, then runs the five callback queues in order INPUT,
// ANIMATION, INSETS_ANIMATION, TRAVERSAL, COMMIT, each between
// sample_choreographer_phase_begin/end (all five, even empty), inside
// sample_choreographer_frame_begin/end, and adds a truth "frame" record.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_CHOREOGRAPHER_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_CHOREOGRAPHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "looper.h"
#include "truth.h"
#include "vsync.h"
#include "work.h"

namespace looptrace::sample {

enum FramePhase : uint32_t {
  kPhaseInput = 0,
  kPhaseAnimation = 1,
  kPhaseInsetsAnimation = 2,
  kPhaseTraversal = 3,
  kPhaseCommit = 4,
  kPhaseCount = 5,
};

struct FrameInfo {
  uint64_t frame_id = 0;
  uint64_t vsync_ns = 0;           // frameTimeNanos, after the skip adjustment
  uint64_t intended_vsync_ns = 0;  // the vsync the frame was posted for
  uint64_t interval_ns = 0;
  uint32_t refresh_hz = 0;
  uint64_t skipped_frames = 0;
};

using FrameCallback = std::function<void(const FrameInfo&)>;

class Choreographer {
 public:
  // Registers the vsync fd on `looper` (the main looper) and starts the vsync
  // thread. Construct and destroy on the looper's thread.
  Choreographer(Looper* looper, uint32_t refresh_hz);
  ~Choreographer();
  Choreographer(const Choreographer&) = delete;
  Choreographer& operator=(const Choreographer&) = delete;

  // Thread-safe. Runs `callback` in the given phase of the next frame (of
  // this frame if posted before that phase starts; callbacks run in the
  // order posted) and schedules a frame.
  void PostCallback(FramePhase phase, FrameCallback callback);
  // An ANIMATION callback (Choreographer.postFrameCallback).
  void PostFrameCallback(FrameCallback callback) { PostCallback(kPhaseAnimation, std::move(callback)); }
  // ViewRootImpl.scheduleTraversals: unless a traversal is already
  // scheduled, posts a sync barrier and a TRAVERSAL callback that removes it
  // (doTraversal), then runs every `traversal` scheduled until then, in order
  // (performTraversals). Looper thread only.
  void ScheduleTraversals(FrameCallback traversal);

  // The display switches to `refresh_hz` at its next vsync.
  void SetRefreshRate(uint32_t refresh_hz) { vsync_.SetRefreshRate(refresh_hz); }

  // During doFrame: the frame being drawn, else nullptr. Looper thread only.
  const FrameInfo* CurrentFrame() const { return in_frame_ ? &frame_ : nullptr; }
  // frames-jank: the dropped frames the current frame was planned for.
  void SetPlannedDropped(int64_t frames) { truth_.planned_dropped = frames; }
  // Frames drawn so far.
  uint64_t frames() const { return frames_done_; }

 private:
  void OnVsync();
  void DoFrame(uint64_t intended_vsync_ns, uint64_t interval_ns, uint32_t refresh_hz);

  Looper* const looper_;
  Handler handler_;
  VsyncSource vsync_;
  std::mutex mu_;
  std::vector<FrameCallback> queues_[kPhaseCount];
  bool frame_scheduled_ = false;
  bool traversal_scheduled_ = false;
  std::vector<FrameCallback> traversals_;
  bool in_frame_ = false;
  FrameInfo frame_;
  FrameTruth truth_;
  uint64_t frames_done_ = 0;
};

// Plays an animation: one frame after another, each running the work planned
// for it (the frame's INPUT callback is posted by the previous frame, its
// ANIMATION callback requests the next frame, TRAVERSAL goes through
// ScheduleTraversals), until `frames` frames were drawn or Stop() was called.
struct FrameWork {
  uint64_t phase_ns[kPhaseCount] = {};  // busy work per phase
  WorkKind kind = WorkKind::kSpin;
  // >= 0: the frame is stretched (in `stretch_phase`, with `kind` work) so
  // that it ends at vsync_ns + (stretch_dropped + 1/2) * interval: a frame
  // that drops exactly stretch_dropped frames.
  int64_t stretch_dropped = -1;
  FramePhase stretch_phase = kPhaseTraversal;
  // >= 0: written to the frame's truth as "planned_dropped".
  int64_t planned_dropped = -1;
};

class Animator {
 public:
  using Plan = std::function<FrameWork(uint64_t index)>;
  // `on_done` runs (on the looper thread) in the COMMIT phase of the last frame.
  Animator(Choreographer* choreographer, uint64_t frames, Plan plan, std::function<void()> on_done);
  // Looper thread (or before the looper runs).
  void Start();
  // The frame in progress (or the next one) is the last.
  void Stop() { stop_ = true; }
  // Runs in each frame's COMMIT phase, after the frame's planned work.
  void SetCommitHook(std::function<void(uint64_t index, const FrameInfo&)> hook) { commit_hook_ = std::move(hook); }
  uint64_t frames_drawn() const { return drawn_; }

  // Light work of a normal frame: 2-4 ms in total, spread over the phases.
  static FrameWork LightWork(uint64_t total_ns);

 private:
  const FrameWork& Work(uint64_t index);
  void RunPhase(const FrameInfo& frame, uint64_t index, FramePhase phase);
  void OnAnimation(uint64_t index, const FrameInfo& frame);

  Choreographer* const choreographer_;
  const uint64_t frames_;
  const Plan plan_;
  const std::function<void()> on_done_;
  std::function<void(uint64_t, const FrameInfo&)> commit_hook_;
  bool stop_ = false;
  uint64_t drawn_ = 0;
  uint64_t cached_index_ = UINT64_MAX;
  FrameWork cached_work_;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_CHOREOGRAPHER_H_
