// Thread names for reports: the first time a thread of the target shows up in the event
// stream (a probe hit, a sample, a switch), its name is read from /proc while it lives and
// sent as a ThreadName event ahead of the event that brought it. Threads that come and go
// between two polls are named by what they did last; a reused tid keeps its first name.
// A monitor's release (the holder a lock wait names) gets the thread's whole name too.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "looptrace/tracers/event.h"

namespace looptrace::loader {

class ThreadNamer : public EventSink {
 public:
  // The name of thread `tid`, "" when it is gone.
  using Reader = std::function<std::string(uint32_t tid)>;
  // At most this many threads are named (a recording of 200,000 thread ids stays bounded).
  static constexpr size_t kMaxNamedThreads = 65536;

  ThreadNamer(EventSink& next, Reader read) : next_(next), read_(std::move(read)) {}
  // Reads /proc/TGID/task/TID/comm.
  static Reader ProcReader(pid_t tgid);

  void OnEvent(const Event& event) override;

 private:
  // `release` with its "thread" argument (the kernel's name BPF took) replaced by the
  // reader's longer name of that thread, or nothing when the reader has no longer one.
  std::optional<ProbeEvent> WholeHolderName(const ProbeEvent& release);

  // A name of the kernel's full 15 bytes may be cut: a runtime may give the whole one later
  // (a Java thread's, once the JVM has set it), so it is asked again, every kRetryNs of event
  // time, at most kMaxRetries times.
  static constexpr size_t kCommBytes = 15;
  static constexpr uint64_t kRetryNs = 500'000'000;
  static constexpr uint32_t kMaxRetries = 20;
  struct Retry {
    std::string name;
    uint64_t next_ns = 0;
    uint32_t left = kMaxRetries;
  };
  void RetryCutName(uint32_t tid, uint64_t now_ns);

  EventSink& next_;
  Reader read_;
  std::unordered_set<uint32_t> seen_;
  std::unordered_map<uint32_t, Retry> cut_names_;
};

}  // namespace looptrace::loader
