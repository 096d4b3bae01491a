#include "looptrace/tracers/live_stats.h"

#include <algorithm>
#include <cmath>

#include "looptrace/tracers/frames.h"

namespace looptrace {
namespace {

constexpr uint64_t kFrozenNs = 700'000'000;    // Android vitals (frames.cc)
constexpr double kSlowNsAt60Hz = 16'000'000;   // Android vitals: slow frame > 16 ms at 60 Hz
constexpr size_t kMaxWindowEntries = 200'000;  // a window longer than this is shortened
constexpr size_t kRecentSlow = 8;
constexpr size_t kVsyncHistory = 240;
constexpr uint64_t kRedetectEvery = 30;  // vsyncs
constexpr size_t kMaxStallKeys = 64;

uint64_t IntervalForHz(double hz) {
  const double whole = std::round(hz);
  if (whole >= 1 && std::abs(hz - whole) <= 0.001 * hz) hz = whole;
  return std::max<uint64_t>(static_cast<uint64_t>(std::floor(1e9 / hz)), 1);
}

}  // namespace

size_t MessageBucketOf(uint64_t ns) {
  for (size_t i = 0; i < kMessageBucketsSeconds.size(); ++i)
    if (static_cast<double>(ns) <= kMessageBucketsSeconds[i] * 1e9) return i;
  return kMessageBucketsSeconds.size();
}

LiveStatsTracer::LiveStatsTracer(const LiveStatsOptions&, const TracerContext& context)
    : CopyableTracer(context), evil_threshold_ns_(context.common->evil_threshold_ns) {
  for (const auto& bucket : DropBuckets()) frames_by_bucket_[bucket] = 0;
}

void LiveStatsTracer::OnEvent(const Event& event) {
  if (const auto* start = std::get_if<SessionStart>(&event)) {
    interval_begin_ns_ = start->ts_ns;
    for (const auto& p : start->probes) {
      saw_messages_ |= p.role == Role::kDispatchBegin || p.role == Role::kPollBegin;
      saw_frames_ |= p.role == Role::kFrameBegin;
    }
  } else if (const auto* e = std::get_if<ProbeEvent>(&event)) {
    last_ts_ns_ = std::max(last_ts_ns_, e->ts_ns);
    if (e->role == Role::kVsync) {
      if (const EventArg* v = e->Arg("vsync_ns"); v && v->value) {
        vsyncs_.push_back(v->value);
        ++vsyncs_since_detect_;
      }
    } else if (e->role == Role::kMessageEnqueue) {
      const EventArg* async = e->Arg("async");
      if (!async || async->value == 0)
        for (auto& [id, count] : barrier_sync_) ++count;
    }
  } else if (const auto* snapshot = std::get_if<StallSnapshot>(&event)) {
    // One per message and level, as the ANR tracer reports them.
    if (!stalls_seen_.insert({snapshot->tid, snapshot->message_begin_ns, snapshot->anr}).second) return;
    if (stalls_seen_.size() > kMaxStallKeys) stalls_seen_.erase(stalls_seen_.begin());
    ++(snapshot->anr ? anrs_ : lags_);
    LiveStall stall;
    stall.kind = snapshot->anr ? "anr" : "lag";
    stall.tid = snapshot->tid;
    stall.at_ns = snapshot->ts_ns;
    stall.message_begin_ns = snapshot->message_begin_ns;
    for (const Span* open : context_.spans->Open(snapshot->tid, SpanKind::kMessage))
      if (open->begin_ns == snapshot->message_begin_ns) stall.name = open->ArgText("name");
    last_stall_ = std::move(stall);
  } else if (const auto* signal = std::get_if<SignalSent>(&event)) {
    ++(signal->sender_pid == context_.session->pid ? self_sigquits_ : signal_anrs_);
  }
}

uint32_t LiveStatsTracer::LoopTid() const {
  if (context_.session->thread_filter.starts_with("loop") && loop_tid_) return loop_tid_;
  return context_.session->pid;
}

void LiveStatsTracer::OnSpanBegin(const Span& span) {
  last_ts_ns_ = std::max(last_ts_ns_, span.begin_ns);
  if (span.kind == SpanKind::kMessage && !loop_tid_) loop_tid_ = span.tid;
  if (span.kind == SpanKind::kBarrier) barrier_sync_[span.id] = 0;
  if (span.kind == SpanKind::kFrame) {
    saw_frames_ = true;
    if (auto vsync = span.ArgValue("vsync_ns"); vsync && *vsync && *vsync <= span.begin_ns) {
      vsyncs_.push_back(*vsync);
      ++vsyncs_since_detect_;
    }
  }
  while (vsyncs_.size() > kVsyncHistory) vsyncs_.pop_front();
}

void LiveStatsTracer::OnSpanEnd(const Span& span) {
  last_ts_ns_ = std::max(last_ts_ns_, span.end_ns);
  switch (span.kind) {
    case SpanKind::kMessage:
      if (span.close == SpanClose::kEnded) OnMessageEnd(span);
      break;
    case SpanKind::kFrame:
      if (span.close == SpanClose::kEnded) OnFrameEnd(span);
      break;
    case SpanKind::kIdle:
    case SpanKind::kInput: {
      const CommonOptions& o = *context_.common;
      const uint64_t threshold = span.kind == SpanKind::kIdle ? o.idle_lag_threshold_ns : o.input_lag_threshold_ns;
      if (span.close != SpanClose::kLost && span.cost_ns() >= threshold)
        ++(span.kind == SpanKind::kIdle ? idle_lags_ : input_lags_);
      break;
    }
    case SpanKind::kBarrier: {
      const CommonOptions& o = *context_.common;
      auto it = barrier_sync_.find(span.id);
      const uint64_t sync = it == barrier_sync_.end() ? 0 : it->second;
      if (it != barrier_sync_.end()) barrier_sync_.erase(it);
      if (span.close != SpanClose::kLost && span.cost_ns() >= o.barrier_threshold_ns && sync > 0) ++barrier_leaks_;
      break;
    }
    default:
      break;
  }
}

void LiveStatsTracer::OnMessageEnd(const Span& span) {
  saw_messages_ = true;
  const uint64_t cost = span.cost_ns();
  LiveThread& t = threads_[span.tid];
  t.tid = span.tid;
  ++t.messages;
  t.total_ns += cost;
  if (span.depth == 0) t.busy_ns += cost;
  ++t.buckets[MessageBucketOf(cost)];
  if (const EventArg* due = span.begin.Arg("due_ms"); due && due->value) {
    const uint64_t due_ns = due->value * 1'000'000;
    loop_delays_.Add(span.begin_ns > due_ns ? span.begin_ns - due_ns : 0);
  }
  if (span.tid == LoopTid()) {
    window_messages_.push_back({span.begin_ns, span.end_ns, span.depth == 0});
    Trim(span.end_ns);
  }
  if (cost >= evil_threshold_ns_) ++evil_methods_;
  if (cost >= kLiveSlowMessageNs) {
    LiveMessage m;
    m.tid = span.tid;
    m.begin_ns = span.begin_ns;
    m.end_ns = span.end_ns;
    if (span.keyed) m.msg_id = span.key;
    m.name = span.ArgText("name");
    recent_slow_.push_front(std::move(m));
    if (recent_slow_.size() > kRecentSlow) recent_slow_.pop_back();
  }
  if (keep_intervals_) {
    Interval& interval = intervals_[span.tid];
    interval.costs.Add(cost);
    if (span.depth == 0) interval.busy_ns += cost;
  }
}

uint64_t LiveStatsTracer::IntervalNs() {
  const double forced = context_.common->refresh_hz;
  if (forced > 0) {
    refresh_hz_ = forced;
    return interval_ns_ = IntervalForHz(forced);
  }
  if (interval_ns_ == 0 || vsyncs_since_detect_ >= kRedetectEvery) {
    bool guessed = false;
    auto segments = DetectRefreshRate(std::vector<uint64_t>(vsyncs_.begin(), vsyncs_.end()), &guessed);
    if (!segments.empty()) {
      interval_ns_ = segments.back().interval_ns;
      refresh_hz_ = segments.back().hz;
      vsyncs_since_detect_ = 0;
    } else if (interval_ns_ == 0) {
      refresh_hz_ = 60;  // FrameTracer's guess too
      return IntervalForHz(60);
    }
  }
  return interval_ns_;
}

void LiveStatsTracer::OnFrameEnd(const Span& span) {
  saw_frames_ = true;
  auto vsync = span.ArgValue("vsync_ns");
  const uint64_t from = vsync && *vsync && *vsync <= span.begin_ns ? *vsync : span.begin_ns;
  const uint64_t total = span.end_ns > from ? span.end_ns - from : 0;
  const uint64_t interval = IntervalNs();
  ++frames_;
  dropped_frames_ += total / interval;
  const double matrix_dropped =
      std::max(0.0, (static_cast<double>(total) - static_cast<double>(interval)) / static_cast<double>(interval));
  ++frames_by_bucket_[DropBucket(matrix_dropped)];
  const size_t jank = total >= kFrozenNs ? 2 : total > interval ? 1 : 0;
  const double hz = refresh_hz_ > 0 ? refresh_hz_ : 1e9 / static_cast<double>(interval);
  slow_frames_ += static_cast<double>(total) > kSlowNsAt60Hz * 60.0 / hz;
  ++frames_by_jank_[jank];
  window_frames_.push_back({span.end_ns, total, interval, jank != 0});
  Trim(span.end_ns);
}

void LiveStatsTracer::Trim(uint64_t now_ns) {
  const uint64_t from = now_ns > kLiveWindowNs ? now_ns - kLiveWindowNs : 0;
  while (!window_messages_.empty() &&
         (window_messages_.front().end_ns < from || window_messages_.size() > kMaxWindowEntries))
    window_messages_.pop_front();
  while (!window_frames_.empty() && (window_frames_.front().end_ns < from || window_frames_.size() > kMaxWindowEntries))
    window_frames_.pop_front();
}

LiveStatus LiveStatsTracer::Read(uint64_t now_ns) const {
  LiveStatus s;
  const SessionInfo& session = *context_.session;
  s.pid = session.pid;
  s.command = session.command;
  s.profile = session.profile;
  s.message_definition = std::string(MessageDefinitionName(context_.spans->message_definition()));
  s.begin_ns = session.begin_ns;
  s.wall_time_ns = session.wall_time_ns;
  now_ns = std::max(now_ns, last_ts_ns_);
  s.now_ns = now_ns;
  s.messages_enabled = saw_messages_;
  s.frames_enabled = saw_frames_;
  for (const auto& [tid, t] : threads_) s.threads.push_back(t);
  s.frames = frames_;
  s.frames_by_jank = frames_by_jank_;
  s.slow_frames = slow_frames_;
  s.frames_by_bucket = frames_by_bucket_;
  s.dropped_frames = dropped_frames_;
  s.anrs = anrs_;
  s.lags = lags_;
  s.signal_anrs = signal_anrs_;
  s.self_sigquits = self_sigquits_;
  s.idle_lags = idle_lags_;
  s.input_lags = input_lags_;
  s.barrier_leaks = barrier_leaks_;
  s.evil_methods = evil_methods_;

  // The window: the last kLiveWindowNs, or the whole session if it is younger.
  uint64_t from = now_ns > kLiveWindowNs ? now_ns - kLiveWindowNs : 0;
  from = std::max(from, std::min(session.begin_ns, now_ns));
  if (!window_messages_.empty() && window_messages_.size() >= kMaxWindowEntries)
    from = std::max(from, window_messages_.front().end_ns);
  s.window_ns = now_ns - from;
  const double window_s = static_cast<double>(s.window_ns) / 1e9;
  std::vector<uint64_t> costs;
  uint64_t busy = 0;
  for (const WindowMessage& m : window_messages_) {
    if (m.end_ns < from || m.end_ns > now_ns) continue;
    costs.push_back(m.end_ns - m.begin_ns);
    if (m.top_level) busy += m.end_ns - std::max(m.begin_ns, from);
  }
  auto open = context_.spans->Open(LoopTid(), SpanKind::kMessage);
  if (!open.empty() && open.front()->begin_ns <= now_ns) {
    const Span& running = *open.front();
    busy += now_ns - std::max(running.begin_ns, from);
    LiveMessage m;
    m.tid = running.tid;
    m.begin_ns = running.begin_ns;
    if (running.keyed) m.msg_id = running.key;
    m.name = running.ArgText("name");
    s.current = std::move(m);
    s.current_running_ns = now_ns - running.begin_ns;
  }
  s.window_messages = costs.size();
  if (window_s > 0) {
    s.messages_per_s = static_cast<double>(costs.size()) / window_s;
    s.busy_percent = std::min(100.0, 100.0 * static_cast<double>(busy) / static_cast<double>(s.window_ns));
  }
  if (!costs.empty()) {
    CostSummary c = SummarizeCosts(std::move(costs));
    s.p50_ns = c.p50_ns;
    s.p99_ns = c.p99_ns;
    s.max_ns = c.max_ns;
  }
  double matrix_ns = 0, refresh_sum = 0;
  for (const WindowFrame& f : window_frames_) {
    if (f.end_ns < from || f.end_ns > now_ns) continue;
    ++s.window_frames;
    s.window_janky += f.janky;
    matrix_ns += static_cast<double>(std::max(f.total_ns, f.interval_ns));
    refresh_sum += 1e9 / static_cast<double>(f.interval_ns);
  }
  if (s.window_frames) {
    const double n = static_cast<double>(s.window_frames);
    s.fps = std::min(refresh_sum / n, n * 1e9 / matrix_ns);
  }
  s.refresh_hz = refresh_hz_;
  s.loop_delay = loop_delays_.Summary();

  const CommonOptions& anr = *context_.common;
  s.lag_threshold_ns = anr.lag_threshold_ns;
  s.anr_threshold_ns = anr.anr_threshold_ns;
  if (s.current) {
    s.state = s.current_running_ns >= anr.anr_threshold_ns   ? "anr"
              : s.current_running_ns >= anr.lag_threshold_ns ? "lag"
                                                             : "running";
  }
  s.frame = context_.spans->CurrentFrame(session.pid);
  s.scene = context_.spans->scene();
  s.recent_slow.assign(recent_slow_.begin(), recent_slow_.end());
  s.last_stall = last_stall_;
  s.stats = *context_.stats;
  return s;
}

std::vector<MessageInterval> LiveStatsTracer::TakeIntervals(uint64_t now_ns) {
  std::vector<MessageInterval> out;
  now_ns = std::max(now_ns, interval_begin_ns_);
  for (auto& [tid, interval] : intervals_) {
    if (interval.costs.count() == 0) continue;
    out.push_back({tid, interval_begin_ns_, now_ns, interval.costs.Summary(), interval.busy_ns});
  }
  intervals_.clear();
  interval_begin_ns_ = now_ns;
  return out;
}

}  // namespace looptrace
