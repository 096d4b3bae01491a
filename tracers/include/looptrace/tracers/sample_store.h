// The stack samples of the watched threads, kept for the spans that may still want them: a
// service of the pipeline that every tracer may ask (TracerContext::samples), as StallCauses
// is for GC runs and monitor waits. The pipeline feeds it every sample, switch and probe hit
// and the begin and end of every span; a tracer that reports a slow span asks it, when the
// span ends, for the span's sampled call tree (TreeOf): on-CPU samples share the span's time
// on CPU, each switch-out carries the time until the thread ran again and why it left (lock,
// io, sleep, poll, preempted). A sample no span can want any more goes into the session's
// folded stacks (SessionStacks), then is dropped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/report/sampled_call_tree.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/compact_queue.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/span_tracker.h"
#include "looptrace/tracers/thread_map.h"

namespace looptrace {

class SampleStore {
 public:
  // `max_nodes`: the node limit of the trees it builds (Matrix's trim rule).
  SampleStore(Stats* stats, size_t max_nodes) : stats_(stats), max_nodes_(max_nodes) {}
  // A copy counts into `stats` (Pipeline::Snapshot).
  void RebindStats(Stats* stats) { stats_ = stats; }

  // The session's sample rate (0: no samples, no trees) and unwinding.
  void OnSessionStart(const SessionStart& start);
  void OnSample(const StackSample& sample);
  void OnSwitch(const ThreadSwitch& sw);
  // Every probe hit but dispatch's, which come as message spans (OnSpanBegin / OnSpanEnd):
  // the thread ran then. Inline, the work out of line: most threads hold no sample.
  void OnProbe(const ProbeEvent& e) {
    if (e.role == Role::kDispatchBegin || e.role == Role::kDispatchEnd) return;
    Ran(e.tid, e.ts_ns);
  }
  // Spans a tree may be asked of (messages, frames, launches) keep their thread's samples
  // from their begin on.
  void OnSpanBegin(const Span& span) {
    if (!Kept(span.kind)) return;
    open_.push_back({span.id, span.tid, span.begin_ns});
    Ran(span.tid, span.begin_ns);  // what OnProbe does for the record that opened it
  }
  // After every tracer saw the span end (and asked for its tree).
  void OnSpanEnd(const Span& span) {
    if (Kept(span.kind)) {
      if (!open_.empty() && open_.back().id == span.id)
        open_.pop_back();  // mostly the innermost
      else
        ForgetOpen(span.id);
    }
    if (!sample_hz_) return;
    // Its end is a record of the thread: what OnProbe does for that record.
    Thread& t = threads_[span.tid];
    if (span.close != SpanClose::kUnfinished || span.end_event) Settle(t, span.end_ns);
    if (span.end_event) {
      t.last_event_ns = std::max(t.last_event_ns, span.end_ns);
      Prune(span.tid, t);
    }
  }

  // The sampled tree of a span that is ending (empty without samples).
  SampledCallTree TreeOf(const Span& span);
  // The sampled tree of [begin_ns, end_ns] on thread `tid` (empty without samples).
  SampledCallTree Tree(uint32_t tid, uint64_t begin_ns, uint64_t end_ns);
  // Whether any kept sample holds a callable not taken yet (StackSample::callable): inline,
  // asked at every message's end, and only runtimes that name callables make one.
  bool holds_callables() const { return callables_ > 0; }
  // The callable that ran in `span` (a message that is ending), from its samples that no
  // message nested in it took: the most frequent, the earliest of a tie; "" when none. The
  // samples are taken, so the message around it is named by the rest.
  std::string TakeCallable(const Span& span);
  // Keeps thread `tid`'s samples from `from_ns` on (a cold start in progress) until Release.
  void Hold(uint32_t tid, uint64_t from_ns) { hold_ = {{tid, from_ns}}; }
  void Release() { hold_.reset(); }

  // Every sample of the session as folded stacks (outermost frame first; a thread other than
  // the process's own under "[thread N]", off-CPU time ending in "[off-cpu: REASON]"), by
  // stack; stretches still off CPU end at `end_ns`.
  std::vector<FoldedStack> SessionStacks(uint64_t end_ns) const;
  // Each thread's on-CPU samples over the whole session as one tree and its heaviest frames
  // (self and total), most sampled thread first: the view of a session without messages.
  std::vector<ThreadProfile> ThreadProfiles(size_t top_methods) const;
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
    uint64_t period_ns = 0;   // on CPU: its sampling period where --cpu-budget changed it (0: the session's)
    bool on_cpu = true;
    bool switch_seen = false;  // off-CPU: its switch record arrived (the reason is known)
    std::string reason;
    std::string stop;
    std::string callable;  // "" when none, or taken by a message
    // An off-CPU stretch BPF took no stack for, early in a message (kUnstackedEarlyPreemption,
    // or kUnstackedEarlyWait whose wait was too short for the loader to read its stack).
    bool early_unstacked() const {
      return !frames && !on_cpu && (stop == kUnstackedEarlyPreemption || stop == kUnstackedEarlyWait);
    }
  };
  struct Thread {
    CompactQueue<Sample> samples;  // by ts
    uint64_t last_event_ns = 0;    // the thread's latest probe event or switch-in
    // No off-CPU sample before it lacks its switch records (Settle looks back to here).
    uint64_t unsettled_from_ns = UINT64_MAX;
    // The latest on-CPU sample gone to the session (frames, stop, ts): an early preemption
    // pruned after it may stand under its stack (StandIn).
    Sample pruned_on_cpu;
  };
  struct OpenSpan {
    uint64_t id;
    uint32_t tid;
    uint64_t begin_ns;
  };
  using Frames = std::vector<std::string>;
  // Each distinct stack once: a busy thread's samples mostly repeat a few stacks, and a
  // sample that has gone to the session's totals is then counted under its stack's address
  // (no copy of its frames, no comparison of them per sample).
  struct FramesHash {
    using is_transparent = void;  // NOLINT(readability-identifier-naming): the standard library's name
    size_t operator()(const Frames& frames) const;
    size_t operator()(const std::shared_ptr<const Frames>& frames) const { return (*this)(*frames); }
  };
  struct FramesEqual {
    using is_transparent = void;  // NOLINT(readability-identifier-naming): the standard library's name
    static const Frames& Of(const Frames& f) { return f; }
    static const Frames& Of(const std::shared_ptr<const Frames>& f) { return *f; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Of(a) == Of(b);
    }
  };
  std::shared_ptr<const Frames> Intern(const Frames& frames);
  // A sample gone to the session's totals: its thread, stack, and how it is folded.
  struct SessionKey {
    uint32_t tid = 0;
    const Frames* frames = nullptr;  // interned; null: no stack
    bool on_cpu = true;
    std::string stop, reason;
    bool operator==(const SessionKey&) const = default;
  };
  struct SessionKeyHash {
    size_t operator()(const SessionKey& k) const;
  };
  using SessionTotals = std::unordered_map<SessionKey, uint64_t, SessionKeyHash>;  // ns
  using Stacks = std::map<std::vector<std::string>, uint64_t>;
  // On-CPU samples by (frames innermost first, why the walk stopped): their count.
  struct OnCpuTotal {
    uint64_t samples = 0, ns = 0;  // ns: their periods summed
  };
  using OnCpuStacks = std::map<std::pair<std::vector<std::string>, std::string>, OnCpuTotal>;
  struct OnCpuKeyHash {
    size_t operator()(const std::pair<const Frames*, std::string>& k) const;
  };
  using OnCpuCounts = std::unordered_map<std::pair<const Frames*, std::string>, OnCpuTotal, OnCpuKeyHash>;
  // A record comes at most this long after a sample of the same time (the loader polls every
  // 25 ms): a thread's on-CPU samples older than its latest by this much can start no span.
  static constexpr uint64_t kRecordLagNs = 1'000'000'000;
  // An early preemption gone to the session stands under an on-CPU sample at most this many
  // sample periods from it (inside a slow message's tree: any of the message's own).
  static constexpr uint64_t kStandInPeriods = 10;

  static bool Kept(SpanKind kind) {
    return kind == SpanKind::kMessage || kind == SpanKind::kFrame || kind == SpanKind::kLaunch;
  }
  // A record of the thread at `ts_ns`: it ran then (its samples settle up to there).
  Thread& Running(uint32_t tid, uint64_t ts_ns) {
    Thread& t = threads_[tid];
    t.last_event_ns = std::max(t.last_event_ns, ts_ns);
    if (sample_hz_) Settle(t, ts_ns);
    return t;
  }
  void Ran(uint32_t tid, uint64_t ts_ns) { Prune(tid, Running(tid, ts_ns)); }
  void ForgetOpen(uint64_t span_id);
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
  // The folded stack of a sample and its weight (0: none).
  uint64_t Fold(uint32_t tid, const Frames* frames, bool on_cpu, const std::string& stop, const std::string& reason,
                uint64_t ts_ns, uint64_t off_end_ns, std::vector<std::string>* folded) const;
  void AddToSession(uint32_t tid, const Sample& sample, Stacks* stacks) const;
  uint64_t NominalPeriodNs() const { return sample_hz_ ? 1'000'000'000ull / sample_hz_ : 0; }
  // What an on-CPU sample stands for: its own period where --cpu-budget changed the rate.
  uint64_t PeriodOf(const Sample& s) const { return s.period_ns ? s.period_ns : NominalPeriodNs(); }
  // The rate `samples` on-CPU samples spanning `periods_ns` were taken at (the nominal one without any).
  uint32_t MeanHz(uint64_t samples, uint64_t periods_ns) const;
  // The on-CPU sample whose stack an early preemption at `at` (BPF took none: the thread was
  // running then and ran on after) stands under: the nearest one in [lo, hi] among `samples`
  // (or `before`, the thread's latest pruned one); null when none is.
  static const Sample* StandIn(const CompactQueue<Sample>& samples, CompactQueue<Sample>::const_iterator at,
                               const Sample* before, uint64_t lo, uint64_t hi);

  Stats* stats_;
  size_t max_nodes_;
  uint32_t pid_ = 0;
  uint32_t sample_hz_ = 0;
  bool dwarf_ = false;
  ThreadMap<Thread> threads_;
  // Spans open now, in begin order: a few per thread, closed mostly last-first (a flat list
  // costs less per message than a map node).
  std::vector<OpenSpan> open_;
  std::optional<std::pair<uint32_t, uint64_t>> hold_;  // (tid, from): see Hold
  std::unordered_set<std::shared_ptr<const Frames>, FramesHash, FramesEqual> interned_;
  SessionTotals session_;                   // samples no span wants any more
  size_t callables_ = 0;                    // kept samples with a callable not taken
  std::map<uint32_t, OnCpuCounts> on_cpu_;  // the same samples on CPU, by thread
};

}  // namespace looptrace
