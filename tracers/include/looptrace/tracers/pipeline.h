// The analysis pipeline: one event stream (live or replayed) -> span tracker -> every
// registered tracer -> one Report. It also asks the tracers which method-beat slices they
// need at each span's end and fetches them from a SliceSource; live, it watches the spans
// the tracers set thresholds on and asks a SnapshotSource for stall snapshots; and it passes
// the events it handles (slices and snapshots included, in stream order) to observers such as
// the recording writer.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/report/thread_dump.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/options.h"
#include "looptrace/tracers/registry.h"
#include "looptrace/tracers/sample_store.h"
#include "looptrace/tracers/span_tracker.h"
#include "looptrace/tracers/stall_causes.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// The options of a run: the shared ones and one object per registered tracer.
class AnalysisOptions {
 public:
  AnalysisOptions();                                 // every tracer's defaults
  AnalysisOptions(const AnalysisOptions&) = delete;  // declarations point into it
  AnalysisOptions& operator=(const AnalysisOptions&) = delete;
  CommonOptions common;
  // How the report is drawn where an option says (-f folded's stacks), declared with the rest.
  RenderOptions render;
  const MethodNamer* namer = nullptr;  // may be null

  // Every option of every tracer (plus the common and the render ones), bound to this object.
  OptionSet Declarations();
  // The render options, with the common ones renderers follow (--top).
  RenderOptions Rendering() const;
  const TracerOptions& Of(std::string_view tracer) const;
  // A tracer's options to change before a run (tests, configuration).
  template <typename T>
  T& Mutable(std::string_view tracer) {
    return const_cast<T&>(static_cast<const T&>(Of(tracer)));
  }

 private:
  std::vector<std::pair<std::string_view, std::unique_ptr<TracerOptions>>> per_tracer_;
};

class Pipeline : public EventSink, private SpanListener {
 public:
  // `live_slices` serves slice requests live (the loader's beat ring); without it, slices
  // come from method_beats events in the stream (a replayed recording).
  // `use`: kLive also runs the live-only tracers (registry.h), for figures read while the
  // session runs.
  explicit Pipeline(const AnalysisOptions& options, SliceSource* live_slices = nullptr,
                    PipelineUse use = PipelineUse::kReport);
  ~Pipeline() override;

  // The live slice source once it exists (null: slices come from the stream again).
  void SetSliceSource(SliceSource* live_slices) { live_slices_ = live_slices; }
  // The live snapshot source once it exists (null: none, as in a replay).
  void SetSnapshotSource(SnapshotSource* snapshots) { snapshots_ = snapshots; }
  // Sees the events the pipeline handles, including the slices and snapshots it fetched:
  // every event, or only those of `event_types` (EventBit) when they hold no probe events.
  void AddObserver(EventSink* observer, uint32_t event_types = ~0u);
  void RemoveObserver(EventSink* observer);
  // Probe events (nearly every event) take a path of their own, inline in the caller's
  // loop over records.
  [[gnu::always_inline]] void OnEvent(const Event& event) override {
    if (const auto* probe = std::get_if<ProbeEvent>(&event)) [[likely]]
      OnProbe(*probe, event);
    else
      OnOtherEvent(event);
  }

  const SpanTracker& spans() const { return spans_; }
  const SampleStore& samples() const { return samples_; }
  const SessionInfo& session() const { return report_.session; }
  std::vector<WatchThreshold> Watches() const;
  // The shortest running time at which a span of `kind` interests a tracer: a watch's
  // threshold, or the cost from which a tracer looks at its end beyond counting it
  // (UINT64_MAX: none does).
  uint64_t ShortestInterestingNs(SpanKind kind) const;

  // Live, at least every poll interval: each watched span of the loop thread past its
  // threshold gets one snapshot from the snapshot source, and its open method slice, both
  // handled as events of the stream. Nothing without a snapshot source.
  // `trusted_since_ns`: spans that began before it may have lost their end record (a drain
  // lost records after they began): their age proves no stall, so none is judged.
  void Tick(uint64_t now_ns, uint64_t trusted_since_ns = 0);
  // `looptrace snapshot`: every thread now, the loop thread's running message with its
  // method tree so far, its frame and scene. Counts nothing into the report; nothing
  // without a snapshot source.
  std::optional<ThreadDump> DumpNow(uint64_t now_ns, uint64_t wall_time_ns);

  // Call once after the last event; a stream without SessionEnd ends at its last event.
  Report TakeReport();
  // The report so far, while the session goes on: a copy of the pipeline (span tracker and
  // every tracer, Tracer::Clone) gets `losses` (counted outside the tracers so far) and a
  // SessionEnd at `now_ns` with the reason "running", so spans still open are reported
  // as unfinished; this pipeline is not changed. After the end, the same as TakeReport
  // would have returned.
  Report Snapshot(uint64_t now_ns, const Stats& losses = {}) const;

  // The tracer registered under `name` (registry.cc), or null (also a live-only tracer in a
  // report's pipeline).
  const Tracer* FindTracer(std::string_view name) const;
  Tracer* FindTracer(std::string_view name);

 private:
  // Inline (into the caller's loop over records): one call frame less per record.
  [[gnu::always_inline]] void OnProbe(const ProbeEvent& probe, const Event& event) {
    if (!started_ && report_.session.begin_ns == 0) [[unlikely]]
      report_.session.begin_ns = probe.ts_ns;
    last_ts_ns_ = std::max(last_ts_ns_, probe.ts_ns);
    causes_.OnProbe(probe);
    spans_.OnProbe(probe, *this);
    Observe(event);
    samples_.OnProbe(probe);
    for (Tracer* tracer : by_role_[static_cast<int>(probe.role) & 63]) tracer->OnEvent(event);
  }
  void OnOtherEvent(const Event& event);
  void OnSpanBegin(const Span& span) override {
    for (Tracer* tracer : by_span_begin_[static_cast<int>(span.kind)]) tracer->OnSpanBegin(span);
    samples_.OnSpanBegin(span);
  }
  // Inline: called at every span's end, and most spans want no slice.
  void OnSpanEnd(Span& span) override {
    if (span.kind == SpanKind::kMessage && samples_.holds_callables()) [[unlikely]]
      NameByCallable(span);
    causes_.OnSpanEnd(span);
    const int kind = static_cast<int>(span.kind);
    if (span.close == SpanClose::kEnded && span.cost_ns() < cheap_below_ns_[kind]) [[likely]] {
      for (Tracer* tracer : by_cheap_span_end_[kind]) tracer->OnSpanEnd(span);
    } else {
      EndFully(span);
    }
    samples_.OnSpanEnd(span);  // after the tracers asked for its tree
  }
  // Every tracer of the kind, with the slices they ask for.
  void EndFully(Span& span);
  // Names a message by the callable its samples found (SampleStore::TakeCallable), before
  // any tracer sees its end.
  void NameByCallable(Span& span);
  void Observe(const Event& event) {
    if (!observers_.empty()) ObserveAll(event);  // most analyses record nothing
  }
  void ObserveAll(const Event& event);
  // An event the pipeline fetched itself (a snapshot, its slice): made safe, then handled.
  void Inject(Event event);
  // Fills the subscriber lists from tracers_ (span kinds, event types, roles).
  void Subscribe();
  std::optional<MethodBeats> FetchSlice(const SliceRequest& request);

  const AnalysisOptions& options_;
  SliceSource* live_slices_;
  SnapshotSource* snapshots_ = nullptr;
  std::vector<WatchThreshold> watches_;
  std::set<std::pair<uint64_t, std::string>> snapshotted_;  // (span id, watch label) done
  Report report_;
  SpanTracker spans_;
  StallCauses causes_;
  SampleStore samples_;
  TracerContext context_;
  std::vector<std::unique_ptr<Tracer>> tracers_;  // by registry index; null: not run here
  // Subscribers: by span kind, by event type (variant index), by role (probe events).
  std::array<std::vector<Tracer*>, kSpanKindCount> by_span_;
  std::array<std::vector<Tracer*>, kSpanKindCount> by_span_begin_;  // begin_kinds()
  // Per span kind, the positions in by_span_ of the tracers that may want a slice of it
  // (slice_kinds()).
  std::array<std::vector<size_t>, kSpanKindCount> slice_askers_;
  // Per span kind, the cheapest span any of them may want a slice of (UINT64_MAX: none asks).
  std::array<uint64_t, kSpanKindCount> slice_min_cost_ns_{};
  // Per span kind, the cost below which an ended span wants no slice and interests only
  // by_cheap_span_end_ (the tracers without an end_min_cost_ns()).
  std::array<uint64_t, kSpanKindCount> cheap_below_ns_{};
  std::array<std::vector<Tracer*>, kSpanKindCount> by_cheap_span_end_;
  std::array<std::vector<Tracer*>, std::variant_size_v<Event>> by_event_;
  std::array<std::vector<Tracer*>, 64> by_role_;
  std::vector<EventSink*> observers_;
  std::array<std::vector<EventSink*>, std::variant_size_v<Event>> observers_by_event_;
  // Replay: slices recorded in the stream, by (label, tid, begin_ns).
  std::map<std::tuple<std::string, uint32_t, uint64_t>, MethodBeats, std::less<>> recorded_slices_;
  uint64_t last_ts_ns_ = 0;
  bool ended_ = false;
  bool started_ = false;
};

}  // namespace looptrace
