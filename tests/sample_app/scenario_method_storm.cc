// `method-storm`: sustained high-rate method beats, for benchmarking method
// instrumentation. The main looper dispatches back-to-back messages of 100 ms
// ("storm.beats") for --count ms in total. Each calls the tiny instrumented
// MethodStorm::leaf() (id 14; one enter and one exit beat per call) in tight
// loops, paced on CLOCK_MONOTONIC to --rate beats per second (default
// 1,000,000, i.e. 500,000 calls/s; 0 = as fast as possible). A message lasts
// 100 ms whatever the achieved rate; its truth record counts the calls made
// in it ("method_calls"). No per-call truth.

#include <algorithm>
#include <cstdint>

#include "app_methods.h"
#include "looper.h"
#include "scenario.h"
#include "sys_util.h"

namespace looptrace::sample {
namespace {

constexpr uint64_t kMessageNs = 100 * kNsPerMs;
constexpr uint64_t kDefaultBeatsPerSec = 1'000'000;
constexpr uint64_t kBatch = 64;  // calls between clock reads

// Calls leaf() until duration_ns has passed, at beats_per_sec (two beats per
// call) or as fast as possible for 0. Returns the number of calls.
__attribute__((noinline)) uint64_t StormFor(uint64_t duration_ns, uint64_t beats_per_sec) {
  const uint64_t start_ns = NowNs();
  const uint64_t end_ns = start_ns + duration_ns;
  uint64_t calls = 0;
  for (;;) {
    const uint64_t now_ns = NowNs();
    if (now_ns >= end_ns) break;
    uint64_t batch = kBatch;
    if (beats_per_sec != 0) {
      // Call k (k = 0, 1, ...) is due at k * 2e9 / beats_per_sec ns.
      const uint64_t due =
          static_cast<uint64_t>(static_cast<unsigned __int128>(now_ns - start_ns) * beats_per_sec / (2 * kNsPerSec)) +
          1;
      if (due <= calls) {
        __builtin_ia32_pause();
        continue;
      }
      batch = std::min(due - calls, kBatch);
    }
    for (uint64_t i = 0; i < batch; ++i) ::sample::app::MethodStorm::leaf();
    calls += batch;
  }
  return calls;
}

class MethodStormScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    handler_ = ctx.main_handler;
    looper_ = ctx.main_looper;
    remaining_ns_ = ctx.count * kNsPerMs;
    beats_per_sec_ = ctx.rate.value_or(kDefaultBeatsPerSec);
    handler_->PostAtTime(
        "storm.beats", [this] { Run(); }, ctx.start_ns);
  }

 private:
  void Run() {
    const uint64_t duration_ns = std::min(remaining_ns_, kMessageNs);
    remaining_ns_ -= duration_ns;
    Looper::AddMethodCalls(StormFor(duration_ns, beats_per_sec_));
    if (remaining_ns_ == 0) {
      looper_->Quit();
    } else {
      handler_->Post("storm.beats", [this] { Run(); });
    }
  }

  Handler* handler_ = nullptr;
  Looper* looper_ = nullptr;
  uint64_t remaining_ns_ = 0;
  uint64_t beats_per_sec_ = kDefaultBeatsPerSec;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(MethodStormScenario, "method-storm",
                          "back-to-back 100 ms messages calling an instrumented leaf method at --rate "
                          "beats/s (default 1000000) for --count ms (default 30000)",
                          30000);

}  // namespace looptrace::sample
