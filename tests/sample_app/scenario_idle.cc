// `idle`: the main looper only waits in its poll for --count milliseconds and
// dispatches nothing; another thread quits it (an eventfd wake).

#include <pthread.h>

#include <cstdint>
#include <thread>

#include "looper.h"
#include "scenario.h"
#include "sys_util.h"
#include "work.h"

namespace looptrace::sample {
namespace {

class IdleScenario : public Scenario {
 public:
  void Start(const ScenarioContext& ctx) override {
    Looper* looper = ctx.main_looper;
    const uint64_t quit_ns = ctx.start_ns + ctx.count * kNsPerMs;
    timer_ = std::thread([looper, quit_ns] {
      pthread_setname_np(pthread_self(), "sample-timer");
      SleepUntil(quit_ns);
      looper->Quit();
    });
  }

  int Finish() override {
    if (timer_.joinable()) timer_.join();
    return 0;
  }

 private:
  std::thread timer_;
};

}  // namespace

LOOPTRACE_SAMPLE_SCENARIO(IdleScenario, "idle",
                          "the main looper stays blocked in its epoll wait for --count ms (default "
                          "2000) and dispatches no message",
                          2000);

}  // namespace looptrace::sample
