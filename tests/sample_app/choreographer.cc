#include "choreographer.h"

#include <atomic>
#include <utility>

#include "hooks.h"
#include "lifecycle.h"
#include "sys_util.h"

namespace looptrace::sample {
namespace {

std::atomic<uint64_t> g_next_frame_id{1};

}  // namespace

// ----------------------------------------------------------- Choreographer

Choreographer::Choreographer(Looper* looper, uint32_t refresh_hz)
    : looper_(looper), handler_(looper, /*async=*/true), vsync_(refresh_hz) {
  looper_->queue().AddFd(vsync_.fd(), [this] { OnVsync(); });
  vsync_.Start();
}

Choreographer::~Choreographer() {
  looper_->queue().RemoveFd(vsync_.fd());
  vsync_.Stop();
}

void Choreographer::PostCallback(FramePhase phase, FrameCallback callback) {
  bool request = false;
  {
    std::lock_guard lock(mu_);
    queues_[phase].push_back(std::move(callback));
    if (!frame_scheduled_) {
      frame_scheduled_ = true;
      request = true;
    }
  }
  if (request) vsync_.RequestVsync();
}

void Choreographer::ScheduleTraversals(FrameCallback traversal) {
  traversals_.push_back(std::move(traversal));
  if (traversal_scheduled_) return;
  traversal_scheduled_ = true;
  const int token = looper_->queue().PostSyncBarrier();
  PostCallback(kPhaseTraversal, [this, token](const FrameInfo& frame) {
    traversal_scheduled_ = false;
    looper_->queue().RemoveSyncBarrier(token);
    std::vector<FrameCallback> traversals = std::move(traversals_);
    traversals_.clear();
    for (FrameCallback& t : traversals) t(frame);
  });
}

void Choreographer::OnVsync() {
  // FrameDisplayEventReceiver.onVsync, on the looper thread inside its poll.
  const std::optional<VsyncSource::Event> event = vsync_.TakeEvent();
  if (!event) return;
  const uint64_t ts_ns = NowNs();
  sample_vsync(event->vsync_ns);
  const uint64_t ts_after_ns = NowNs();
  TruthRecorder::Global().RecordVsync(CurrentTid(), ts_ns, ts_after_ns, event->vsync_ns);
  const VsyncSource::Event e = *event;
  handler_.PostAtTime(
      "Choreographer#doFrame", [this, e] { DoFrame(e.vsync_ns, e.interval_ns, e.refresh_hz); }, e.vsync_ns);
}

void Choreographer::DoFrame(uint64_t intended_vsync_ns, uint64_t interval_ns, uint32_t refresh_hz) {
  // Choreographer.doFrame: a frame that starts one interval or more after its
  // vsync counts the skipped frames and is drawn for the latest vsync.
  const uint64_t start_ns = NowNs();
  uint64_t frame_time_ns = intended_vsync_ns;
  uint64_t skipped = 0;
  if (start_ns > intended_vsync_ns && interval_ns > 0) {
    const uint64_t jitter_ns = start_ns - intended_vsync_ns;
    if (jitter_ns >= interval_ns) {
      skipped = jitter_ns / interval_ns;
      frame_time_ns = start_ns - jitter_ns % interval_ns;
    }
  }
  {
    std::lock_guard lock(mu_);
    frame_scheduled_ = false;
  }
  const uint64_t frame_id = g_next_frame_id.fetch_add(1);
  frame_ = FrameInfo{frame_id, frame_time_ns, intended_vsync_ns, interval_ns, refresh_hz, skipped};
  truth_ = FrameTruth{};
  truth_.tid = CurrentTid();
  truth_.frame_id = frame_id;
  truth_.msg_id = Looper::CurrentMessageId();
  truth_.vsync_ns = frame_time_ns;
  truth_.intended_vsync_ns = intended_vsync_ns;
  truth_.skipped_frames = skipped;
  truth_.interval_ns = interval_ns;
  truth_.refresh_hz = refresh_hz;
  truth_.scene = lifecycle::CurrentScene();
  in_frame_ = true;

  truth_.begin_ns = NowNs();
  sample_choreographer_frame_begin(frame_id, frame_time_ns);
  truth_.begin_after_ns = NowNs();
  for (uint32_t phase = 0; phase < kPhaseCount; ++phase) {
    std::vector<FrameCallback> callbacks;
    {
      std::lock_guard lock(mu_);
      callbacks.swap(queues_[phase]);
    }
    FrameTruth::Phase& p = truth_.phases[phase];
    p.begin_ns = NowNs();
    sample_choreographer_phase_begin(phase);
    p.begin_after_ns = NowNs();
    for (FrameCallback& callback : callbacks) callback(frame_);
    p.end_ns = NowNs();
    sample_choreographer_phase_end(phase);
    p.end_after_ns = NowNs();
  }
  truth_.end_ns = NowNs();
  sample_choreographer_frame_end(frame_id);
  truth_.end_after_ns = NowNs();
  in_frame_ = false;
  ++frames_done_;
  TruthRecorder::Global().RecordFrame(truth_);
  lifecycle::OnFrameEnd(frame_id, truth_.end_ns, truth_.end_after_ns);
}

// ----------------------------------------------------------------- Animator

Animator::Animator(Choreographer* choreographer, uint64_t frames, Plan plan, std::function<void()> on_done)
    : choreographer_(choreographer), frames_(frames), plan_(std::move(plan)), on_done_(std::move(on_done)) {}

FrameWork Animator::LightWork(uint64_t total_ns) {
  FrameWork work;
  work.phase_ns[kPhaseInput] = total_ns * 5 / 100;
  work.phase_ns[kPhaseAnimation] = total_ns * 20 / 100;
  work.phase_ns[kPhaseInsetsAnimation] = total_ns * 2 / 100;
  work.phase_ns[kPhaseTraversal] = total_ns * 63 / 100;
  work.phase_ns[kPhaseCommit] = total_ns * 10 / 100;
  return work;
}

const FrameWork& Animator::Work(uint64_t index) {
  if (cached_index_ != index) {
    cached_work_ = plan_(index);
    cached_index_ = index;
  }
  return cached_work_;
}

void Animator::Start() {
  choreographer_->PostCallback(kPhaseInput, [this](const FrameInfo& f) { RunPhase(f, 0, kPhaseInput); });
  choreographer_->PostFrameCallback([this](const FrameInfo& f) { OnAnimation(0, f); });
}

void Animator::RunPhase(const FrameInfo& frame, uint64_t index, FramePhase phase) {
  const FrameWork& work = Work(index);
  if (work.phase_ns[phase] > 0) DoWork(work.kind, work.phase_ns[phase]);
  if (work.stretch_dropped < 0 || phase != work.stretch_phase) return;
  // End the frame at vsync + (N + 1/2) intervals: the planned work of the
  // later phases still follows.
  uint64_t later_ns = 0;
  for (uint32_t p = phase + 1; p < kPhaseCount; ++p) later_ns += work.phase_ns[p];
  const uint64_t target_ns =
      frame.vsync_ns + (2 * static_cast<uint64_t>(work.stretch_dropped) + 1) * frame.interval_ns / 2;
  if (target_ns <= later_ns) return;
  const uint64_t deadline_ns = target_ns - later_ns;
  const uint64_t now_ns = NowNs();
  if (deadline_ns > now_ns) DoWork(work.kind, deadline_ns - now_ns);
}

void Animator::OnAnimation(uint64_t index, const FrameInfo& frame) {
  const FrameWork& work = Work(index);
  if (work.planned_dropped >= 0) choreographer_->SetPlannedDropped(work.planned_dropped);
  RunPhase(frame, index, kPhaseAnimation);
  const bool last = stop_ || index + 1 >= frames_;
  if (!last) {
    // The next frame: its input, and the animation asks for the next vsync.
    choreographer_->PostCallback(kPhaseInput,
                                 [this, index](const FrameInfo& f) { RunPhase(f, index + 1, kPhaseInput); });
    choreographer_->PostFrameCallback([this, index](const FrameInfo& f) { OnAnimation(index + 1, f); });
  }
  // This frame: the animation invalidated the view.
  choreographer_->PostCallback(kPhaseInsetsAnimation,
                               [this, index](const FrameInfo& f) { RunPhase(f, index, kPhaseInsetsAnimation); });
  choreographer_->ScheduleTraversals([this, index](const FrameInfo& f) { RunPhase(f, index, kPhaseTraversal); });
  choreographer_->PostCallback(kPhaseCommit, [this, index, last](const FrameInfo& f) {
    RunPhase(f, index, kPhaseCommit);
    if (commit_hook_) commit_hook_(index, f);
    ++drawn_;
    if (last && on_done_) on_done_();
  });
}

}  // namespace looptrace::sample
