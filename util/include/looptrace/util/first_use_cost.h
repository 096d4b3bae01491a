// CPU time spent on work done once for each file a process first meets: reading a module's
// symbols or DWARF, compiling its unwind rows. A session pays it once, like its start, and
// sampling less does not shed it, so --cpu-budget and the running cost leave it out.
#pragma once

#include <cstdint>
#include <functional>

namespace looptrace {

// Counts the calling thread's CPU time from construction to destruction; a scope inside
// another (a module's unwind rows compiled while its symbols load) is counted once.
class FirstUseScope {
 public:
  FirstUseScope();
  ~FirstUseScope();
  FirstUseScope(const FirstUseScope&) = delete;
  FirstUseScope& operator=(const FirstUseScope&) = delete;

  // Every thread's CPU time inside outermost scopes since the process started.
  static uint64_t TotalNs();
  // One observer at a time: told the current state at once, then `true` when a first scope
  // opens on any thread and `false` when the last one closes (the loader is slow to answer
  // meanwhile); an empty function stops the calls.
  static void SetBusyObserver(std::function<void(bool busy)> observer);

 private:
  uint64_t start_ns_ = 0;
  bool outermost_ = false;
};

}  // namespace looptrace
