// `evil` and `evil-short`: Matrix's sample call pattern (testJankiess) inside
// one main-looper message, for the EvilMethod (slow message call tree)
// feature. A() calls B(), H() and L(), which call the rest (app_methods.h);
// each is an instrumented method with ids A=1 .. L=12. Around the slow message
// run --count ordinary short messages before and --count after, each calling
// the instrumented shortWork() (id 13, 3 ms of spinning). `evil` plans the
// slow message at 2236 ms; `evil-short` divides every sleep by 10 (223.6 ms,
// under a 700 ms threshold).

#include <cstdint>

#include "app_methods.h"
#include "looper.h"
#include "method_trace.h"
#include "scenario.h"
#include "sys_util.h"

namespace looptrace::sample {
namespace {

using Activity = ::sample::app::TestTraceMainActivity;

constexpr uint64_t kGapNs = 5 * kNsPerMs;

class EvilScenarioBase : public Scenario {
 public:
  explicit EvilScenarioBase(uint64_t sleep_divisor) : sleep_divisor_(sleep_divisor) {}

  void Start(const ScenarioContext& ctx) override {
    SetEvilSleepDivisor(sleep_divisor_);
    handler_ = ctx.main_handler;
    looper_ = ctx.main_looper;
    short_count_ = ctx.count;
    Schedule(0, ctx.start_ns);
  }

 private:
  // Steps 0..n-1: evil.before; step n: evil.jank; n+1..2n: evil.after.
  void Schedule(uint64_t index, uint64_t due_ns) {
    const char* name = index < short_count_ ? "evil.before" : index == short_count_ ? "evil.jank" : "evil.after";
    handler_->PostAtTime(
        name, [this, index] { Run(index); }, due_ns);
  }

  void Run(uint64_t index) {
    if (index == short_count_) {
      LOOPTRACE_SAMPLE_CALL(Activity::A);
    } else {
      LOOPTRACE_SAMPLE_CALL(Activity::shortWork);
    }
    if (index == 2 * short_count_) {
      looper_->Quit();
    } else {
      Schedule(index + 1, NowNs() + kGapNs);
    }
  }

  const uint64_t sleep_divisor_;
  Handler* handler_ = nullptr;
  Looper* looper_ = nullptr;
  uint64_t short_count_ = 0;
};

class EvilScenario : public EvilScenarioBase {
 public:
  EvilScenario() : EvilScenarioBase(1) {}
};

class EvilShortScenario : public EvilScenarioBase {
 public:
  EvilShortScenario() : EvilScenarioBase(10) {}
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(EvilScenario, "evil",
                          "Matrix's sample call tree A..L (method ids 1-12) in one ~2.24 s message, "
                          "--count (default 3) 3 ms messages before and after; ~2.3 s",
                          3);
LOOPTRACE_SAMPLE_SCENARIO(EvilShortScenario, "evil-short",
                          "evil with every sleep divided by 10: the A..L message takes ~224 ms; "
                          "~0.3 s",
                          3);

}  // namespace looptrace::sample
