#include "looptrace/tracers/frames.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "looptrace/tracers/sample_store.h"

namespace looptrace {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kFrozenNs = 700'000'000;   // Android vitals / hwui "Davey!"
constexpr double kSlowNsAt60Hz = 16'000'000;  // Android vitals: slow frame > 16 ms at 60 Hz
constexpr double kDefaultHz = 60;
constexpr size_t kMaxRecentMessages = 4096;  // per thread, waiting for a frame they may delay

// Refresh-rate detection (DetectRefreshRate). Vsync timestamps lie on a grid of the display's
// period P, but an app only receives the vsyncs it asked for, so consecutive timestamps are
// k * P apart (k >= 1: k - 1 vsyncs skipped). The heuristic walks the deltas keeping the current
// period and one candidate period:
//  - a delta of ~1 P confirms P (its mean over such deltas refines P) and drops the candidate;
//  - any other delta feeds the candidate: ~1 candidate counts as agreement, ~k candidates
//    (k = 2..4) are skipped vsyncs at the candidate rate (neutral), a delta the candidate is a
//    multiple of replaces it (the candidate was itself a run of skips), anything else starts a
//    new candidate; deltas over 4 periods are pauses (no evidence);
//  - the candidate becomes the period once kAgreeFaster (3) consecutive deltas agree on it, or
//    kAgreeSlower (8) when it is a whole multiple of P: 120 -> 60 Hz looks exactly like a 120 Hz
//    app skipping every other vsync, so that needs a longer run. The new rate applies from the
//    first timestamp of the agreeing run (decided afterwards, so the frames during the run get
//    the new interval too); the first rate applies from the start.
// A rate within 0.1 % of a whole number of Hz is rounded to it, with Android's interval
// floor(1e9 / hz) (Choreographer.mFrameIntervalNanos), so 16666666/16666667 ns deltas give 60 Hz.
constexpr uint64_t kDedupNs = 200'000;  // timestamps closer than this are the same vsync
constexpr double kTolerance = 0.04;     // |delta - k * P| <= 4 % of P
constexpr int kMaxMultiple = 4;
constexpr uint64_t kAgreeFaster = 3;
constexpr uint64_t kAgreeSlower = 8;
constexpr double kSnap = 0.001;

// k when d is about k * p (1 <= k <= kMaxMultiple), else 0.
int Multiple(double d, double p) {
  if (p <= 0) return 0;
  const double k = std::round(d / p);
  if (k < 1 || k > kMaxMultiple) return 0;
  return std::abs(d - k * p) <= kTolerance * p ? static_cast<int>(k) : 0;
}

RefreshSegment SegmentForHz(uint64_t from_ns, double hz) {
  RefreshSegment s;
  s.from_ns = from_ns;
  const double whole = std::round(hz);
  if (whole >= 1 && std::abs(hz - whole) <= kSnap * hz) {
    s.hz = whole;
    s.interval_ns = kSecond / static_cast<uint64_t>(whole);
  } else {
    s.hz = hz;
    s.interval_ns = static_cast<uint64_t>(std::floor(1e9 / hz));
  }
  if (s.interval_ns == 0) s.interval_ns = 1;
  return s;
}

RefreshSegment SegmentForPeriod(uint64_t from_ns, double period_ns) { return SegmentForHz(from_ns, 1e9 / period_ns); }

// Java's Math.round for the values we see (non-negative).
int64_t JavaRound(double x) { return static_cast<int64_t>(std::floor(x + 0.5)); }

}  // namespace

std::string DropBucket(double matrix_dropped) {
  const int64_t d = JavaRound(matrix_dropped);
  if (d >= 42) return "FROZEN";
  if (d >= 24) return "HIGH";
  if (d >= 9) return "MIDDLE";
  if (d >= 3) return "NORMAL";
  return "BEST";
}

std::vector<RefreshSegment> DetectRefreshRate(std::vector<uint64_t> vsync_ns, bool* guessed) {
  if (guessed) *guessed = false;
  std::sort(vsync_ns.begin(), vsync_ns.end());
  std::vector<uint64_t> ts;
  for (uint64_t t : vsync_ns)
    if (ts.empty() || t - ts.back() >= kDedupNs) ts.push_back(t);
  if (ts.size() < 2) return {};

  std::vector<RefreshSegment> segments;
  double period = 0, period_sum = 0;
  uint64_t period_n = 0;
  double candidate = 0, candidate_sum = 0;
  uint64_t candidate_n = 0;
  size_t candidate_start = 0;
  for (size_t i = 0; i + 1 < ts.size(); ++i) {
    const double d = static_cast<double>(ts[i + 1] - ts[i]);
    const int k_candidate = Multiple(d, candidate);
    if (candidate > 0 && k_candidate == 1) {
      candidate_sum += d;
      ++candidate_n;
      candidate = candidate_sum / static_cast<double>(candidate_n);
    } else if (candidate > 0 && k_candidate > 1) {
      continue;  // vsyncs skipped at the candidate rate
    } else if (period > 0 && Multiple(d, period) == 1) {
      candidate = candidate_sum = 0;
      candidate_n = 0;
      period_sum += d;
      ++period_n;
      period = period_sum / static_cast<double>(period_n);
      continue;
    } else if (std::max(period, candidate) > 0 && d > kMaxMultiple * (1 + kTolerance) * std::max(period, candidate)) {
      continue;  // a pause: the app asked for no vsync
    } else if (candidate > 0 && Multiple(candidate, d) > 1) {
      candidate = candidate_sum = d;  // the candidate was a run of skips at this rate
      candidate_n = 1;
    } else {
      candidate = candidate_sum = d;
      candidate_n = 1;
      candidate_start = i;
    }
    const uint64_t need = period > 0 && Multiple(candidate, period) > 1 ? kAgreeSlower : kAgreeFaster;
    if (candidate_n >= need) {
      // The ending rate's estimate improved since it was adopted.
      if (!segments.empty()) segments.back() = SegmentForPeriod(segments.back().from_ns, period);
      segments.push_back(SegmentForPeriod(period > 0 ? ts[candidate_start] : 0, candidate));
      period = candidate;
      period_sum = candidate_sum;
      period_n = candidate_n;
      candidate = candidate_sum = 0;
      candidate_n = 0;
    }
  }
  if (!segments.empty()) {
    segments.back() = SegmentForPeriod(segments.back().from_ns, period);
    return segments;
  }
  if (guessed) *guessed = true;
  if (candidate > 0) return {SegmentForPeriod(0, candidate)};
  return {};
}

void FrameOptions::Declare(OptionSet& options) {
  options.Milliseconds("jank-tree-threshold", &jank_tree_threshold_ns,
                       "janky frames at least MS long keep their message's call tree");
}

FrameTracer::FrameTracer(const FrameOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {}

uint64_t FrameTracer::DelayByMessages(const ThreadState& thread, uint64_t from_ns, uint64_t to_ns) const {
  if (to_ns <= from_ns) return 0;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const DoneMessage& m : thread.recent) {
    if (m.has_frame) continue;                              // a frame's own doFrame message
    if (m.begin_ns <= to_ns && to_ns < m.end_ns) continue;  // contains the frame's begin
    const uint64_t b = std::max(m.begin_ns, from_ns);
    const uint64_t e = std::min(m.end_ns, to_ns);
    if (e > b) spans.emplace_back(b, e);
  }
  // Union, so nested messages are not counted twice.
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0, covered_to = 0;
  for (auto [b, e] : spans) {
    b = std::max(b, covered_to);
    if (e > b) total += e - b;
    covered_to = std::max(covered_to, e);
  }
  return total;
}

void FrameTracer::OnEvent(const Event& event) {
  if (const auto* start = std::get_if<SessionStart>(&event)) {
    frame_probed_ = std::any_of(start->probes.begin(), start->probes.end(),
                                [](const ProbeDescription& p) { return p.role == Role::kFrameBegin; });
    frames_possible_ = start->probes.empty() || frame_probed_;
    return;
  }
  const auto* e = std::get_if<ProbeEvent>(&event);
  if (!e) return;
  if (e->role == Role::kFrameBegin || e->role == Role::kFrameEnd || e->role == Role::kPhaseBegin ||
      e->role == Role::kPhaseEnd)
    saw_frames_ = true;
  if (e->role != Role::kVsync) return;
  saw_frames_ = true;
  const EventArg* v = e->Arg("vsync_ns");
  if (!v || v->value == 0) {
    context_.stats->Add(StatId::vsync_without_timestamp);
    return;
  }
  vsync_events_.push_back(v->value);
  threads_[e->tid].vsync_received = v->value;
}

void FrameTracer::OnSpanBegin(const Span& span) {
  if (span.kind != SpanKind::kFrame) return;
  ThreadState& t = threads_[span.tid];
  FrameRecord r;
  r.tid = span.tid;
  r.frame_id = span.key;
  r.begin_ns = span.begin_ns;
  r.end_ns = span.begin_ns;
  const auto vsync = span.ArgValue("vsync_ns");
  if (!vsync || *vsync == 0 || *vsync > span.begin_ns) {
    context_.stats->Add(StatId::frame_without_vsync);
    r.vsync_ns = span.begin_ns;
  } else {
    r.vsync_ns = *vsync;
    frame_vsyncs_.push_back(r.vsync_ns);
  }
  r.intended_vsync_ns = r.vsync_ns;
  if (t.vsync_received && *t.vsync_received <= r.vsync_ns) r.intended_vsync_ns = *t.vsync_received;
  t.vsync_received.reset();
  r.scene = context_.spans->scene();
  r.delay_by_messages_ns = DelayByMessages(t, r.intended_vsync_ns, r.begin_ns);
  // Later frames' vsyncs are later: older messages can delay none of them.
  while (!t.recent.empty() && t.recent.front().end_ns < r.intended_vsync_ns) t.recent.pop_front();
  t.last_frame_begin_ns = span.begin_ns;
  open_.emplace(span.id, std::move(r));
}

std::optional<SliceRequest> FrameTracer::WantSlice(const Span& span) {
  if (span.kind != SpanKind::kMessage || !frames_possible_) return std::nullopt;
  auto it = threads_.find(span.tid);
  if (it == threads_.end()) return std::nullopt;
  // A long janky frame that ran in this message wants the message's call tree.
  for (size_t index : it->second.awaiting_message) {
    const uint64_t begin = frames_[index].begin_ns;
    if (begin >= span.begin_ns && (begin < span.end_ns || begin == span.begin_ns))
      return SliceRequest::Of(span, "message");
  }
  return std::nullopt;
}

void FrameTracer::OnSpanEnd(const Span& span) {
  if (span.kind == SpanKind::kPhase) {
    auto it = open_.find(span.parent_id);
    if (it != open_.end()) {
      const auto phase = static_cast<uint32_t>(span.key);
      it->second.phases.push_back({phase, PhaseName(phase), span.begin_ns, span.end_ns});
    }
    return;
  }
  if (span.kind == SpanKind::kFrame) {
    auto it = open_.find(span.id);
    if (it == open_.end()) return;
    FrameRecord r = std::move(it->second);
    open_.erase(it);
    r.end_ns = std::max(span.end_ns, r.begin_ns);
    r.finished = span.close == SpanClose::kEnded;
    frames_.push_back(std::move(r));
    if (frames_.back().cost_ns() >= options_.jank_tree_threshold_ns && span.close != SpanClose::kUnfinished) {
      threads_[span.tid].awaiting_message.push_back(frames_.size() - 1);
      // Kept if the frame turns out janky (the refresh rate is known at the end).
      if (context_.samples) frames_.back().sampled = context_.samples->TreeOf(span);
    }
    return;
  }
  if (span.kind != SpanKind::kMessage || span.close != SpanClose::kEnded || !frames_possible_) return;
  ThreadState& t = threads_[span.tid];
  auto inside = [&](uint64_t ts) { return ts >= span.begin_ns && (ts < span.end_ns || ts == span.begin_ns); };
  const bool has_frame = t.last_frame_begin_ns && inside(*t.last_frame_begin_ns);

  // Long frames that ran in this message get its call tree.
  std::vector<size_t> keep;
  for (size_t index : t.awaiting_message) {
    FrameRecord& f = frames_[index];
    if (inside(f.begin_ns)) {
      if (span.beats)
        f.tree = BuildNamedCallTree(*span.beats, context_.common->max_nodes, 0, context_.namer, context_.stats,
                                    options_.tree)
                     .nodes;
    } else if (!(f.begin_ns < span.begin_ns && span.depth == 0)) {
      keep.push_back(index);  // a top-level message began after the frame: its message is gone
    }
  }
  t.awaiting_message = std::move(keep);
  t.recent.push_back({span.begin_ns, span.end_ns, has_frame});
  if (t.recent.size() > kMaxRecentMessages) t.recent.pop_front();
}

namespace {

struct Summarizer {
  const std::vector<FrameRecord>& frames;
  const std::vector<uint64_t>& delivered_ns;

  FpsSummary operator()(const std::vector<size_t>& indices) const {
    FpsSummary s;
    for (const auto& bucket : DropBuckets()) {
      s.drop_level[bucket] = 0;
      s.drop_sum[bucket] = 0;
    }
    if (indices.empty()) return s;
    s.scene = frames[indices.front()].scene;
    s.begin_ns = frames[indices.front()].vsync_ns;
    double matrix_ns = 0, delivered = 0, refresh_sum = 0;
    for (size_t i : indices) {
      const FrameRecord& f = frames[i];
      s.begin_ns = std::min(s.begin_ns, f.vsync_ns);
      s.end_ns = std::max(s.end_ns, f.end_ns);
      ++s.frames;
      matrix_ns += static_cast<double>(std::max(f.total_ns(), f.interval_ns));
      delivered += static_cast<double>(delivered_ns[i]);
      refresh_sum += f.refresh_hz;
      ++s.drop_level[f.bucket];
      s.drop_sum[f.bucket] += static_cast<double>(JavaRound(f.matrix_dropped));
      s.janky += f.deadline_missed;
      s.slow += f.slow;
      s.frozen += f.frozen;
      s.delay_by_messages_ns += f.delay_by_messages_ns;
      s.dropped_frames += f.dropped_frames;
    }
    const double n = static_cast<double>(s.frames);
    s.refresh_hz = refresh_sum / n;
    s.matrix_fps = matrix_ns > 0 ? std::min(s.refresh_hz, n * 1e9 / matrix_ns) : s.refresh_hz;
    s.delivered_fps = delivered > 0 ? std::min(s.refresh_hz, n * 1e9 / delivered) : s.refresh_hz;
    return s;
  }
};

}  // namespace

void FrameTracer::Summarize(FramesReport* out) {
  std::stable_sort(frames_.begin(), frames_.end(), [](const FrameRecord& a, const FrameRecord& b) {
    return std::tie(a.begin_ns, a.tid, a.frame_id) < std::tie(b.begin_ns, b.tid, b.frame_id);
  });

  // Refresh rates from the vsync events and the frames' vsyncs together: a frame that started
  // late had its vsync moved to the latest tick (Android's skip), often one the app never
  // received, so the frames fill in the grid where an app busy every other vsync only
  // receives every second tick (which alone would look like half the rate).
  std::vector<RefreshSegment> segments;
  if (context_.common->refresh_hz > 0) {
    segments.push_back(SegmentForHz(0, context_.common->refresh_hz));
  } else {
    std::vector<uint64_t> vsyncs = vsync_events_;
    vsyncs.insert(vsyncs.end(), frame_vsyncs_.begin(), frame_vsyncs_.end());
    bool guessed = false;
    segments = DetectRefreshRate(std::move(vsyncs), &guessed);
    if (!frames_.empty() && (guessed || segments.empty())) context_.stats->Add(StatId::refresh_rate_assumed);
    if (segments.empty()) segments.push_back(SegmentForHz(0, kDefaultHz));
    context_.stats->Add(StatId::refresh_rate_changes, segments.size() - 1);
  }

  std::vector<double> rates;
  std::map<uint32_t, uint64_t> prev_end;  // per thread
  std::vector<uint64_t> delivered_ns(frames_.size());
  for (size_t i = 0; i < frames_.size(); ++i) {
    FrameRecord& f = frames_[i];
    auto seg = std::upper_bound(segments.begin(), segments.end(), f.vsync_ns,
                                [](uint64_t ts, const RefreshSegment& s) { return ts < s.from_ns; });
    const RefreshSegment& rate = seg == segments.begin() ? segments.front() : *std::prev(seg);
    f.interval_ns = rate.interval_ns;
    f.refresh_hz = rate.hz;
    if (std::find(rates.begin(), rates.end(), rate.hz) == rates.end()) rates.push_back(rate.hz);
    const uint64_t total = f.total_ns();
    const uint64_t interval = f.interval_ns;
    f.skipped_frames = (f.vsync_ns - f.intended_vsync_ns + interval / 2) / interval;
    f.dropped_frames = total / interval;
    f.matrix_dropped =
        std::max(0.0, (static_cast<double>(total) - static_cast<double>(interval)) / static_cast<double>(interval));
    f.bucket = DropBucket(f.matrix_dropped);
    f.deadline_missed = total > interval;
    f.slow = static_cast<double>(total) > kSlowNsAt60Hz * 60.0 / f.refresh_hz;
    f.frozen = total >= kFrozenNs;
    if (!f.deadline_missed) {
      f.tree.clear();
      f.sampled = {};
    }

    uint64_t& prev = prev_end[f.tid];
    const uint64_t from = std::max(f.intended_vsync_ns, prev);
    delivered_ns[i] = std::max(f.end_ns > from ? f.end_ns - from : 0, interval);
    prev = std::max(prev, f.end_ns);
  }

  FramesReport& report = *out;
  report = FramesReport{};
  report.refresh_rates = rates;
  Summarizer summarize{frames_, delivered_ns};

  // Per scene, in order of first frame.
  std::vector<std::string> scene_order;
  std::map<std::string, std::vector<size_t>> by_scene;
  for (size_t i = 0; i < frames_.size(); ++i) {
    if (!frames_[i].finished) continue;
    auto [it, added] = by_scene.try_emplace(frames_[i].scene);
    if (added) scene_order.push_back(frames_[i].scene);
    it->second.push_back(i);
  }
  for (const auto& scene : scene_order) report.scenes.push_back(summarize(by_scene[scene]));

  // Matrix windows: a window starts with a frame; each frame is appended, then the window is
  // flushed once the frame arrived (ended) window_ns or more after the first one. A scene
  // change flushes too (Matrix: onActivityPaused), and so does the session end. Only windows
  // with min_window_frames frames are reported.
  std::vector<size_t> window;
  auto flush = [&] {
    if (!window.empty() && window.size() >= std::max<size_t>(options_.min_window_frames, 1))
      report.windows.push_back(summarize(window));
    window.clear();
  };
  for (size_t i = 0; i < frames_.size(); ++i) {
    const FrameRecord& f = frames_[i];
    if (!f.finished) continue;
    if (!window.empty() && frames_[window.front()].scene != f.scene) flush();
    window.push_back(i);
    if (f.end_ns - std::min(f.end_ns, frames_[window.front()].end_ns) >= options_.window_ns) flush();
  }
  flush();

  std::vector<size_t> worst(frames_.size());
  for (size_t i = 0; i < worst.size(); ++i) worst[i] = i;
  std::stable_sort(worst.begin(), worst.end(), [&](size_t a, size_t b) {
    if (frames_[a].total_ns() != frames_[b].total_ns()) return frames_[a].total_ns() > frames_[b].total_ns();
    return frames_[a].begin_ns < frames_[b].begin_ns;
  });
  if (worst.size() > context_.common->top_n) worst.resize(context_.common->top_n);
  report.worst = std::move(worst);
  report.frames = std::move(frames_);
  frames_.clear();
}

void FrameTracer::Contribute(Report& report) {
  Summarize(&report.frames);
  report.frames.enabled = saw_frames_ || frame_probed_;
}

}  // namespace looptrace
