// The Tracer interface: every analysis consumes the same event and span stream and adds its
// part to the report through one verb, Contribute. Tracers are made by the registry
// (registry.h); the pipeline (pipeline.h) feeds them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/options.h"
#include "looptrace/tracers/span_tracker.h"

namespace looptrace {

class MethodNamer;
class SampleStore;
class StallCauses;

// A stretch of one thread's method beats a tracer wants, e.g. a slow message's. Live, the
// loader copies it from the BPF beat ring; replayed, it comes from the recording.
struct SliceRequest {
  std::string_view label;  // message | idle | input | startup | warm_startup | open (a literal)
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t begin_beat_index = 0;
  uint64_t end_beat_index = 0;

  static SliceRequest Of(const Span& span, std::string_view label);
};

// Where slices come from (the loader's beat ring, or a recording's method_beats events).
class SliceSource {
 public:
  virtual ~SliceSource() = default;
  virtual std::optional<MethodBeats> Slice(const SliceRequest& request) = 0;
};

// What the pipeline asks a snapshot source for.
struct SnapshotRequest {
  uint32_t tid = 0;             // the loop thread: first in the snapshot
  uint64_t stuck_since_ns = 0;  // the begin of the span it is stuck in (0: none)
  uint64_t now_ns = 0;
  bool anr = false;        // an ANR's snapshot (else a LAG's)
  bool on_demand = false;  // a thread dump: counts nothing into the session's report
};

// Snapshots of a live process (the loader reads /proc and the BPF stacks), which the pipeline
// asks for when a watched span passes its threshold (Pipeline::Tick) or on demand
// (Pipeline::DumpNow). A replayed recording has none: its snapshots are events in the stream.
class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // The thread whose loop is watched (0 while it is not known yet).
  virtual uint32_t LoopThread() = 0;
  virtual StallSnapshot Take(const SnapshotRequest& request) = 0;
};

// A threshold on a span still running, at which the pipeline asks for a snapshot (a
// StallSnapshot event comes back through it, with the span's open method slice).
struct WatchThreshold {
  SpanKind kind = SpanKind::kMessage;
  uint64_t threshold_ns = 0;
  std::string label;  // "lag", "anr": one snapshot per span and label
  bool anr = false;   // the snapshot is an ANR's
};

// What every tracer may read: shared state, never another tracer.
struct TracerContext {
  Stats* stats = nullptr;
  const MethodNamer* namer = nullptr;  // names method ids (methodMapping.txt); may be null
  const SpanTracker* spans = nullptr;
  const StallCauses* causes = nullptr;  // GC runs and monitor waits seen so far
  SampleStore* samples = nullptr;       // stack samples: a span's sampled tree at its end
  const SessionInfo* session = nullptr;
  const CommonOptions* common = nullptr;  // what several tracers read: never another's options
};

// Subscription masks: what a tracer is called for; the pipeline skips the rest.
constexpr uint32_t SpanBit(SpanKind kind) { return 1u << static_cast<int>(kind); }
template <typename T>
constexpr uint32_t EventBit() {
  return 1u << VariantIndex<T, Event>::value;
}
constexpr uint64_t RoleBit(Role role) { return uint64_t{1} << static_cast<int>(role); }
inline constexpr uint32_t kAllSpans = ~0u;
inline constexpr uint32_t kAllEvents = ~0u;
inline constexpr uint64_t kAllRoles = ~uint64_t{0};

class Tracer {
 public:
  virtual ~Tracer() = default;

  // Span kinds for OnSpanBegin / OnSpanEnd / WantSlice, event types for OnEvent and, of
  // probe events, the roles. Defaults: everything. Read at the start and again after each
  // SessionStart event (a tracer may leave out what the session's probes cannot produce).
  virtual uint32_t span_kinds() const { return kAllSpans; }
  virtual uint32_t event_types() const { return kAllEvents; }
  virtual uint64_t probe_roles() const { return kAllRoles; }
  // Span kinds WantSlice is asked about (a tracer that overrides it says which); none by
  // default, so the pipeline does not ask every tracer at every span's end.
  virtual uint32_t slice_kinds() const { return 0; }
  // No span of the slice kinds costing less than this wants a slice (read with slice_kinds()):
  // most spans are cheaper than a slow-method threshold, and the pipeline then asks no one.
  virtual uint64_t slice_min_cost_ns() const { return 0; }
  // An ended span of its span_kinds() costing less than this is of no interest to it:
  // OnSpanEnd is not called for it (spans lost or unfinished always are). Read with
  // span_kinds(); a tracer acting on slow spans only is then not called at every message.
  virtual uint64_t end_min_cost_ns() const { return 0; }
  // Span kinds OnSpanBegin is called for (a tracer that overrides it says which); none by
  // default: most tracers act at a span's end only, and a begin per message and tracer
  // is called at millions per second.
  virtual uint32_t begin_kinds() const { return 0; }

  // Every event, in stream order (probe events after the spans they open or close).
  virtual void OnEvent(const Event& event) { (void)event; }
  virtual void OnSpanBegin(const Span& span) { (void)span; }
  virtual void OnSpanEnd(const Span& span) { (void)span; }
  // At the end of a span of its slice_kinds(), before OnSpanEnd: the method beats this
  // tracer needs (if any).
  virtual std::optional<SliceRequest> WantSlice(const Span& span) {
    (void)span;
    return std::nullopt;
  }
  // Thresholds on running spans the live watchdog should snapshot at.
  virtual std::vector<WatchThreshold> Watches() const { return {}; }
  // Called once, after the last event and after every span was closed.
  virtual void Contribute(Report& report) = 0;
  // A copy of this tracer's state that reads `context` instead of its own: the pipeline
  // ends the copy to report "so far" while the session goes on (Pipeline::Snapshot).
  // Null (the default) leaves the tracer's part out of such interim reports.
  virtual std::unique_ptr<Tracer> Clone(const TracerContext& context) const {
    (void)context;
    return nullptr;
  }
};

// Base of a tracer T whose state is copyable: it holds the context, and Clone() copies T and
// points the copy at the new context.
template <typename T>
class CopyableTracer : public Tracer {
 public:
  explicit CopyableTracer(const TracerContext& context) : context_(context) {}
  std::unique_ptr<Tracer> Clone(const TracerContext& context) const override {
    auto copy = std::make_unique<T>(static_cast<const T&>(*this));
    copy->context_ = context;
    return copy;
  }

 protected:
  TracerContext context_;
};

}  // namespace looptrace
