#include "input.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "hooks.h"
#include "sys_util.h"
#include "truth.h"
#include "work.h"

namespace looptrace::sample {

InputChannel::InputChannel(Looper* looper, std::function<void(uint64_t)> handle)
    : looper_(looper), handler_(looper, /*async=*/true), handle_(std::move(handle)) {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) {
    std::fprintf(stderr, "looptrace-sample-app: eventfd: %s\n", std::strerror(errno));
    std::abort();
  }
  looper_->queue().AddFd(fd_, [this] { OnReadable(); });
}

InputChannel::~InputChannel() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (source_.joinable()) source_.join();
  looper_->queue().RemoveFd(fd_);
  close(fd_);
}

void InputChannel::Start(uint64_t first_ns, uint64_t period_ns, uint64_t count) {
  source_ = std::thread(&InputChannel::RunSource, this, first_ns, period_ns, count);
}

void InputChannel::RunSource(uint64_t first_ns, uint64_t period_ns, uint64_t count) {
  pthread_setname_np(pthread_self(), "sample-input");
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t when_ns = first_ns + k * period_ns;
    {
      // Sleeps until when_ns unless stopped.
      std::unique_lock lock(mu_);
      while (!stopping_ && NowNs() < when_ns) {
        lock.unlock();
        SleepUntil(std::min(when_ns, NowNs() + 10 * kNsPerMs));
        lock.lock();
      }
      if (stopping_) return;
      pending_.push_back({k + 1, when_ns});
    }
    const uint64_t one = 1;
    ssize_t written;
    do {
      written = write(fd_, &one, sizeof(one));
    } while (written < 0 && errno == EINTR);
  }
}

void InputChannel::OnReadable() {
  // NativeInputEventReceiver::handleEvent, on the looper thread in its poll.
  uint64_t counter;
  while (read(fd_, &counter, sizeof(counter)) == static_cast<ssize_t>(sizeof(counter))) {
  }
  std::deque<Event> events;
  {
    std::lock_guard lock(mu_);
    events.swap(pending_);
  }
  for (const Event& event : events) {
    const uint64_t receive_ns = NowNs();
    sample_input_receive(event.seq);
    const uint64_t receive_after_ns = NowNs();
    handler_.Post("ViewRootImpl#processInputEvent", [this, event, receive_ns, receive_after_ns] {
      handle_(event.seq);
      const uint64_t finish_ns = NowNs();
      sample_input_finish(event.seq);
      const uint64_t finish_after_ns = NowNs();
      ++finished_;
      TruthRecorder::Global().RecordLine(JsonLine("input")
                                             .I("tid", CurrentTid())
                                             .U("seq", event.seq)
                                             .U("msg_id", Looper::CurrentMessageId())
                                             .U("event_ns", event.event_ns)
                                             .U("receive_ns", receive_ns)
                                             .U("receive_after_ns", receive_after_ns)
                                             .U("finish_ns", finish_ns)
                                             .U("finish_after_ns", finish_after_ns)
                                             .Take());
    });
  }
}

}  // namespace looptrace::sample
