// `messages`: a few hundred main-thread messages of varied cost (0.1-45 ms of
// spinning, sleeping or both) with idle gaps, some posted from another thread,
// a few asynchronous messages passing a sync barrier, and an IdleHandler.

#include <cstdint>
#include <memory>
#include <vector>

#include "looper.h"
#include "message_chain.h"
#include "prng.h"
#include "scenario.h"
#include "sys_util.h"
#include "work.h"

namespace looptrace::sample {
namespace {

constexpr uint64_t kMinCostNs = 100 * kNsPerUs;
// Planned costs stop at 45 ms so that measured costs stay under 50 ms despite
// wake-up latency and preemption on a busy machine.
constexpr uint64_t kMaxCostNs = 45 * kNsPerMs;
constexpr uint64_t kMaxGapNs = 5 * kNsPerMs;
constexpr uint64_t kRemotePercent = 8;
constexpr uint64_t kBarrierEvery = 50;  // one barrier episode per 50 messages
constexpr uint64_t kBarrierPhase = 20;
constexpr int kIdleGcRuns = 5;

const char* NameFor(WorkKind kind) {
  switch (kind) {
    case WorkKind::kSpin:
      return "msg.spin";
    case WorkKind::kSleep:
      return "msg.sleep";
    case WorkKind::kMixed:
      return "msg.mixed";
  }
  return "msg";
}

std::vector<ChainStep> PlanMessages(uint64_t count, uint64_t seed) {
  Prng rng(seed);
  std::vector<ChainStep> steps(count);
  bool any_remote = false;
  for (uint64_t i = 0; i < count; ++i) {
    ChainStep& step = steps[i];
    const uint64_t tier = rng.Next() % 100;
    if (tier < 60) {
      step.cost_ns = rng.Uniform(kMinCostNs, 5 * kNsPerMs);
    } else if (tier < 90) {
      step.cost_ns = rng.Uniform(5 * kNsPerMs, 20 * kNsPerMs);
    } else {
      step.cost_ns = rng.Uniform(20 * kNsPerMs, kMaxCostNs);
    }
    const uint64_t kind = rng.Next() % 10;
    step.kind = kind < 4 ? WorkKind::kSpin : kind < 7 ? WorkKind::kSleep : WorkKind::kMixed;
    step.name = NameFor(step.kind);
    step.gap_ns = rng.Uniform(0, kMaxGapNs);
    if (i > 0 && rng.Percent(kRemotePercent)) {
      step.route = StepRoute::kRemote;
      step.name = "msg.remote";
      any_remote = true;
    }
  }
  if (count > 0) steps[0].gap_ns = 0;
  if (!any_remote && count >= 2) {
    steps[1].route = StepRoute::kRemote;
    steps[1].name = "msg.remote";
  }
  for (uint64_t i = kBarrierPhase; i + 1 < count; i += kBarrierEvery) {
    steps[i].name = "msg.async";
    steps[i].kind = WorkKind::kSpin;
    steps[i].cost_ns = kMinCostNs + steps[i].cost_ns % (900 * kNsPerUs);
    steps[i].route = StepRoute::kAsyncPastBarrier;
    if (steps[i + 1].route == StepRoute::kRemote) {
      steps[i + 1].route = StepRoute::kLocal;
      steps[i + 1].name = NameFor(steps[i + 1].kind);
    }
  }
  return steps;
}

class MessagesScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    Looper* looper = ctx.main_looper;
    looper->queue().AddIdleHandler({"idle.gc", [this] {
                                      SpinFor(200 * kNsPerUs);
                                      return ++idle_gc_runs_ < kIdleGcRuns;
                                    }});
    chain_ = std::make_unique<MessageChain>(
        ctx.main_handler, PlanMessages(ctx.count, ctx.seed), [looper] { looper->Quit(); }, &poster_);
    chain_->Start(ctx.start_ns);
  }

  int Finish() override {
    poster_.Stop();
    return 0;
  }

 private:
  RemotePoster poster_;
  std::unique_ptr<MessageChain> chain_;
  int idle_gc_runs_ = 0;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(MessagesScenario, "messages",
                          "--count main-thread messages (default 300) of 0.1-45 ms (spin/sleep/mixed), "
                          "0-5 ms idle gaps, some posted from another thread, sync barrier + async "
                          "messages, an IdleHandler; ~3-4 s",
                          300);

}  // namespace looptrace::sample
