// Building blocks for scenarios: a chain of planned messages, each posted
// when the previous one finishes (plus an idle gap), and a helper thread that
// posts messages from outside the looper (the eventfd wake path).

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_MESSAGE_CHAIN_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_MESSAGE_CHAIN_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "work.h"

namespace looptrace::sample {

class Handler;

// Posts callbacks to handlers from its own (non-looper) thread, each at a
// given time, so the looper is woken through its eventfd.
class RemotePoster {
 public:
  explicit RemotePoster(const char* thread_name = "sample-poster");
  ~RemotePoster();  // Stop()
  RemotePoster(const RemotePoster&) = delete;
  RemotePoster& operator=(const RemotePoster&) = delete;

  // Thread-safe. The helper sleeps until when_ns, then handler->Post().
  void PostAt(Handler* handler, const char* name, std::function<void()> callback, uint64_t when_ns);
  // Posts what is still pending, then joins the thread.
  void Stop();

 private:
  struct Request {
    Handler* handler;
    const char* name;
    std::function<void()> callback;
    uint64_t when_ns;
  };
  void Run(const char* thread_name);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> requests_;
  bool stopping_ = false;
  std::thread thread_;
};

enum class StepRoute {
  kLocal,   // posted by the looper thread itself at the end of the previous step
  kRemote,  // posted by a RemotePoster at its due time (eventfd wake)
  // An asynchronous message past a sync barrier: the previous step posts a
  // barrier, then the next step (synchronous, due first) and this one
  // (asynchronous, due kBarrierHoldNs later). This step removes the barrier,
  // so the next step runs after it although it was due earlier.
  kAsyncPastBarrier,
};

struct ChainStep {
  const char* name = "";  // static storage
  WorkKind kind = WorkKind::kSpin;
  uint64_t cost_ns = 0;
  // Idle time between the end of the previous step and this step being due
  // (for step 0: after the chain's start time).
  uint64_t gap_ns = 0;
  StepRoute route = StepRoute::kLocal;
};

class MessageChain {
 public:
  static constexpr uint64_t kBarrierHoldNs = 1'000'000;

  // `on_done` runs on the handler's thread at the end of the last step.
  // `poster` is needed only for kRemote steps (without one they run local).
  MessageChain(Handler* handler, std::vector<ChainStep> steps, std::function<void()> on_done,
               RemotePoster* poster = nullptr);
  MessageChain(const MessageChain&) = delete;
  MessageChain& operator=(const MessageChain&) = delete;

  // Thread-safe. Step 0 becomes due at start_ns + steps[0].gap_ns. An empty
  // chain calls on_done right away (on the calling thread).
  void Start(uint64_t start_ns);

  const std::vector<ChainStep>& steps() const { return steps_; }

 private:
  void Schedule(size_t index, uint64_t base_ns);
  void Run(size_t index);

  Handler* const handler_;
  const std::vector<ChainStep> steps_;
  const std::function<void()> on_done_;
  RemotePoster* const poster_;
  int barrier_token_ = 0;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_MESSAGE_CHAIN_H_
