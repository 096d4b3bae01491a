// Sampled call trees: why a message, a frame or a startup was slow, without method beats.
// The loader samples the watched thread's user stack while it runs (cpu-clock, the session's
// --sample-rate) and at every switch-out; this tracer keeps a thread's recent samples, and
// at the end of a span the other tracers report as slow (EvilMethod's --evil-threshold,
// the janky frames' --jank-tree-threshold, the startup thresholds) it builds the span's
// sampled tree: on-CPU samples share the span's time on CPU, each switch-out carries the
// time until the thread ran again and why it left (lock, io, sleep, poll, preempted). The
// trees are attached next to the instrumented ones (report.h `sampled`); `-f folded`
// prints their stacks (or the session's, or the instrumented trees').
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/sampled_call_tree.h"
#include "looptrace/tracers/thread_map.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

struct SampledTreeOptions : TracerOptions {
  size_t max_nodes = 60;                  // sampled trees are deeper than method trees
  std::string folded_scope = "slow";      // slow: per slow span; session: every sample
  std::string folded_source = "sampled";  // sampled | instrumented
  void Declare(OptionSet& options) override;
};

class SampledTreeTracer : public CopyableTracer<SampledTreeTracer> {
 public:
  SampledTreeTracer(const SampledTreeOptions& options, const TracerContext& context);

  uint32_t begin_kinds() const override {
    return SpanBit(SpanKind::kMessage) | SpanBit(SpanKind::kFrame) | SpanBit(SpanKind::kLaunch);
  }
  // The per-message paths inline, the work out of line: most messages end with no sample
  // taken and no tree to build.
  void OnEvent(const Event& event) override {
    if (const auto* probe = std::get_if<ProbeEvent>(&event)) [[likely]]
      OnProbe(*probe);
    else
      OnOtherEvent(event);
  }
  // Dispatch records reach it as message spans only (below): every dispatch.begin opens one
  // and nearly every dispatch.end closes one, so the probe event itself would repeat them.
  uint64_t probe_roles() const override {
    return kAllRoles & ~(RoleBit(Role::kDispatchBegin) | RoleBit(Role::kDispatchEnd));
  }
  void OnSpanBegin(const Span& span) override {
    open_.push_back({span.id, span.tid, span.begin_ns});
    Ran(span.tid, span.begin_ns);  // what OnProbe does for the record that opened it
  }
  void OnSpanEnd(const Span& span) override {
    if (!open_.empty() && open_.back().id == span.id)
      open_.pop_back();  // mostly the innermost
    else
      ForgetOpen(span.id);
    if (!sample_hz_) return;
    if (span.close == SpanClose::kUnfinished || span.cost_ns() >= any_tree_threshold_ns_) [[unlikely]] {
      EndSlowOrUnfinished(span);
      return;
    }
    // Its end is a record of the thread (before the tracers see the record itself): what
    // OnProbe does for the record that closed it, with one thread lookup.
    Thread& t = threads_[span.tid];
    Settle(t, span.end_ns);
    if (span.end_event) {
      t.last_event_ns = std::max(t.last_event_ns, span.end_ns);
      Prune(span.tid, t);
    }
  }
  void Contribute(Report& report) override;
  // Samples kept for spans that may still want them (bounded by the open spans).
  size_t queued_samples() const {
    size_t n = 0;
    for (const auto& [tid, t] : threads_) n += t.samples.size();
    return n;
  }

 private:
  struct Sample {
    std::shared_ptr<const std::vector<std::string>> frames;  // null: an off-CPU stretch without a sample
    uint64_t ts_ns = 0;
    uint64_t off_end_ns = 0;  // off-CPU: when it ran again (0: not yet)
    bool on_cpu = true;
    bool switch_seen = false;  // off-CPU: its switch record arrived (the reason is known)
    std::string reason;
    std::string stop;
  };
  struct Thread {
    std::deque<Sample> samples;  // by ts
    uint64_t last_event_ns = 0;  // the thread's latest probe event or switch-in
    // No off-CPU sample before it lacks its switch records (Settle looks back to here).
    uint64_t unsettled_from_ns = UINT64_MAX;
  };
  using Key = std::tuple<uint32_t, uint64_t>;  // (tid, begin_ns)

  void OnSample(const StackSample& sample);
  void OnSwitch(const ThreadSwitch& sw);
  void OnOtherEvent(const Event& event);
  void OnProbe(const ProbeEvent& e) {
    Thread& t = Running(e.tid, e.ts_ns);
    if (e.role == Role::kAppCreateBegin || e.role == Role::kActivityFocus) OnStartupRole(e);
    Prune(e.tid, t);
  }
  // A record of the thread at `ts_ns`: it ran then (its samples settle up to there).
  Thread& Running(uint32_t tid, uint64_t ts_ns) {
    Thread& t = threads_[tid];
    t.last_event_ns = std::max(t.last_event_ns, ts_ns);
    if (sample_hz_) Settle(t, ts_ns);
    return t;
  }
  void Ran(uint32_t tid, uint64_t ts_ns) { Prune(tid, Running(tid, ts_ns)); }
  void OnStartupRole(const ProbeEvent& e);
  void ForgetOpen(uint64_t span_id);
  // A slow span's tree, if its kind's threshold says so.
  void BuildTreeOf(const Span& span);
  void EndSlowOrUnfinished(const Span& span);
  SampledCallTree Build(uint32_t tid, uint64_t begin_ns, uint64_t end_ns);
  // Inline check first: called at every probe event, and most threads have nothing unsettled.
  void Settle(Thread& t, uint64_t running_ns) {
    if (t.unsettled_from_ns < running_ns) SettleSamples(t, running_ns);
  }
  void SettleSamples(Thread& t, uint64_t running_ns);
  // Inline check first: called at every probe event, and most threads hold no sample.
  void Prune(uint32_t tid, Thread& t) {
    if (!t.samples.empty()) PruneSamples(tid, t);
  }
  void PruneSamples(uint32_t tid, Thread& t);
  void AddToSession(uint32_t tid, const Sample& sample);
  void Folded(Report& report);

  const SampledTreeOptions& options_;
  uint64_t evil_threshold_ns_ = 0;
  uint64_t jank_threshold_ns_ = 0;
  uint64_t warm_threshold_ns_ = 0;
  uint64_t any_tree_threshold_ns_ = 0;  // the smallest of the three: below it, no tree
  std::vector<std::string> splash_;
  uint32_t sample_hz_ = 0;
  bool dwarf_ = false;
  ThreadMap<Thread> threads_;
  struct OpenSpan {
    uint64_t id;
    uint32_t tid;
    uint64_t begin_ns;
  };
  // Spans open now, in begin order: a few per thread, closed mostly last-first (a flat list
  // costs less per message than a map node).
  std::vector<OpenSpan> open_;
  // Startup: samples are kept from app.create.begin until the cold start's care scene.
  std::optional<std::pair<uint32_t, uint64_t>> startup_;  // (tid, app.create.begin)
  bool cold_done_ = false;
  std::optional<std::tuple<uint64_t, uint64_t, SampledCallTree>> cold_;  // (begin, focus, tree)
  std::map<Key, SampledCallTree> messages_;
  std::map<Key, SampledCallTree> frames_;
  std::map<uint64_t, SampledCallTree> warm_;              // by launch time
  std::map<std::vector<std::string>, uint64_t> session_;  // folded, scope session
};

}  // namespace looptrace
