// Startup scenarios, in Android's order on the main looper:
//   "bindApplication"    app.create.begin, SampleApplication.onCreate()
//                        (instrumented call tree, app_methods.h), app.create.end
//   "launchActivity"     activity.launch(name), Activity.onCreate/onResume
//                        (instrumented), then the window is added: its
//                        animation starts and a traversal is scheduled
//   "Choreographer#doFrame"...  the first frame (first.frame = its end) draws
//                        the window (12 ms of TRAVERSAL), later frames 2-4 ms
//   "windowFocusChanged" 5 ms after the first frame: activity.focus(name)
//   "reportFullyDrawn"   100 ms after the focus (MainActivity): fully.drawn
//   "app.exit"           300 ms after the last focus: the looper quits.
//
//   startup              MainActivity; app create ~150 ms
//   startup-splash       SplashActivity launched and focused first; 300 ms
//                        after its focus "launchActivity" MainActivity (the
//                        splash stops drawing)
//   startup-slow-create  startup with app create ~1.5 s (SampleApplication
//                        methods not divided by 10)
//   startup-warm         startup, then 300 ms after fully.drawn the activity
//                        is finished ("destroyActivity": no more frames), and
//                        200 ms later launched again in the same process: a
//                        warm start (warm: true on its milestones)

#include <cstdint>
#include <memory>
#include <vector>

#include "app_methods.h"
#include "choreographer.h"
#include "lifecycle.h"
#include "looper.h"
#include "method_trace.h"
#include "prng.h"
#include "scenario.h"
#include "sys_util.h"

namespace looptrace::sample {
namespace {

constexpr const char* kMainActivity = "sample.app.MainActivity";
constexpr const char* kSplashActivity = "sample.app.SplashActivity";
constexpr uint64_t kFirstFrameTraversalNs = 12 * kNsPerMs;
constexpr uint64_t kFocusDelayNs = 5 * kNsPerMs;
constexpr uint64_t kFullyDrawnDelayNs = 100 * kNsPerMs;
constexpr uint64_t kExitDelayNs = 300 * kNsPerMs;
constexpr uint64_t kSplashNs = 300 * kNsPerMs;
constexpr uint64_t kWarmGapNs = 200 * kNsPerMs;

class StartupScenarioBase : public Scenario {
 public:
  enum class Flow { kPlain, kSplash, kWarm };

  StartupScenarioBase(Flow flow, uint64_t app_divisor) : flow_(flow), app_divisor_(app_divisor) {}

  void Start(const ScenarioContext& ctx) override {
    ctx_ = ctx;
    looper_ = ctx.main_looper;
    handler_ = ctx.main_handler;
    SetStartupDivisor(app_divisor_);
    lifecycle::RecordProcessStart(ctx.process_start_ns);
    choreographer_ = std::make_unique<Choreographer>(looper_, ctx.refresh_hz);
    handler_->PostAtTime(
        "bindApplication", [this] { BindApplication(); }, ctx.start_ns);
  }

  int Finish() override {
    animators_.clear();
    choreographer_.reset();
    return 0;
  }

 private:
  void BindApplication() {
    lifecycle::AppCreateBegin();
    LOOPTRACE_SAMPLE_CALL(::sample::app::SampleApplication::onCreate);
    lifecycle::AppCreateEnd();
    // ActivityThread then handles the launch the system sent meanwhile.
    const bool splash = flow_ == Flow::kSplash;
    handler_->Post("launchActivity",
                   [this, splash] { Launch(splash ? kSplashActivity : kMainActivity, /*warm=*/false); });
  }

  void Launch(const char* activity, bool warm) {
    lifecycle::ActivityLaunch(activity, warm);
    if (activity == kSplashActivity) {
      LOOPTRACE_SAMPLE_CALL(::sample::app::SplashActivity::onCreate);
    } else {
      LOOPTRACE_SAMPLE_CALL(::sample::app::MainActivity::onCreate);
      LOOPTRACE_SAMPLE_CALL(::sample::app::MainActivity::onResume);
    }
    // The previous activity's window stops drawing.
    if (!animators_.empty()) animators_.back()->Stop();
    // WindowManager.addView: the window's first traversal and its animation.
    const uint64_t seed = ctx_.seed + animators_.size();
    auto animator = std::make_unique<Animator>(
        choreographer_.get(), UINT64_MAX,
        [seed](uint64_t index) {
          FrameWork work =
              Animator::LightWork(Prng(seed * 0x9e3779b97f4a7c15ULL + index + 1).Uniform(2 * kNsPerMs, 4 * kNsPerMs));
          if (index == 0) work.phase_ns[kPhaseTraversal] = kFirstFrameTraversalNs;
          return work;
        },
        nullptr);
    animator->SetCommitHook([this, activity](uint64_t index, const FrameInfo&) {
      if (index != 0) return;
      handler_->PostDelayed(
          "windowFocusChanged", [this, activity] { Focused(activity); }, kFocusDelayNs);
    });
    animator->Start();
    animators_.push_back(std::move(animator));
  }

  void Focused(const char* activity) {
    lifecycle::ActivityFocus(activity);
    if (activity == kSplashActivity) {
      handler_->PostDelayed(
          "launchActivity", [this] { Launch(kMainActivity, /*warm=*/false); }, kSplashNs);
      return;
    }
    handler_->PostDelayed(
        "reportFullyDrawn",
        [this] {
          lifecycle::FullyDrawn();
          if (flow_ == Flow::kWarm && !warm_done_) {
            warm_done_ = true;
            handler_->PostDelayed(
                "destroyActivity",
                [this] {
                  animators_.back()->Stop();
                  handler_->PostDelayed(
                      "launchActivity", [this] { Launch(kMainActivity, /*warm=*/true); }, kWarmGapNs);
                },
                kExitDelayNs);
          }
        },
        kFullyDrawnDelayNs);
    // The last focus of the scenario (in startup-warm the second one) arms
    // the exit.
    if (flow_ == Flow::kWarm && focus_count_++ == 0) return;
    handler_->PostDelayed(
        "app.exit", [this] { looper_->Quit(); }, kExitDelayNs);
  }

  const Flow flow_;
  const uint64_t app_divisor_;
  ScenarioContext ctx_;
  Looper* looper_ = nullptr;
  Handler* handler_ = nullptr;
  std::unique_ptr<Choreographer> choreographer_;
  std::vector<std::unique_ptr<Animator>> animators_;
  bool warm_done_ = false;
  int focus_count_ = 0;
};

class StartupScenario : public StartupScenarioBase {
 public:
  StartupScenario() : StartupScenarioBase(Flow::kPlain, 10) {}
};

class StartupSplashScenario : public StartupScenarioBase {
 public:
  StartupSplashScenario() : StartupScenarioBase(Flow::kSplash, 10) {}
};

class StartupSlowCreateScenario : public StartupScenarioBase {
 public:
  StartupSlowCreateScenario() : StartupScenarioBase(Flow::kPlain, 1) {}
};

class StartupWarmScenario : public StartupScenarioBase {
 public:
  StartupWarmScenario() : StartupScenarioBase(Flow::kWarm, 10) {}
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(StartupScenario, "startup",
                          "cold start: bindApplication (~150 ms), launchActivity MainActivity, first "
                          "frame, focus, fully drawn, exit 300 ms after the focus; ~0.5 s",
                          1);
LOOPTRACE_SAMPLE_SCENARIO(StartupSplashScenario, "startup-splash",
                          "cold start through sample.app.SplashActivity (focused, 300 ms), then "
                          "MainActivity launched and focused; ~0.9 s",
                          1);
LOOPTRACE_SAMPLE_SCENARIO(StartupSlowCreateScenario, "startup-slow-create",
                          "startup with a ~1.5 s Application.onCreate (instrumented call tree, ids "
                          "15-23); ~1.9 s",
                          1);
LOOPTRACE_SAMPLE_SCENARIO(StartupWarmScenario, "startup-warm",
                          "startup, then MainActivity finished and launched again in the same "
                          "process (warm start); ~1.4 s",
                          1);

}  // namespace looptrace::sample
