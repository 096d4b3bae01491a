// `report-tour`: a little of everything a report shows, in ~3.5 s, for the
// HTML report's browser test and the README screenshot:
//
//   "bindApplication"     cold start: app.create (SampleApplication.onCreate,
//                         instrumented, ~150 ms), then "launchActivity"
//                         sample.app.MainActivity (instrumented onCreate and
//                         onResume)
//   frames                --count frames (default 90) of 2-4 ms at
//                         --refresh-rate Hz; frame index 30 is stretched to
//                         drop exactly 3 frames (planned_dropped 3)
//   "windowFocusChanged"  5 ms after the first frame; "reportFullyDrawn" 100 ms
//                         later; from the focus a 0.3 ms "app.tick" every 50 ms
//   "evil.jank"           300 ms after the focus: Matrix's A..L call tree with
//                         every sleep divided by 10 (~224 ms)
//   "anr.lock"            700 ms after the focus: waits --stall-ms (default
//                         1500) for a pthread mutex held by the thread
//                         "sample-holder" (truth "stall" kind "lock" with
//                         holder_tid, as anr-lock)
//   "app.exit"            50 ms after both the animation and the stall ended.

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "app_methods.h"
#include "choreographer.h"
#include "lifecycle.h"
#include "looper.h"
#include "method_trace.h"
#include "prng.h"
#include "scenario.h"
#include "stall.h"
#include "sys_util.h"
#include "truth.h"
#include "work.h"

namespace looptrace::sample {
namespace {

constexpr const char* kMainActivity = "sample.app.MainActivity";
constexpr uint64_t kJankFrameIndex = 30;
constexpr int64_t kJankDropped = 3;
constexpr uint64_t kDefaultStallMs = 1500;

class ReportTourScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    ctx_ = ctx;
    looper_ = ctx.main_looper;
    handler_ = ctx.main_handler;
    stall_ns_ = ctx.stall_ms.value_or(kDefaultStallMs) * kNsPerMs;
    SetStartupDivisor(10);
    SetEvilSleepDivisor(10);
    lifecycle::RecordProcessStart(ctx.process_start_ns);
    StartHolder();
    choreographer_ = std::make_unique<Choreographer>(looper_, ctx.refresh_hz);
    handler_->PostAtTime(
        "bindApplication", [this] { BindApplication(); }, ctx.start_ns);
  }

  int Finish() override {
    if (holder_.joinable()) holder_.join();
    animator_.reset();
    choreographer_.reset();
    return 0;
  }

 private:
  void BindApplication() {
    lifecycle::AppCreateBegin();
    LOOPTRACE_SAMPLE_CALL(::sample::app::SampleApplication::onCreate);
    lifecycle::AppCreateEnd();
    handler_->Post("launchActivity", [this] { Launch(); });
  }

  void Launch() {
    lifecycle::ActivityLaunch(kMainActivity, /*warm=*/false);
    LOOPTRACE_SAMPLE_CALL(::sample::app::MainActivity::onCreate);
    LOOPTRACE_SAMPLE_CALL(::sample::app::MainActivity::onResume);
    const uint64_t seed = ctx_.seed;
    animator_ = std::make_unique<Animator>(
        choreographer_.get(), ctx_.count,
        [seed](uint64_t index) {
          FrameWork work =
              Animator::LightWork(Prng(seed * 0x9e3779b97f4a7c15ULL + index + 1).Uniform(2 * kNsPerMs, 4 * kNsPerMs));
          if (index == kJankFrameIndex) {
            work.stretch_dropped = kJankDropped;
            work.planned_dropped = kJankDropped;
          }
          return work;
        },
        [this] {
          animation_done_ = true;
          MaybeExit();
        });
    animator_->SetCommitHook([this](uint64_t index, const FrameInfo&) {
      if (index == 0)
        handler_->PostDelayed(
            "windowFocusChanged", [this] { Focused(); }, 5 * kNsPerMs);
    });
    animator_->Start();
  }

  void Focused() {
    lifecycle::ActivityFocus(kMainActivity);
    handler_->PostDelayed(
        "reportFullyDrawn", [] { lifecycle::FullyDrawn(); }, 100 * kNsPerMs);
    handler_->PostDelayed(
        "evil.jank", [] { LOOPTRACE_SAMPLE_CALL(::sample::app::TestTraceMainActivity::A); }, 300 * kNsPerMs);
    handler_->PostDelayed(
        "anr.lock", [this] { Stall(); }, 700 * kNsPerMs);
    Tick();
  }

  void Tick() {
    if (exiting_) return;
    handler_->PostDelayed(
        "app.tick",
        [this] {
          SpinFor(300 * kNsPerUs);
          Tick();
        },
        50 * kNsPerMs);
  }

  void MaybeExit() {
    if (!animation_done_ || !stall_done_ || exiting_) return;
    exiting_ = true;
    handler_->PostDelayed(
        "app.exit", [this] { looper_->Quit(); }, 50 * kNsPerMs);
  }

  // The holder locks the mutex first and keeps it until the main thread has
  // waited for it stall_ns_ (as anr-lock).
  void StartHolder() {
    holder_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sample-holder");
      pthread_mutex_lock(&lock_);
      std::unique_lock state(state_mu_);
      holder_tid_ = CurrentTid();
      holder_lock_ns_ = NowNs();
      state_cv_.notify_all();
      state_cv_.wait(state, [this] { return wait_begin_ns_ != 0; });
      const uint64_t release_ns = wait_begin_ns_ + stall_ns_;
      state.unlock();
      SleepUntil(release_ns);
      holder_unlock_ns_.store(NowNs());
      pthread_mutex_unlock(&lock_);
    });
    std::unique_lock state(state_mu_);
    state_cv_.wait(state, [this] { return holder_tid_ != 0; });
  }

  void Stall() {
    const uint64_t begin_ns = NowNs();
    {
      std::lock_guard state(state_mu_);
      wait_begin_ns_ = begin_ns;
    }
    state_cv_.notify_all();
    pthread_mutex_lock(&lock_);
    const uint64_t end_ns = NowNs();
    pthread_mutex_unlock(&lock_);
    TruthRecorder::Global().RecordLine(StallLine("lock", begin_ns, stall_ns_)
                                           .U("end_ns", end_ns)
                                           .I("holder_tid", holder_tid_)
                                           .U("holder_lock_ns", holder_lock_ns_)
                                           .U("holder_unlock_ns", holder_unlock_ns_.load())
                                           .Take());
    stall_done_ = true;
    MaybeExit();
  }

  ScenarioContext ctx_;
  Looper* looper_ = nullptr;
  Handler* handler_ = nullptr;
  uint64_t stall_ns_ = 0;
  std::unique_ptr<Choreographer> choreographer_;
  std::unique_ptr<Animator> animator_;
  bool animation_done_ = false;
  bool stall_done_ = false;
  bool exiting_ = false;

  pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
  std::mutex state_mu_;
  std::condition_variable state_cv_;
  pid_t holder_tid_ = 0;
  uint64_t holder_lock_ns_ = 0;
  uint64_t wait_begin_ns_ = 0;
  std::atomic<uint64_t> holder_unlock_ns_{0};
  std::thread holder_;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(ReportTourScenario, "report-tour",
                          "cold start, --count frames (default 90) with one dropping 3, app.tick "
                          "every 50 ms, a ~224 ms evil.jank (A..L), and anr.lock waiting --stall-ms "
                          "(default 1500) for sample-holder's mutex; ~3.5 s",
                          90);

}  // namespace looptrace::sample
