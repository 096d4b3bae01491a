// ANR, LAG and signal ANR (Matrix's LooperAnrTracer and SignalAnrTracer), from outside:
// snapshots come from the live watchdog while the message still runs (Watches() says at
// which thresholds); this tracer joins them with the message's end, its off-CPU intervals
// and the open method slice.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/compact_queue.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/thread_state.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// Its thresholds are CommonOptions' anr_threshold_ns and lag_threshold_ns (the live state
// follows them too).
struct AnrOptions : TracerOptions {
  size_t max_intervals = 20;  // longest off-CPU intervals kept per report
  CallTreeOptions tree;
  void Declare(OptionSet& options) override;
};

class AnrTracer : public CopyableTracer<AnrTracer> {
 public:
  AnrTracer(const AnrOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override { return SpanBit(SpanKind::kMessage); }
  uint32_t event_types() const override {
    return EventBit<ThreadSwitch>() | EventBit<Wakeup>() | EventBit<StallSnapshot>() | EventBit<SignalSent>() |
           EventBit<MethodBeats>();
  }

  void OnEvent(const Event& event) override;
  // The checks inline, the work out of line: called for every message, with a stall
  // pending or off-CPU history held for few.
  void OnSpanEnd(const Span& span) override {
    if (span.kind != SpanKind::kMessage) return;
    if (!pending_.empty()) EndStalls(span);
    if (!intervals_.empty()) TrimIntervals(span);
  }
  std::vector<WatchThreshold> Watches() const override;
  void Contribute(Report& report) override;

 private:
  struct PendingStall {
    StallReport report;
    std::optional<MethodBeats> open_beats;
    std::string open_cause;  // "gc" / "monitor" running when the snapshot was taken
  };
  void OnSwitch(const ThreadSwitch& event);
  void OnSnapshot(const StallSnapshot& snapshot);
  void OnSignal(const SignalSent& signal);
  void OnOpenBeats(const MethodBeats& beats);
  void Finalize(PendingStall pending, uint64_t end_ns, bool finished);
  bool MessageOpen(uint32_t tid) const;
  void EndStalls(const Span& message);
  void TrimIntervals(const Span& message);

  const AnrOptions& options_;
  // (tid, message begin, anr level) -> stall waiting for its message to end
  std::map<std::tuple<uint32_t, uint64_t, bool>, PendingStall> pending_;
  std::map<uint32_t, CompactQueue<OffCpuInterval>> intervals_;  // recent, per tid (none: no entry)
  std::map<uint32_t, OffCpuInterval> off_now_;                  // open interval per tid
  std::map<uint32_t, Wakeup> last_wakeup_;
  std::vector<StallReport> stalls_;
  std::vector<SignalAnrReport> signals_;
};

}  // namespace looptrace
