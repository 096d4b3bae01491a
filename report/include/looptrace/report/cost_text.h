// What looptrace itself cost over a session, in plain numbers (issue 32): the cost counters
// of stats.h (StatSeverity::kCost) as the text report's "looptrace cost" block.
#pragma once

#include <cstdint>
#include <string>

#include "looptrace/report/stats.h"

namespace looptrace {

// The cost of a session in CPU time, by part (each as the text block explains it).
struct CostBreakdown {
  uint64_t loader_ns = 0;        // the loader's own process
  uint64_t loader_start_ns = 0;  // the part of loader_ns spent starting (paid once a session)
  // The part of loader_ns after the start spent on files first met (symbols, unwind rows):
  // paid once a file, not shed by sampling less.
  uint64_t loader_first_use_ns = 0;
  uint64_t probes_ns = 0;     // probe hits: hits x the measured cost of one, + their BPF time
  uint64_t scheduler_ns = 0;  // the scheduler, signal, exec and sampler programs, every CPU
  uint64_t total_ns() const { return loader_ns + probes_ns + scheduler_ns; }
  uint64_t once_ns() const { return loader_start_ns + loader_first_use_ns; }
  // What the session costs as it runs, the figure a budget is about: all but what is paid once.
  uint64_t running_ns() const { return total_ns() - once_ns(); }
};
CostBreakdown CostOf(const Stats& stats);

// The block, lines ending in '\n'; "" when the stats hold no cost figures (a recording made
// before they existed, or replayed events of a test).
std::string CostText(const Stats& stats, uint64_t session_ns);

}  // namespace looptrace
