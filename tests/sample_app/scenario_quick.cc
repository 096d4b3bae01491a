// `quick`: --count messages of ~1 ms busy work with 1 ms gaps, for fast tests.

#include <cstdint>
#include <memory>
#include <vector>

#include "looper.h"
#include "message_chain.h"
#include "scenario.h"
#include "sys_util.h"
#include "work.h"

namespace looptrace::sample {
namespace {

class QuickScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    std::vector<ChainStep> steps(ctx.count);
    for (size_t i = 0; i < steps.size(); ++i) {
      steps[i] = {"msg.quick", WorkKind::kSpin, kNsPerMs, i == 0 ? 0 : kNsPerMs, StepRoute::kLocal};
    }
    Looper* looper = ctx.main_looper;
    chain_ = std::make_unique<MessageChain>(ctx.main_handler, std::move(steps), [looper] { looper->Quit(); });
    chain_->Start(ctx.start_ns);
  }

 private:
  std::unique_ptr<MessageChain> chain_;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(QuickScenario, "quick",
                          "--count messages (default 20) of 1 ms busy work with 1 ms gaps; ~40 ms", 20);

}  // namespace looptrace::sample
