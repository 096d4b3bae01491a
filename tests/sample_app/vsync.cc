#include "vsync.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sys_util.h"
#include "work.h"

namespace looptrace::sample {

VsyncSource::VsyncSource(uint32_t refresh_hz) : base_ns_(NowNs()), hz_(refresh_hz == 0 ? 60 : refresh_hz) {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) {
    std::fprintf(stderr, "looptrace-sample-app: eventfd: %s\n", std::strerror(errno));
    std::abort();
  }
}

VsyncSource::~VsyncSource() {
  Stop();
  close(fd_);
}

void VsyncSource::Start() { thread_ = std::thread(&VsyncSource::Run, this); }

void VsyncSource::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t VsyncSource::TickLocked(uint64_t k) const {
  return base_ns_ + static_cast<uint64_t>(static_cast<unsigned __int128>(k) * kNsPerSec / hz_);
}

uint64_t VsyncSource::TickAfterLocked(uint64_t t) const {
  if (t < base_ns_) return base_ns_;
  uint64_t k = static_cast<uint64_t>(static_cast<unsigned __int128>(t - base_ns_) * hz_ / kNsPerSec);
  while (TickLocked(k) <= t) ++k;
  while (k > 0 && TickLocked(k - 1) > t) --k;
  return TickLocked(k);
}

void VsyncSource::RequestVsync() {
  {
    std::lock_guard lock(mu_);
    if (requested_) return;
    requested_ = true;
  }
  cv_.notify_all();
}

void VsyncSource::SetRefreshRate(uint32_t refresh_hz) {
  if (refresh_hz == 0) return;
  std::lock_guard lock(mu_);
  base_ns_ = TickAfterLocked(NowNs());
  hz_ = refresh_hz;
}

uint32_t VsyncSource::refresh_hz() const {
  std::lock_guard lock(mu_);
  return hz_;
}

std::optional<VsyncSource::Event> VsyncSource::TakeEvent() {
  uint64_t counter;
  while (read(fd_, &counter, sizeof(counter)) == static_cast<ssize_t>(sizeof(counter))) {
  }
  std::lock_guard lock(mu_);
  std::optional<Event> event = pending_;
  pending_.reset();
  return event;
}

void VsyncSource::Run() {
  pthread_setname_np(pthread_self(), "sample-vsync");
  for (;;) {
    uint64_t tick;
    uint32_t tick_hz;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || requested_; });
      if (stopping_) return;
      tick = TickAfterLocked(NowNs());
      tick_hz = hz_;
    }
    SleepUntil(tick);
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      requested_ = false;
      // The grid may have switched while sleeping. Its new base is the old grid's first tick
      // after the switch: this tick when the switch came before it, a later one when the
      // switch came between the wake-up and this lock (then this tick is still at the old
      // rate, and labelling it with the new one would make the truth wrong).
      const uint32_t hz = tick >= base_ns_ ? hz_ : tick_hz;
      pending_ = Event{tick, kNsPerSec / hz, hz};
    }
    const uint64_t one = 1;
    ssize_t written;
    do {
      written = write(fd_, &one, sizeof(one));
    } while (written < 0 && errno == EINTR);
  }
}

}  // namespace looptrace::sample
