// `two-loopers`: the main looper and a HandlerThread looper dispatch --count
// messages each, concurrently, so per-thread attribution can be checked.

#include <atomic>
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
constexpr uint64_t kMaxCostNs = 9 * kNsPerMs;  // < 10 ms despite wake-up latency
constexpr uint64_t kMaxGapNs = 2 * kNsPerMs;

struct Names {
  const char* spin;
  const char* sleep;
  const char* mixed;
};
constexpr Names kMainNames = {"main.spin", "main.sleep", "main.mixed"};
constexpr Names kWorkerNames = {"worker.spin", "worker.sleep", "worker.mixed"};

std::vector<ChainStep> Plan(uint64_t count, Prng rng, const Names& names) {
  std::vector<ChainStep> steps(count);
  for (uint64_t i = 0; i < count; ++i) {
    ChainStep& step = steps[i];
    step.cost_ns = rng.Uniform(kMinCostNs, kMaxCostNs);
    switch (rng.Next() % 3) {
      case 0:
        step.kind = WorkKind::kSpin;
        step.name = names.spin;
        break;
      case 1:
        step.kind = WorkKind::kSleep;
        step.name = names.sleep;
        break;
      default:
        step.kind = WorkKind::kMixed;
        step.name = names.mixed;
        break;
    }
    step.gap_ns = i == 0 ? 0 : rng.Uniform(0, kMaxGapNs);
  }
  return steps;
}

class TwoLoopersScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    worker_.Start();
    worker_handler_ = std::make_unique<Handler>(worker_.looper());
    Looper* main_looper = ctx.main_looper;
    auto on_done = [this, main_looper] {
      if (remaining_.fetch_sub(1) == 1) main_looper->Quit();
    };
    Prng rng(ctx.seed);
    main_chain_ = std::make_unique<MessageChain>(ctx.main_handler, Plan(ctx.count, rng.Fork(1), kMainNames), on_done);
    worker_chain_ =
        std::make_unique<MessageChain>(worker_handler_.get(), Plan(ctx.count, rng.Fork(2), kWorkerNames), on_done);
    main_chain_->Start(ctx.start_ns);
    worker_chain_->Start(ctx.start_ns);  // wakes the worker via its eventfd
  }

  int Finish() override {
    worker_.QuitSafely();
    worker_.Join();
    return 0;
  }

 private:
  // Declared first so that it (and the worker looper it owns) is destroyed
  // after the handler and the chain that use it.
  HandlerThread worker_{"sample-worker"};
  std::unique_ptr<Handler> worker_handler_;
  std::unique_ptr<MessageChain> main_chain_;
  std::unique_ptr<MessageChain> worker_chain_;
  std::atomic<int> remaining_{2};
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(TwoLoopersScenario, "two-loopers",
                          "main looper and a HandlerThread (sample-worker) each dispatch --count "
                          "messages (default 100) of 0.1-9 ms concurrently; ~0.6 s",
                          100);

}  // namespace looptrace::sample
