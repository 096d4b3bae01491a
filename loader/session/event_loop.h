// The one loop of a looptrace process: an epoll set whose ready file descriptors call their
// handlers on the loop's thread. A live session adds its rings and the target's pidfd; a
// background session also adds its control socket and its clients, and the metrics
// server's wake-ups. The caller drains the rings after every wait (Session::Drain), so
// nothing here runs a second loop.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

class EventLoop {
 public:
  using Handler = std::function<void(uint32_t events)>;

  static Result<std::unique_ptr<EventLoop>> Create();

  // Watches `fd` for `events` (EPOLLIN, EPOLLOUT, ...); the handler may add or remove any
  // fd, itself included.
  Result<void> Add(int fd, uint32_t events, Handler handler);
  Result<void> Modify(int fd, uint32_t events);
  void Remove(int fd);
  bool Watches(int fd) const { return handlers_.contains(fd); }

  // Waits up to `timeout_ms` for ready fds and runs their handlers; EINTR is not an error.
  Result<void> RunOnce(int timeout_ms);

 private:
  EventLoop() = default;
  struct Entry {
    uint32_t generation;
    std::shared_ptr<Handler> handler;
  };
  UniqueFd epoll_;
  std::map<int, Entry> handlers_;
  uint32_t generation_ = 0;
};

}  // namespace looptrace::loader
