#include "loader/session/event_loop.h"

#include <cerrno>

namespace looptrace::loader {

Result<std::unique_ptr<EventLoop>> EventLoop::Create() {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  loop->epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  if (!loop->epoll_) return SystemError("epoll_create1", errno);
  return loop;
}

Result<void> EventLoop::Add(int fd, uint32_t events, Handler handler) {
  // The generation tells a stale event (its fd removed and reused by a later Add in the
  // same batch) from a current one.
  const uint32_t generation = ++generation_;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = (static_cast<uint64_t>(generation) << 32) | static_cast<uint32_t>(fd);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return SystemError("epoll_ctl", errno);
  handlers_[fd] = Entry{generation, std::make_shared<Handler>(std::move(handler))};
  return {};
}

Result<void> EventLoop::Modify(int fd, uint32_t events) {
  auto it = handlers_.find(fd);
  if (it == handlers_.end()) return MakeError("epoll_ctl: fd not watched");
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = (static_cast<uint64_t>(it->second.generation) << 32) | static_cast<uint32_t>(fd);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) return SystemError("epoll_ctl", errno);
  return {};
}

void EventLoop::Remove(int fd) {
  if (handlers_.erase(fd)) epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

Result<void> EventLoop::RunOnce(int timeout_ms) {
  epoll_event events[16];
  int n = epoll_wait(epoll_.get(), events, 16, timeout_ms);
  if (n < 0) {
    if (errno == EINTR) return {};
    return SystemError("epoll_wait", errno);
  }
  for (int i = 0; i < n; ++i) {
    const int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
    const uint32_t generation = static_cast<uint32_t>(events[i].data.u64 >> 32);
    auto it = handlers_.find(fd);
    if (it == handlers_.end() || it->second.generation != generation) continue;
    std::shared_ptr<Handler> handler = it->second.handler;  // survives its own Remove
    (*handler)(events[i].events);
  }
  return {};
}

}  // namespace looptrace::loader
