// `storm`: a sustained message rate for soak tests (scripts/soak.sh). The main looper
// dispatches --rate short messages per second (default 100,000) for --count ms (default
// 10000), paced on CLOCK_MONOTONIC: message k is posted for start + k/rate s, so a
// looper that falls behind runs them back to back. Each message calls the instrumented
// MethodStorm::leaf() once (two method beats). Names cycle over storm.0 .. storm.7.
// Per-message truth would not fit in memory for long runs: the truth file gets one
// {"type":"message_count","messages":N} line (every message dispatched, any looper) and
// one {"type":"storm","messages":N,"method_calls":N,"rate":R,"duration_ns":N} line.

#include <cstdint>

#include "app_methods.h"
#include "looper.h"
#include "scenario.h"
#include "sys_util.h"
#include "truth.h"

namespace looptrace::sample {
namespace {

constexpr uint64_t kDefaultMessagesPerSec = 100'000;
constexpr const char* kNames[] = {"storm.0", "storm.1", "storm.2", "storm.3",
                                  "storm.4", "storm.5", "storm.6", "storm.7"};

class StormScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    TruthRecorder::Global().CountMessagesOnly();
    handler_ = ctx.main_handler;
    looper_ = ctx.main_looper;
    rate_ = ctx.rate.value_or(kDefaultMessagesPerSec);
    if (rate_ == 0) rate_ = kDefaultMessagesPerSec;
    start_ns_ = ctx.start_ns;
    total_ = static_cast<uint64_t>(static_cast<unsigned __int128>(ctx.count) * rate_ / 1000);
    if (total_ == 0) total_ = 1;
    PostNext();
  }

  int Finish() override {
    TruthRecorder::Global().RecordLine(JsonLine("storm")
                                           .U("messages", sent_)
                                           .U("method_calls", sent_)
                                           .U("rate", rate_)
                                           .U("duration_ns", last_ns_ - start_ns_)
                                           .Take());
    return 0;
  }

 private:
  void PostNext() {
    const uint64_t due = start_ns_ + static_cast<uint64_t>(static_cast<unsigned __int128>(sent_) * kNsPerSec / rate_);
    handler_->PostAtTime(
        kNames[sent_ % 8], [this] { Run(); }, due);
  }

  void Run() {
    ::sample::app::MethodStorm::leaf();
    Looper::AddMethodCalls(1);
    ++sent_;
    if (sent_ == total_) {
      last_ns_ = NowNs();
      looper_->QuitSafely();
    } else {
      PostNext();
    }
  }

  Handler* handler_ = nullptr;
  Looper* looper_ = nullptr;
  uint64_t rate_ = kDefaultMessagesPerSec;
  uint64_t start_ns_ = 0;
  uint64_t last_ns_ = 0;
  uint64_t total_ = 0;
  uint64_t sent_ = 0;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(StormScenario, "storm",
                          "--rate short messages/s (default 100000), each with two method beats, for --count ms "
                          "(default 10000); truth: message counts only",
                          10000);

}  // namespace looptrace::sample
