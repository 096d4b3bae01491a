// Runtime stall causes: what held a thread back during a span besides its own code. A
// runtime's garbage collections (gc spans, on any thread: HotSpot collects on its VM thread
// while every Java thread waits at a safepoint, CPython collects on the thread that
// allocates, holding the GIL) and the thread's waits for contended monitors (lock_wait spans),
// named with the thread that released the monitor (lock.release on another thread).
//
// The pipeline feeds every gc / lock_wait span end and lock.release event here before the
// tracers see them, so a tracer finishing a message can ask what happened inside it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/span_tracker.h"

namespace looptrace {

class StallCauses {
 public:
  // gc and lock_wait spans (others are ignored).
  // Inline checks: called for every span and probe event, and few are GC, lock waits or releases.
  void OnSpanEnd(const Span& span) {
    if (span.kind == SpanKind::kGc || span.kind == SpanKind::kLockWait) [[unlikely]]
      AddEnded(span);
  }
  // lock.release events (others are ignored).
  void OnProbe(const ProbeEvent& event) {
    if (event.role == Role::kLockRelease) [[unlikely]]
      AddRelease(event);
  }

  // The causes overlapping [begin_ns, end_ns] that held thread `tid` back: every GC of the
  // process and the thread's own monitor waits, in time order, clipped to the interval;
  // those still open in `spans` are included (open = true).
  std::vector<StallCause> Within(uint32_t tid, uint64_t begin_ns, uint64_t end_ns, const SpanTracker& spans) const;

 private:
  void AddEnded(const Span& span);
  void AddRelease(const ProbeEvent& event);
  struct Release {
    uint64_t ts_ns = 0;
    uint32_t tid = 0;
    std::string name;
  };
  StallCause FromSpan(const Span& span) const;

  std::deque<StallCause> closed_;                     // the most recent, in end order
  std::map<uint64_t, std::deque<Release>> releases_;  // by monitor, the most recent
};

}  // namespace looptrace
