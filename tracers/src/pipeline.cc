#include "looptrace/tracers/pipeline.h"

#include <algorithm>

#include <fmt/format.h>

#include "looptrace/tracers/event_sanitize.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/registry.h"
#include "looptrace/tracers/text_pool.h"
#include "looptrace/tracers/thread_state.h"
#include "looptrace/util/log.h"

namespace looptrace {

SliceRequest SliceRequest::Of(const Span& span, std::string_view label) {
  SliceRequest r;
  r.label = label;
  r.tid = span.tid;
  r.begin_ns = span.begin_ns;
  r.end_ns = span.end_ns;
  r.begin_beat_index = span.begin_beat_index;
  r.end_beat_index = span.end_beat_index;
  return r;
}

AnalysisOptions::AnalysisOptions() {
  for (const TracerEntry& entry : TracerRegistry()) per_tracer_.emplace_back(entry.name, entry.make_options());
}

OptionSet AnalysisOptions::Declarations() {
  OptionSet set;
  common.Declare(set);
  DeclareRenderOptions(render, set);
  for (auto& [name, options] : per_tracer_) options->Declare(set);
  return set;
}

RenderOptions AnalysisOptions::Rendering() const {
  RenderOptions options = render;
  options.top_n = common.top_n;
  return options;
}

const TracerOptions& AnalysisOptions::Of(std::string_view tracer) const {
  for (const auto& [name, options] : per_tracer_)
    if (name == tracer) return *options;
  std::abort();  // every registered tracer has options
}

Pipeline::Pipeline(const AnalysisOptions& options, SliceSource* live_slices, PipelineUse use)
    : options_(options),
      live_slices_(live_slices),
      spans_(&report_.stats),
      samples_(&report_.stats, options.common.sampled_max_nodes) {
  context_.stats = &report_.stats;
  context_.namer = options_.namer;
  context_.spans = &spans_;
  context_.causes = &causes_;
  context_.samples = &samples_;
  context_.session = &report_.session;
  context_.common = &options_.common;
  for (const TracerEntry& entry : TracerRegistry())
    tracers_.push_back(entry.live_only && use != PipelineUse::kLive ? nullptr
                                                                    : entry.make(options_.Of(entry.name), context_));
  Subscribe();
  watches_ = Watches();
}

void Pipeline::Subscribe() {
  for (auto& list : by_span_) list.clear();
  for (auto& list : by_span_begin_) list.clear();
  for (auto& list : by_event_) list.clear();
  for (auto& list : by_role_) list.clear();
  for (auto& list : slice_askers_) list.clear();
  slice_min_cost_ns_.fill(UINT64_MAX);
  for (auto& list : by_cheap_span_end_) list.clear();
  cheap_below_ns_.fill(UINT64_MAX);
  for (auto& tracer : tracers_) {
    if (!tracer) continue;
    for (int k = 0; k < kSpanKindCount; ++k)
      if (tracer->span_kinds() & (1u << k)) {
        if (tracer->slice_kinds() & (1u << k)) {
          slice_askers_[k].push_back(by_span_[k].size());
          slice_min_cost_ns_[k] = std::min(slice_min_cost_ns_[k], tracer->slice_min_cost_ns());
        }
        by_span_[k].push_back(tracer.get());
        if (const uint64_t floor = tracer->end_min_cost_ns())
          cheap_below_ns_[k] = std::min(cheap_below_ns_[k], floor);
        else
          by_cheap_span_end_[k].push_back(tracer.get());
        if (tracer->begin_kinds() & (1u << k)) by_span_begin_[k].push_back(tracer.get());
      }
    for (int k = 0; k < kSpanKindCount; ++k) cheap_below_ns_[k] = std::min(cheap_below_ns_[k], slice_min_cost_ns_[k]);
    for (size_t e = 0; e < by_event_.size(); ++e)
      if (tracer->event_types() & (1u << e)) by_event_[e].push_back(tracer.get());
    if (tracer->event_types() & EventBit<ProbeEvent>())
      for (size_t r = 0; r < by_role_.size(); ++r)
        if (tracer->probe_roles() & (uint64_t{1} << r)) by_role_[r].push_back(tracer.get());
  }
}

Pipeline::~Pipeline() = default;

const Tracer* Pipeline::FindTracer(std::string_view name) const {
  const auto& registry = TracerRegistry();
  for (size_t i = 0; i < registry.size() && i < tracers_.size(); ++i)
    if (registry[i].name == name) return tracers_[i].get();
  return nullptr;
}

Tracer* Pipeline::FindTracer(std::string_view name) {
  return const_cast<Tracer*>(static_cast<const Pipeline*>(this)->FindTracer(name));
}

std::vector<WatchThreshold> Pipeline::Watches() const {
  std::vector<WatchThreshold> out;
  for (const auto& tracer : tracers_)
    if (tracer)
      for (auto& w : tracer->Watches()) out.push_back(std::move(w));
  return out;
}

uint64_t Pipeline::ShortestInterestingNs(SpanKind kind) const {
  uint64_t shortest = cheap_below_ns_[static_cast<int>(kind)];
  for (const WatchThreshold& watch : watches_)
    if (watch.kind == kind && watch.threshold_ns) shortest = std::min(shortest, watch.threshold_ns);
  return shortest;
}

void Pipeline::AddObserver(EventSink* observer, uint32_t event_types) {
  if (event_types & EventBit<ProbeEvent>()) {
    observers_.push_back(observer);
    return;
  }
  for (size_t e = 0; e < observers_by_event_.size(); ++e)
    if (event_types & (1u << e)) observers_by_event_[e].push_back(observer);
}

void Pipeline::RemoveObserver(EventSink* observer) {
  std::erase(observers_, observer);
  for (auto& list : observers_by_event_) std::erase(list, observer);
}

void Pipeline::ObserveAll(const Event& event) {
  for (EventSink* observer : observers_) observer->OnEvent(event);
}

void Pipeline::Inject(Event event) {
  SanitizeEvent(&event);
  OnEvent(event);
}

void Pipeline::Tick(uint64_t now_ns, uint64_t trusted_since_ns) {
  if (!snapshots_) return;
  const uint32_t looper = snapshots_->LoopThread();
  if (!looper) return;  // the loop thread is not known yet
  for (const WatchThreshold& watch : watches_) {
    auto open = spans_.Open(looper, watch.kind);
    if (open.empty()) continue;
    const Span& span = *open.front();  // the outermost: the one the thread is stuck in
    if (now_ns < span.begin_ns || now_ns - span.begin_ns < watch.threshold_ns) continue;
    if (span.begin_ns < trusted_since_ns) continue;
    if (!snapshotted_.insert({span.id, watch.label}).second) continue;
    log::V1("{} snapshot of the {} running for {:.3f} s", watch.label, SpanKindName(span.kind),
            (now_ns - span.begin_ns) / 1e9);
    SliceRequest open_slice = SliceRequest::Of(span, "open");
    open_slice.end_ns = now_ns;
    open_slice.end_beat_index = UINT64_MAX;
    Inject(snapshots_->Take({looper, span.begin_ns, now_ns, watch.anr, false}));
    if (live_slices_)
      if (auto beats = live_slices_->Slice(open_slice)) Inject(std::move(*beats));
  }
}

std::optional<ThreadDump> Pipeline::DumpNow(uint64_t now_ns, uint64_t wall_time_ns) {
  if (!snapshots_) return std::nullopt;
  ThreadDump dump;
  dump.pid = report_.session.pid;
  dump.command = report_.session.command;
  dump.command_line = report_.session.command_line;
  dump.wall_time_ns = wall_time_ns;
  uint32_t tid = snapshots_->LoopThread();
  if (!tid) tid = report_.session.pid;
  auto open = spans_.Open(tid, SpanKind::kMessage);
  const Span* running = open.empty() ? nullptr : open.front();
  Event snapshot = snapshots_->Take({tid, running ? running->begin_ns : 0, now_ns, false, true});
  SanitizeEvent(&snapshot);
  dump.snapshot = std::get<StallSnapshot>(std::move(snapshot));
  dump.frame = spans_.CurrentFrame(tid);
  dump.scene = spans_.scene();
  if (running) {
    LiveMessage m;
    m.tid = running->tid;
    m.begin_ns = running->begin_ns;
    if (running->begin.Arg("id")) m.msg_id = running->key;
    m.name = running->ArgText("name");
    dump.current = std::move(m);
    dump.running_ns = dump.snapshot.ts_ns > running->begin_ns ? dump.snapshot.ts_ns - running->begin_ns : 0;
    if (live_slices_) {
      SliceRequest open_slice = SliceRequest::Of(*running, "open");
      open_slice.end_ns = now_ns;
      open_slice.end_beat_index = UINT64_MAX;
      if (auto beats = live_slices_->Slice(open_slice)) {
        Stats scratch;  // a dump counts nothing into the report
        NamedCallTree tree = BuildNamedCallTree(*beats, options_.common.max_nodes, 0, options_.namer, &scratch);
        dump.tree = std::move(tree.nodes);
        dump.stack_key = std::move(tree.stack_key);
      }
    }
  }
  ClassifyMainThread(&dump);
  return dump;
}

std::optional<MethodBeats> Pipeline::FetchSlice(const SliceRequest& request) {
  if (live_slices_) {
    auto slice = live_slices_->Slice(request);
    if (slice) Observe(*slice);  // recorded before the end of its span
    return slice;
  }
  auto it = recorded_slices_.find(std::make_tuple(std::string(request.label), request.tid, request.begin_ns));
  if (it == recorded_slices_.end()) return std::nullopt;
  MethodBeats slice = std::move(it->second);
  recorded_slices_.erase(it);
  return slice;
}

// "timers: renderReport app.js:9": the profile's name up to its first ": " (the loop's
// phase, "io" of "io: stream"), then the callable. A message the profile leaves unnamed (a
// whole loop iteration) stays so: its callbacks are the messages named.
void Pipeline::NameByCallable(Span& span) {
  const std::string callable = samples_.TakeCallable(span);
  if (callable.empty()) return;
  for (EventArg& arg : span.begin.args) {
    if (arg.name != "name" || !arg.text || arg.text->empty()) continue;
    if (*arg.text == kEventMessageName) {  // no phase: the callable is the name
      arg.text = TextPool::Intern(callable);
      return;
    }
    const std::string_view phase = std::string_view(*arg.text).substr(0, arg.text->find(": "));
    arg.text = TextPool::Intern(fmt::format("{}: {}", phase, callable));
    return;
  }
}

void Pipeline::EndFully(Span& span) {
  const int kind = static_cast<int>(span.kind);
  const auto& tracers = by_span_[kind];
  // Each tracer gets the slice it asked for; two asking for the same one share a copy.
  // Nothing is allocated unless a tracer asks.
  struct Want {
    size_t tracer;
    SliceRequest request;
  };
  std::vector<Want> wants;
  if (span.close == SpanClose::kEnded && span.cost_ns() >= slice_min_cost_ns_[kind])
    for (size_t i : slice_askers_[kind])
      if (auto request = tracers[i]->WantSlice(span)) wants.push_back({i, std::move(*request)});
  if (wants.empty()) {
    for (Tracer* tracer : tracers) tracer->OnSpanEnd(span);
    return;
  }
  struct Fetched {
    std::string_view label;
    uint32_t tid;
    uint64_t begin_ns;
    std::optional<MethodBeats> slice;
  };
  std::vector<Fetched> fetched;
  auto find = [&](const SliceRequest& r) -> Fetched* {
    for (auto& f : fetched)
      if (f.label == r.label && f.tid == r.tid && f.begin_ns == r.begin_ns) return &f;
    return nullptr;
  };
  for (const Want& w : wants)
    if (!find(w.request))
      fetched.push_back({w.request.label, w.request.tid, w.request.begin_ns, FetchSlice(w.request)});
  auto next_want = wants.begin();
  for (size_t i = 0; i < tracers.size(); ++i) {
    Fetched* f = nullptr;
    if (next_want != wants.end() && next_want->tracer == i) f = find((next_want++)->request);
    span.beats = f && f->slice ? &*f->slice : nullptr;
    tracers[i]->OnSpanEnd(span);
  }
  span.beats = nullptr;
}

void Pipeline::OnOtherEvent(const Event& event) {
  if (const auto* start = std::get_if<SessionStart>(&event)) {
    started_ = true;
    SessionInfo& s = report_.session;
    s.pid = start->pid;
    s.command = start->command;
    s.command_line = start->command_line;
    s.profile = start->profile;
    s.thread_filter = start->thread_filter;
    s.begin_ns = start->ts_ns;
    s.wall_time_ns = start->wall_time_ns;
    s.probe_roles.clear();
    for (const ProbeDescription& p : start->probes) s.probe_roles.emplace_back(RoleName(p.role));
    s.device = start->device;
    spans_.Configure(*start);
    samples_.OnSessionStart(*start);
    last_ts_ns_ = std::max(last_ts_ns_, start->ts_ns);
  } else if (const auto* beats = std::get_if<MethodBeats>(&event)) {
    // Slices of spans wait for their span's end; an open message's slice (a stall
    // snapshot's) is an event of its own.
    if (beats->span != "open") {
      Observe(event);
      recorded_slices_[{beats->span, beats->tid, beats->begin_ns}] = *beats;
      return;
    }
  } else if (const auto* exec = std::get_if<ProcessExec>(&event)) {
    // `run`'s own exec of the command keeps the name; another program's is noted.
    SessionInfo& s = report_.session;
    constexpr size_t kCommBytes = 15;  // the kernel's comm: TASK_COMM_LEN less its NUL
    const std::string& before = s.execs.empty() ? s.command : s.execs.back().comm;
    if (exec->comm != before.substr(0, std::min(before.size(), kCommBytes)))
      s.execs.push_back({exec->ts_ns, exec->comm});
    last_ts_ns_ = std::max(last_ts_ns_, exec->ts_ns);
  } else if (const auto* thread = std::get_if<ThreadName>(&event)) {
    if (!thread->name.empty()) report_.thread_names[thread->tid] = thread->name;
  } else if (const auto* counters = std::get_if<LossCounters>(&event)) {
    report_.stats.Merge(counters->stats);
  } else if (const auto* end = std::get_if<SessionEnd>(&event)) {
    ended_ = true;
    report_.session.end_ns = std::max(end->ts_ns, last_ts_ns_);
    report_.session.end_reason = end->reason;
    report_.session.exit_status = end->exit_status;
  } else {
    const uint64_t ts = std::visit(
        [](const auto& e) -> uint64_t {
          if constexpr (requires { e.ts_ns; }) return e.ts_ns;
          return 0;
        },
        event);
    if (!std::holds_alternative<Wakeup>(event)) last_ts_ns_ = std::max(last_ts_ns_, ts);
  }
  Observe(event);
  for (EventSink* observer : observers_by_event_[event.index()]) observer->OnEvent(event);
  for (Tracer* tracer : by_event_[event.index()]) tracer->OnEvent(event);
  if (const auto* sample = std::get_if<StackSample>(&event)) {
    if (spans_.wait_bounded()) spans_.OnStackSample(*sample, *this);  // a wait's sample ends a message
    samples_.OnSample(*sample);
  } else if (const auto* sw = std::get_if<ThreadSwitch>(&event)) {
    // The sample store first: the wake-up that begins a wait-bounded message settles the
    // thread's samples, and the wait's off-CPU stretch ends at this record.
    samples_.OnSwitch(*sw);
    if (spans_.wait_bounded()) spans_.OnSwitch(*sw, *this);  // the wait's end begins one
  }
  if (std::holds_alternative<SessionStart>(event)) Subscribe();  // masks may follow the probes
}

Report Pipeline::TakeReport() {
  if (!ended_) {
    report_.session.end_ns = last_ts_ns_;
    report_.session.end_reason = "end-of-recording";
  }
  spans_.Finish(report_.session.end_ns, *this);
  report_.messages.definition = spans_.MessageDefinitionText();
  for (auto& tracer : tracers_)
    if (tracer) tracer->Contribute(report_);
  return std::move(report_);
}

Report Pipeline::Snapshot(uint64_t now_ns, const Stats& losses) const {
  Pipeline copy(options_);  // a report's pipeline: the live-only tracers report nothing
  copy.report_ = report_;   // session and counters; the sections are filled at the end
  copy.spans_ = spans_;
  copy.spans_.RebindStats(&copy.report_.stats);
  copy.samples_ = samples_;
  copy.samples_.RebindStats(&copy.report_.stats);
  for (size_t i = 0; i < tracers_.size(); ++i)
    if (tracers_[i] && copy.tracers_[i])
      if (auto clone = tracers_[i]->Clone(copy.context_)) copy.tracers_[i] = std::move(clone);
  copy.Subscribe();  // the clones, not the tracers they replaced
  copy.recorded_slices_ = recorded_slices_;
  copy.last_ts_ns_ = last_ts_ns_;
  copy.started_ = started_;
  copy.ended_ = ended_;
  if (!ended_) {
    if (losses.AnyNonZero()) copy.OnEvent(LossCounters{losses});
    copy.OnEvent(SessionEnd{std::max(now_ns, last_ts_ns_), "running", std::nullopt});
  }
  return copy.TakeReport();
}

}  // namespace looptrace
