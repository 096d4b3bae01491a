#include "message_chain.h"

#include <pthread.h>

#include <utility>

#include "looper.h"
#include "sys_util.h"

namespace looptrace::sample {

// ----------------------------------------------------------- RemotePoster

RemotePoster::RemotePoster(const char* thread_name) : thread_(&RemotePoster::Run, this, thread_name) {}

RemotePoster::~RemotePoster() { Stop(); }

void RemotePoster::PostAt(Handler* handler, const char* name, std::function<void()> callback, uint64_t when_ns) {
  {
    std::lock_guard lock(mu_);
    requests_.push_back({handler, name, std::move(callback), when_ns});
  }
  cv_.notify_one();
}

void RemotePoster::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void RemotePoster::Run(const char* thread_name) {
  pthread_setname_np(pthread_self(), thread_name);
  for (;;) {
    Request request;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !requests_.empty(); });
      if (requests_.empty()) return;  // stopping
      request = std::move(requests_.front());
      requests_.pop_front();
    }
    SleepUntil(request.when_ns);
    request.handler->Post(request.name, std::move(request.callback));
  }
}

// ----------------------------------------------------------- MessageChain

MessageChain::MessageChain(Handler* handler, std::vector<ChainStep> steps, std::function<void()> on_done,
                           RemotePoster* poster)
    : handler_(handler), steps_(std::move(steps)), on_done_(std::move(on_done)), poster_(poster) {}

void MessageChain::Start(uint64_t start_ns) { Schedule(0, start_ns); }

void MessageChain::Schedule(size_t index, uint64_t base_ns) {
  if (index >= steps_.size()) {
    if (on_done_) on_done_();
    return;
  }
  const ChainStep& step = steps_[index];
  const uint64_t due_ns = base_ns + step.gap_ns;
  auto run = [this, index] { Run(index); };
  StepRoute route = step.route;
  if (route == StepRoute::kRemote && poster_ == nullptr) route = StepRoute::kLocal;
  if (route == StepRoute::kAsyncPastBarrier && index + 1 >= steps_.size()) {
    route = StepRoute::kLocal;
  }
  switch (route) {
    case StepRoute::kLocal:
      handler_->PostAtTime(step.name, std::move(run), due_ns);
      break;
    case StepRoute::kRemote:
      poster_->PostAt(handler_, step.name, std::move(run), due_ns);
      break;
    case StepRoute::kAsyncPastBarrier: {
      barrier_token_ = handler_->looper()->queue().PostSyncBarrier();
      // The next (synchronous) step is due first but held by the barrier.
      handler_->PostAtTime(
          steps_[index + 1].name, [this, index] { Run(index + 1); }, due_ns);
      Message async = handler_->Obtain(step.name, std::move(run));
      async.asynchronous = true;
      handler_->SendMessageAtTime(std::move(async), due_ns + kBarrierHoldNs);
      break;
    }
  }
}

void MessageChain::Run(size_t index) {
  const ChainStep& step = steps_[index];
  const bool past_barrier = step.route == StepRoute::kAsyncPastBarrier && index + 1 < steps_.size();
  if (past_barrier) handler_->looper()->queue().RemoveSyncBarrier(barrier_token_);
  DoWork(step.kind, step.cost_ns);
  // After a barrier episode the next step is already queued.
  if (!past_barrier) Schedule(index + 1, NowNs());
}

}  // namespace looptrace::sample
