// The display's vsync signal for the sample app: a thread ("sample-vsync")
// that ticks on an exact grid of 1e9/HZ ns periods and, when the app asked
// for the next vsync (DisplayEventReceiver.scheduleVsync, one-shot), delivers
// that tick through an eventfd which the main looper polls, as Android's
// display event socket.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_VSYNC_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_VSYNC_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

namespace looptrace::sample {

class VsyncSource {
 public:
  struct Event {
    uint64_t vsync_ns;     // the tick (CLOCK_MONOTONIC ns)
    uint64_t interval_ns;  // floor(1e9 / refresh_hz), as Android's frame interval
    uint32_t refresh_hz;
  };

  // Tick k of the grid is at base + floor(k * 1e9 / refresh_hz), with base
  // the time of construction: no drift over any number of periods.
  explicit VsyncSource(uint32_t refresh_hz);
  ~VsyncSource();  // Stop()
  VsyncSource(const VsyncSource&) = delete;
  VsyncSource& operator=(const VsyncSource&) = delete;

  void Start();
  void Stop();

  // Readable while an event is pending.
  int fd() const { return fd_; }

  // Thread-safe. The first tick strictly after now (or after the request is
  // seen) is delivered. Requests made before it coalesce.
  void RequestVsync();
  // Thread-safe. From the next tick of the current grid on, the grid has the
  // new period (the switch happens on a vsync boundary).
  void SetRefreshRate(uint32_t refresh_hz);
  uint32_t refresh_hz() const;

  // Drains the fd and returns the pending event, if any.
  std::optional<Event> TakeEvent();

 private:
  void Run();
  uint64_t TickLocked(uint64_t k) const;
  // First tick strictly after t.
  uint64_t TickAfterLocked(uint64_t t) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t base_ns_;
  uint32_t hz_;
  bool requested_ = false;
  bool stopping_ = false;
  std::optional<Event> pending_;
  int fd_ = -1;
  std::thread thread_;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_VSYNC_H_
