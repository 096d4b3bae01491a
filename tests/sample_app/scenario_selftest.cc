// `selftest`: checks the looper's semantics (FIFO among equal times, sync
// barriers and async messages, IdleHandlers, cross-thread wake, QuitSafely),
// three Choreographer frames at 120 Hz (phase order, vsync grid), the hooks'
// machine code and their .dynsym entries, the Signal Catcher (SIGQUIT
// blocked, thread dump), and the method table (ids 1..N, each method's
// address named by its symbol). Exits 1 with a reason on stderr on failure.

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "choreographer.h"
#include "hook_table.h"
#include "looper.h"
#include "method_trace.h"
#include "scenario.h"
#include "signal_catcher.h"
#include "sys_util.h"
#include "work.h"

namespace looptrace::sample {
namespace {

constexpr int32_t kWatchdogWhat = 0x5743;
constexpr uint64_t kRemoteDelayNs = 20 * kNsPerMs;
constexpr uint64_t kMaxWakeLatencyNs = 10 * kNsPerMs;

class SelftestScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    looper_ = ctx.main_looper;
    handler_ = ctx.main_handler;
    looper_->queue().AddIdleHandler({"st.idle", [this] {
                                       ++idle_runs_;
                                       return true;
                                     }});
    // Phase 1: FIFO among equal times; an earlier time posted later goes first.
    const uint64_t t = ctx.start_ns + 5 * kNsPerMs;
    handler_->PostAtTime(
        "st.fifo", [this] { Record(1); }, t);
    handler_->PostAtTime(
        "st.fifo", [this] { Record(2); }, t);
    handler_->PostAtTime(
        "st.fifo", [this] { Record(3); }, t);
    handler_->PostAtTime(
        "st.early", [this] { Record(0); }, t - kNsPerMs);
    handler_->PostAtTime(
        "st.phase2", [this] { Phase2(); }, t + kNsPerMs);
  }

  int Finish() override {
    if (poster_.joinable()) poster_.join();
    const std::vector<int> expected = {0, 1, 2, 3, 4, 5, 6, 7};
    if (order_ != expected) {
      std::string got;
      for (int v : order_) got += std::to_string(v) + " ";
      Fail("dispatch order is " + got + "instead of 0 1 2 3 4 5 6 7");
    }
    if (idle_runs_ == 0) Fail("the IdleHandler never ran");
    for (const HookEntry& hook : AllHooks()) CheckHook(hook.name, hook.address);
    CheckSignalCatcher();
    for (const std::string& problem : CheckMethodTable()) Fail(problem);
    if (failures_ > 0) return 1;
    std::printf("selftest: ok (%d idle handler runs)\n", idle_runs_);
    return 0;
  }

 private:
  void Record(int value) { order_.push_back(value); }

  void Fail(const std::string& what) {
    std::fprintf(stderr, "looptrace-sample-app: selftest: %s\n", what.c_str());
    ++failures_;
  }

  void CheckHook(const char* name, const void* fn) {
    static const unsigned char kExpected[] = {0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3};
    if (std::memcmp(fn, kExpected, sizeof(kExpected)) != 0) {
      Fail(std::string(name) + " does not start with nop5; ret");
    }
    // Exported: found by name in .dynsym, at the same address.
    if (dlsym(RTLD_DEFAULT, name) != fn) {
      Fail(std::string(name) + " is not in .dynsym");
    }
  }

  // SIGQUIT is blocked here (the Signal Catcher takes it) and the dump lists
  // the main thread and the catcher.
  void CheckSignalCatcher() {
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    if (sigismember(&mask, SIGQUIT) != 1) Fail("SIGQUIT is not blocked in main");
    if (sigismember(&mask, SIGTERM) == 1) Fail("SIGTERM is blocked in main");
    const std::string dump = ThreadDump();
    const std::string pid = std::to_string(getpid());
    if (dump.find("----- pid " + pid + " at ") == std::string::npos ||
        dump.find("----- end " + pid + " -----") == std::string::npos ||
        dump.find("\"Signal Catcher\"") == std::string::npos || dump.find(" (main)\n") == std::string::npos) {
      Fail("unexpected thread dump:\n" + dump);
    }
  }

  // Phase 2: a barrier holds a due synchronous message until an asynchronous
  // message (due later) removes it; no IdleHandler runs meanwhile.
  void Phase2() {
    MessageQueue& queue = looper_->queue();
    const int token = queue.PostSyncBarrier();
    handler_->Post("st.sync", [this] {
      Record(5);
      Phase3();
    });
    Message async = handler_->Obtain("st.async", [this, token] {
      if (idle_runs_ != idle_runs_at_barrier_) {
        Fail("an IdleHandler ran while a barrier blocked the queue");
      }
      Record(4);
      if (!looper_->queue().RemoveSyncBarrier(token)) Fail("barrier not found");
    });
    async.asynchronous = true;
    idle_runs_at_barrier_ = idle_runs_;
    handler_->SendMessageDelayed(std::move(async), 3 * kNsPerMs);
  }

  // Phase 3: a message posted from another thread wakes the blocked looper.
  void Phase3() {
    Message watchdog = handler_->Obtain("st.watchdog", [this] {
      Fail("the looper was not woken by a cross-thread post");
      looper_->Quit();
    });
    watchdog.what = kWatchdogWhat;
    handler_->SendMessageDelayed(std::move(watchdog), 2 * kNsPerSec);
    poster_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sample-selftest");
      SleepFor(kRemoteDelayNs);
      posted_ns_.store(NowNs());
      handler_->Post("st.remote", [this] { Phase4(); });
    });
  }

  // Phase 4: a Choreographer at 120 Hz draws 3 frames: the five phases run
  // in order in each, frame ids increase, vsyncs are whole intervals apart,
  // and the traversal's sync barrier is gone afterwards.
  void Phase4() {
    const uint64_t latency_ns = NowNs() - posted_ns_.load();
    if (latency_ns > kMaxWakeLatencyNs) {
      Fail("cross-thread wake took " + std::to_string(latency_ns) + " ns");
    }
    choreographer_ = std::make_unique<Choreographer>(looper_, 120);
    animator_ = std::make_unique<Animator>(
        choreographer_.get(), 3, [](uint64_t) { return Animator::LightWork(200 * kNsPerUs); },
        [this] { handler_->Post("st.frames.done", [this] { Phase5(); }); });
    animator_->SetCommitHook([this](uint64_t index, const FrameInfo& frame) {
      frames_.push_back(frame);
      if (frame.refresh_hz != 120 || frame.interval_ns != kNsPerSec / 120) {
        Fail("frame " + std::to_string(index) + " is not at 120 Hz");
      }
    });
    for (uint32_t phase = 0; phase < kPhaseCount; ++phase) {
      choreographer_->PostCallback(static_cast<FramePhase>(phase),
                                   [this, phase](const FrameInfo&) { phases_seen_.push_back(phase); });
    }
    animator_->Start();
  }

  // Phase 5: QuitSafely delivers due messages and drops future ones.
  void Phase5() {
    if (frames_.size() != 3) {
      Fail("drew " + std::to_string(frames_.size()) + " frames instead of 3");
    }
    for (size_t i = 1; i < frames_.size(); ++i) {
      const uint64_t gap = frames_[i].intended_vsync_ns - frames_[i - 1].intended_vsync_ns;
      const uint64_t exact = kNsPerSec / 120;
      if (frames_[i].frame_id <= frames_[i - 1].frame_id) Fail("frame ids do not increase");
      // Whole periods of 8333333.3 ns, within 1 ns of rounding.
      const uint64_t periods = (gap + exact / 2) / exact;
      if (periods == 0 || gap + 1 < periods * exact || gap > periods * (exact + 1)) {
        Fail("vsyncs " + std::to_string(gap) + " ns apart");
      }
    }
    if (phases_seen_ != std::vector<uint32_t>{0, 1, 2, 3, 4}) {
      Fail("frame phases did not run in order INPUT..COMMIT");
    }
    if (looper_->queue().Size() != 1) {  // only the 2 s watchdog is pending
      Fail("pending messages after the frames: " + std::to_string(looper_->queue().Size()));
    }
    animator_.reset();
    choreographer_.reset();
    Record(6);
    handler_->RemoveMessages(kWatchdogWhat);
    handler_->Post("st.last", [this] { Record(7); });
    handler_->PostDelayed(
        "st.future", [this] { Record(99); }, kNsPerSec);
    looper_->QuitSafely();
  }

  Looper* looper_ = nullptr;
  Handler* handler_ = nullptr;
  std::vector<int> order_;
  int idle_runs_ = 0;
  int idle_runs_at_barrier_ = 0;
  int failures_ = 0;
  std::atomic<uint64_t> posted_ns_{0};
  std::unique_ptr<Choreographer> choreographer_;
  std::unique_ptr<Animator> animator_;
  std::vector<FrameInfo> frames_;
  std::vector<uint32_t> phases_seen_;
  std::thread poster_;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(SelftestScenario, "selftest",
                          "checks queue ordering, sync barriers, async messages, IdleHandlers, "
                          "cross-thread wake, Choreographer frames, quitSafely, the hooks' nop5 "
                          "entries and .dynsym, the Signal Catcher and the method table; exit 1 on "
                          "failure",
                          1);

}  // namespace looptrace::sample
