#include "message_queue.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>

#include "hooks.h"
#include "sys_util.h"
#include "truth.h"

namespace looptrace::sample {
namespace {

constexpr int kMaxEpollEvents = 8;

std::atomic<uint64_t> g_next_idle_id{1};
thread_local uint64_t t_current_idle_id = 0;

// epoll_pwait2 (Linux 5.11) waits with nanosecond precision; older kernels
// fall back to epoll_wait with the timeout rounded up to milliseconds.
std::atomic<bool> g_have_epoll_pwait2{true};

[[noreturn]] void DieErrno(const char* what) {
  std::fprintf(stderr, "looptrace-sample-app: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

int64_t TimeoutMs(int64_t timeout_ns) {
  if (timeout_ns < 0) return -1;
  return (timeout_ns + static_cast<int64_t>(kNsPerMs) - 1) / static_cast<int64_t>(kNsPerMs);
}

}  // namespace

MessageQueue::MessageQueue() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) DieErrno("eventfd");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) DieErrno("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    DieErrno("epoll_ctl");
  }
}

MessageQueue::~MessageQueue() {
  close(epoll_fd_);
  close(wake_fd_);
}

bool MessageQueue::Enqueue(Message msg, uint64_t when_ns) {
  bool need_wake = false;
  {
    std::lock_guard lock(mu_);
    if (quitting_) return false;
    msg.when_ns = when_ns;
    // Under the lock: the hook precedes the message's dispatch in any case.
    sample_message_enqueue(when_ns, msg.asynchronous ? 1 : 0);
    const auto it = messages_.emplace(Key{when_ns, next_seq_++}, std::move(msg)).first;
    if (it == messages_.begin()) {
      // New head: the poll timeout is now wrong if the looper is blocked.
      need_wake = blocked_;
    } else if (blocked_ && messages_.begin()->second.IsBarrier() && it->second.asynchronous) {
      // Behind a barrier only asynchronous messages count: wake if this is
      // the earliest one.
      need_wake =
          std::none_of(std::next(messages_.begin()), it, [](const auto& entry) { return entry.second.asynchronous; });
    }
  }
  if (need_wake) Wake();
  return true;
}

MessageQueue::MessageMap::iterator MessageQueue::NextDeliverableLocked() {
  auto it = messages_.begin();
  if (it != messages_.end() && it->second.IsBarrier()) {
    it = std::find_if(std::next(it), messages_.end(),
                      [](const auto& entry) { return entry.second.asynchronous && !entry.second.IsBarrier(); });
  }
  return it;
}

std::optional<Message> MessageQueue::Next() {
  // Same structure as android.os.MessageQueue.next(): the first poll never
  // blocks, IdleHandlers run at most once per call, and after they ran the
  // queue is checked again without blocking.
  int pending_idle_count = -1;
  int64_t next_poll_timeout_ns = 0;
  std::vector<std::pair<uint64_t, IdleHandler>> pending_idle;
  for (;;) {
    PollOnce(next_poll_timeout_ns);
    {
      std::lock_guard lock(mu_);
      const uint64_t now = NowNs();
      const auto it = NextDeliverableLocked();
      if (it != messages_.end()) {
        if (now < it->first.when_ns) {
          next_poll_timeout_ns = static_cast<int64_t>(it->first.when_ns - now);
        } else {
          blocked_ = false;
          Message msg = std::move(it->second);
          messages_.erase(it);
          return msg;
        }
      } else {
        next_poll_timeout_ns = -1;
      }
      if (quitting_) return std::nullopt;

      // Idle handlers run only when the queue is empty or its head (possibly
      // a barrier, as in Android) is in the future.
      if (pending_idle_count < 0 && (messages_.empty() || now < messages_.begin()->first.when_ns)) {
        pending_idle = idle_handlers_;
        pending_idle_count = static_cast<int>(pending_idle.size());
      }
      if (pending_idle_count <= 0) {
        blocked_ = true;
        continue;
      }
    }

    const pid_t tid = CurrentTid();
    for (auto& [registration, handler] : pending_idle) {
      const uint64_t idle_id = g_next_idle_id.fetch_add(1);
      const char* name = handler.name != nullptr ? handler.name : "";
      t_current_idle_id = idle_id;
      const uint64_t begin_ns = NowNs();
      sample_looper_idle_begin(idle_id, name);
      const bool keep = handler.queue_idle ? handler.queue_idle() : false;
      const uint64_t end_ns = NowNs();
      sample_looper_idle_end(idle_id);
      t_current_idle_id = 0;
      TruthRecorder::Global().RecordIdle(tid, idle_id, name, begin_ns, end_ns);
      if (!keep) RemoveIdleHandler(registration);
    }
    pending_idle.clear();
    pending_idle_count = 0;
    // An idle handler may have posted a message: look again without waiting.
    next_poll_timeout_ns = 0;
  }
}

void MessageQueue::PollOnce(int64_t timeout_ns) {
  epoll_event events[kMaxEpollEvents];
  sample_looper_poll_begin(TimeoutMs(timeout_ns));
  int n;
  if (timeout_ns < 0) {
    n = epoll_wait(epoll_fd_, events, kMaxEpollEvents, -1);
  } else if (g_have_epoll_pwait2.load(std::memory_order_relaxed)) {
    const timespec timeout = ToTimespec(static_cast<uint64_t>(timeout_ns));
    n = epoll_pwait2(epoll_fd_, events, kMaxEpollEvents, &timeout, nullptr);
    if (n < 0 && errno == ENOSYS) {
      g_have_epoll_pwait2.store(false, std::memory_order_relaxed);
      n = epoll_wait(epoll_fd_, events, kMaxEpollEvents, static_cast<int>(TimeoutMs(timeout_ns)));
    }
  } else {
    n = epoll_wait(epoll_fd_, events, kMaxEpollEvents, static_cast<int>(TimeoutMs(timeout_ns)));
  }
  sample_looper_poll_end();
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == wake_fd_) {
      uint64_t counter;
      while (read(wake_fd_, &counter, sizeof(counter)) == static_cast<ssize_t>(sizeof(counter))) {
      }
      continue;
    }
    std::shared_ptr<std::function<void()>> callback;
    {
      std::lock_guard lock(mu_);
      const auto it = fd_callbacks_.find(fd);
      if (it != fd_callbacks_.end()) callback = it->second;
    }
    if (callback) (*callback)();
  }
  // n < 0 (EINTR): Next() recomputes the timeout and polls again.
}

void MessageQueue::Wake() {
  const uint64_t one = 1;
  ssize_t written;
  do {
    written = write(wake_fd_, &one, sizeof(one));
  } while (written < 0 && errno == EINTR);
  // EAGAIN means the counter is saturated: the looper is awake anyway.
}

int MessageQueue::PostSyncBarrier() { return PostSyncBarrierAt(NowNs()); }

int MessageQueue::PostSyncBarrierAt(uint64_t when_ns) {
  // Like Android: no wake, a barrier only ever delays delivery.
  std::lock_guard lock(mu_);
  const int token = next_barrier_token_++;
  const uint64_t post_ns = NowNs();
  sample_barrier_post(static_cast<uint64_t>(token));
  barrier_posts_[token] = {CurrentTid(), post_ns, NowNs()};
  Message barrier;
  barrier.name = "barrier";
  barrier.arg1 = token;
  barrier.when_ns = when_ns;
  messages_.emplace(Key{when_ns, next_seq_++}, std::move(barrier));
  return token;
}

bool MessageQueue::RemoveSyncBarrier(int token) {
  bool need_wake = false;
  {
    std::lock_guard lock(mu_);
    const auto it = std::find_if(messages_.begin(), messages_.end(),
                                 [&](const auto& e) { return e.second.IsBarrier() && e.second.arg1 == token; });
    if (it == messages_.end()) return false;
    const uint64_t remove_ns = NowNs();
    sample_barrier_remove(static_cast<uint64_t>(token));
    const uint64_t remove_after_ns = NowNs();
    const BarrierPost post = barrier_posts_[token];
    barrier_posts_.erase(token);
    TruthRecorder::Global().RecordLine(JsonLine("barrier")
                                           .U("token", static_cast<uint64_t>(token))
                                           .I("post_tid", post.tid)
                                           .U("post_ns", post.post_ns)
                                           .U("post_after_ns", post.post_after_ns)
                                           .I("remove_tid", CurrentTid())
                                           .U("remove_ns", remove_ns)
                                           .U("remove_after_ns", remove_after_ns)
                                           .Take());
    const bool was_head = it == messages_.begin();
    messages_.erase(it);
    if (was_head) {
      // Synchronous messages held back by the barrier may be due now.
      need_wake = !quitting_ && (messages_.empty() || !messages_.begin()->second.IsBarrier());
    }
  }
  if (need_wake) Wake();
  return true;
}

void MessageQueue::AddFd(int fd, std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    fd_callbacks_[fd] = std::make_shared<std::function<void()>>(std::move(callback));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) DieErrno("epoll_ctl");
}

void MessageQueue::RemoveFd(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  std::lock_guard lock(mu_);
  fd_callbacks_.erase(fd);
}

uint64_t MessageQueue::CurrentIdleId() { return t_current_idle_id; }

uint64_t MessageQueue::AddIdleHandler(IdleHandler handler) {
  std::lock_guard lock(mu_);
  const uint64_t registration = next_idle_registration_++;
  idle_handlers_.emplace_back(registration, std::move(handler));
  return registration;
}

bool MessageQueue::RemoveIdleHandler(uint64_t registration) {
  std::lock_guard lock(mu_);
  return std::erase_if(idle_handlers_, [&](const auto& entry) { return entry.first == registration; }) > 0;
}

void MessageQueue::RemoveMessages(const Handler* target, int32_t what) {
  std::lock_guard lock(mu_);
  std::erase_if(messages_, [&](const auto& entry) {
    return entry.second.target == target && entry.second.what == what && !entry.second.IsBarrier();
  });
}

void MessageQueue::RemoveAllMessages(const Handler* target) {
  std::lock_guard lock(mu_);
  std::erase_if(messages_,
                [&](const auto& entry) { return entry.second.target == target && !entry.second.IsBarrier(); });
}

bool MessageQueue::HasMessages(const Handler* target, int32_t what) const {
  std::lock_guard lock(mu_);
  return std::any_of(messages_.begin(), messages_.end(), [&](const auto& e) {
    return e.second.target == target && e.second.what == what && !e.second.IsBarrier();
  });
}

bool MessageQueue::IsIdle() const {
  std::lock_guard lock(mu_);
  return messages_.empty() || NowNs() < messages_.begin()->first.when_ns;
}

size_t MessageQueue::Size() const {
  std::lock_guard lock(mu_);
  return messages_.size();
}

void MessageQueue::Quit(bool safe) {
  {
    std::lock_guard lock(mu_);
    if (quitting_) return;
    quitting_ = true;
    if (safe) {
      const uint64_t now = NowNs();
      std::erase_if(messages_, [&](const auto& entry) { return entry.first.when_ns > now; });
    } else {
      messages_.clear();
    }
  }
  Wake();
}

}  // namespace looptrace::sample
