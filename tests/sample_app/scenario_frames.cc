// Frame scenarios: a Choreographer on the main looper, driven by the vsync
// thread at --refresh-rate Hz (default 60), draws an animation in the scene
// "sample.app.MainActivity" (focused by a "windowFocusChanged" message first).
//
//   frames-smooth         --count frames (default 120) of 2-4 ms work, plus a
//                         0.3 ms non-UI message "app.tick" every 50 ms
//   frames-jank           --count frames (default 150) of 2-4 ms work, except
//                         frames 20, 45, 70, 95 and 120 (0-based), which are
//                         stretched to end at vsync + (N + 1/2) intervals for
//                         N = 1, 3, 9, 24, 42 dropped frames; the frame after
//                         each does 1 ms of work
//   frames-busy-between   --count frames (default 120) of 2-4 ms work; every
//                         4th frame (index % 4 == 2) posts a non-UI message
//                         "bg.work" of 10-30 ms due 2-12 ms later, which
//                         delays the next vsync's doFrame
//   frames-refresh-change 60 Hz in sample.app.MainActivity for --count ms
//                         (default 1000), then sample.app.VideoActivity gains
//                         focus and the display switches to 120 Hz for
//                         --count ms more

#include <cstdint>
#include <memory>

#include "choreographer.h"
#include "lifecycle.h"
#include "looper.h"
#include "prng.h"
#include "scenario.h"
#include "sys_util.h"
#include "work.h"

namespace looptrace::sample {
namespace {

constexpr const char* kMainActivity = "sample.app.MainActivity";
constexpr const char* kVideoActivity = "sample.app.VideoActivity";

// A deterministic draw per (seed, index): the plan of frame k does not depend
// on how many frames were planned before it.
uint64_t Draw(uint64_t seed, uint64_t index, uint64_t lo, uint64_t hi) {
  Prng rng(seed * 0x9e3779b97f4a7c15ULL + index * 0xd1342543de82ef95ULL + 1);
  return rng.Uniform(lo, hi);
}

FrameWork NormalFrame(uint64_t seed, uint64_t index) {
  return Animator::LightWork(Draw(seed, index, 2 * kNsPerMs, 4 * kNsPerMs));
}

class FramesScenarioBase : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    ctx_ = ctx;
    looper_ = ctx.main_looper;
    choreographer_ = std::make_unique<Choreographer>(looper_, RefreshHz(ctx));
    animator_ = std::make_unique<Animator>(
        choreographer_.get(), Frames(ctx), [this](uint64_t index) { return Plan(index); }, [this] { looper_->Quit(); });
    ctx.main_handler->PostAtTime(
        "windowFocusChanged",
        [this] {
          lifecycle::ActivityFocus(kMainActivity);
          animator_->Start();
          OnStarted();
        },
        ctx.start_ns);
  }

  int Finish() override {
    animator_.reset();
    choreographer_.reset();  // stops the vsync thread
    return 0;
  }

 protected:
  virtual uint32_t RefreshHz(const ScenarioContext& ctx) { return ctx.refresh_hz; }
  virtual uint64_t Frames(const ScenarioContext& ctx) { return ctx.count; }
  virtual FrameWork Plan(uint64_t index) { return NormalFrame(ctx_.seed, index); }
  // In the first message, after the animation started.
  virtual void OnStarted() {}

  ScenarioContext ctx_;
  Looper* looper_ = nullptr;
  std::unique_ptr<Choreographer> choreographer_;
  std::unique_ptr<Animator> animator_;
};

// ------------------------------------------------------------ frames-smooth

class FramesSmoothScenario : public FramesScenarioBase {
 protected:
  void OnStarted() override { Tick(); }

 private:
  void Tick() {
    ctx_.main_handler->PostDelayed(
        "app.tick",
        [this] {
          SpinFor(300 * kNsPerUs);
          Tick();
        },
        50 * kNsPerMs);
  }
};

// -------------------------------------------------------------- frames-jank

struct JankFrame {
  uint64_t index;
  int64_t dropped;
  FramePhase phase;
  WorkKind kind;
};

// Documented in README.md: which frame drops how many, in which phase, how.
constexpr JankFrame kJankFrames[] = {
    {20, 1, kPhaseTraversal, WorkKind::kSpin},   {45, 3, kPhaseAnimation, WorkKind::kSpin},
    {70, 9, kPhaseInput, WorkKind::kSleep},      {95, 24, kPhaseTraversal, WorkKind::kMixed},
    {120, 42, kPhaseTraversal, WorkKind::kSpin},
};

class FramesJankScenario : public FramesScenarioBase {
 protected:
  FrameWork Plan(uint64_t index) override {
    FrameWork work = NormalFrame(ctx_.seed, index);
    for (const JankFrame& jank : kJankFrames) {
      // The frame after a stretched one starts up to half an interval late:
      // 1 ms of work keeps it well inside its interval even at 120 Hz.
      if (jank.index + 1 == index) work = Animator::LightWork(kNsPerMs);
    }
    work.planned_dropped = 0;
    for (const JankFrame& jank : kJankFrames) {
      if (jank.index != index) continue;
      work.stretch_dropped = jank.dropped;
      work.planned_dropped = jank.dropped;
      work.stretch_phase = jank.phase;
      work.kind = jank.kind;
    }
    return work;
  }
};

// ------------------------------------------------------ frames-busy-between

class FramesBusyBetweenScenario : public FramesScenarioBase {
 protected:
  void OnStarted() override {
    animator_->SetCommitHook([this](uint64_t index, const FrameInfo&) {
      if (index % 4 != 2) return;
      const uint64_t delay_ns = Draw(ctx_.seed ^ 0xb5, index, 2 * kNsPerMs, 12 * kNsPerMs);
      const uint64_t cost_ns = Draw(ctx_.seed ^ 0xc7, index, 10 * kNsPerMs, 30 * kNsPerMs);
      const WorkKind kind = static_cast<WorkKind>(Draw(ctx_.seed ^ 0xd3, index, 0, 2));
      ctx_.main_handler->PostDelayed(
          "bg.work", [kind, cost_ns] { DoWork(kind, cost_ns); }, delay_ns);
    });
  }
};

// ---------------------------------------------------- frames-refresh-change

class FramesRefreshChangeScenario : public FramesScenarioBase {
 protected:
  uint32_t RefreshHz(const ScenarioContext&) override { return 60; }
  uint64_t Frames(const ScenarioContext&) override { return UINT64_MAX; }
  void OnStarted() override {
    const uint64_t phase_ns = ctx_.count * kNsPerMs;
    const uint64_t now = NowNs();
    ctx_.main_handler->PostAtTime(
        "displayChanged",
        [this] {
          lifecycle::ActivityFocus(kVideoActivity);
          choreographer_->SetRefreshRate(120);
        },
        now + phase_ns);
    ctx_.main_handler->PostAtTime(
        "animation.end", [this] { animator_->Stop(); }, now + 2 * phase_ns);
  }
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(FramesSmoothScenario, "frames-smooth",
                          "--count frames (default 120) of 2-4 ms at --refresh-rate Hz (default 60) "
                          "in sample.app.MainActivity, a 0.3 ms non-UI message every 50 ms; no drop",
                          120);
LOOPTRACE_SAMPLE_SCENARIO(FramesJankScenario, "frames-jank",
                          "--count frames (default 150) of 2-4 ms; frames 20/45/70/95/120 drop "
                          "exactly 1/3/9/24/42 frames at --refresh-rate Hz (default 60); ~4 s",
                          150);
LOOPTRACE_SAMPLE_SCENARIO(FramesBusyBetweenScenario, "frames-busy-between",
                          "--count frames (default 120) of 2-4 ms; every 4th frame posts a 10-30 ms "
                          "non-UI message bg.work that delays the next doFrame",
                          120);
LOOPTRACE_SAMPLE_SCENARIO(FramesRefreshChangeScenario, "frames-refresh-change",
                          "frames at 60 Hz in sample.app.MainActivity for --count ms (default 1000), "
                          "then 120 Hz in sample.app.VideoActivity for --count ms",
                          1000);

}  // namespace looptrace::sample
