#include "looptrace/tracers/sampled_tree.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "looptrace/tracers/anr.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/tracers/startup.h"

namespace looptrace {
namespace {

Result<void> OneOf(std::string_view flag, std::string_view value, std::initializer_list<std::string_view> allowed,
                   std::string* out) {
  for (auto a : allowed)
    if (value == a) {
      *out = std::string(value);
      return {};
    }
  std::string names;
  for (auto a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
  return MakeError(fmt::format("invalid --{} '{}'", flag, value), ExitCode::kUsage, "one of " + names);
}

// A span's label as the root frame of its folded stacks.
std::string Label(const std::string& what, uint64_t ts_ns, uint64_t base_ns) {
  return fmt::format("[{} +{:.6f}s]", what, ts_ns >= base_ns ? (ts_ns - base_ns) / 1e9 : 0.0);
}

std::string MessageName(const Message& m) {
  if (!m.name.empty()) return "message " + m.name;
  return m.msg_id ? fmt::format("message {}", *m.msg_id) : "message";
}

void AddFolded(const std::string& label, const SampledCallTree& tree, std::vector<FoldedStack>* out) {
  for (const FoldedStack& f : tree.folded) {
    FoldedStack line;
    if (!label.empty()) line.frames.push_back(label);
    line.frames.insert(line.frames.end(), f.frames.begin(), f.frames.end());
    line.weight_ns = f.weight_ns;
    out->push_back(std::move(line));
  }
  // On-CPU time no sample caught stays with the span itself.
  if (!label.empty() && tree.unsampled_on_cpu_ns) out->push_back({{label}, tree.unsampled_on_cpu_ns});
}

// An instrumented tree's self times as folded stacks (root = `label`).
void AddInstrumented(const std::string& label, const std::vector<NamedCallNode>& tree,
                     std::map<std::vector<std::string>, uint64_t>* out) {
  std::vector<std::string> path;
  for (size_t i = 0; i < tree.size(); ++i) {
    const NamedCallNode& n = tree[i];
    path.resize(n.node.depth);
    path.push_back(n.node.depth == 0 ? label : n.name);
    uint64_t children = 0;
    for (size_t j = i + 1; j < tree.size() && tree[j].node.depth > n.node.depth; ++j)
      if (tree[j].node.depth == n.node.depth + 1) children += tree[j].node.cost_ns;
    const uint64_t self = n.node.cost_ns > children ? n.node.cost_ns - children : 0;
    if (!self) continue;
    std::vector<std::string> frames;
    for (const auto& f : path)
      if (!f.empty()) frames.push_back(f);
    if (frames.empty()) frames.push_back("[message]");
    (*out)[frames] += self;
  }
}

}  // namespace

void SampledTreeOptions::Declare(OptionSet& options) {
  options.Count("sampled-max-nodes", &max_nodes, 1, 100000,
                "node limit of sampled call trees (Matrix's trim rule; they are deeper than method trees)");
  OptionDeclaration scope;
  scope.name = "folded-scope";
  scope.value_name = "slow|session";
  scope.help =
      "-f folded: the stacks of each slow message, frame and startup (slow), or every sample of the "
      "session (session)";
  scope.default_text = folded_scope;
  scope.set = [this](std::string_view v) { return OneOf("folded-scope", v, {"slow", "session"}, &folded_scope); };
  options.Custom(std::move(scope));
  OptionDeclaration source;
  source.name = "folded-source";
  source.value_name = "sampled|instrumented";
  source.help = "-f folded: stacks from stack samples, or from method-beat call trees (self time per node)";
  source.default_text = folded_source;
  source.set = [this](std::string_view v) {
    return OneOf("folded-source", v, {"sampled", "instrumented"}, &folded_source);
  };
  options.Custom(std::move(source));
}

SampledTreeTracer::SampledTreeTracer(const SampledTreeOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {
  // Slow is what the other reports call slow: their thresholds, read from their options.
  if (const AnalysisOptions* all = context_.analysis) {
    evil_threshold_ns_ = static_cast<const EvilMethodOptions&>(all->Of("evil_method")).threshold_ns;
    jank_threshold_ns_ = static_cast<const FrameOptions&>(all->Of("frames")).jank_tree_threshold_ns;
    const auto& startup = static_cast<const StartupOptions&>(all->Of("startup"));
    warm_threshold_ns_ = startup.warm_threshold_ns;
    splash_ = startup.splash;
  } else {
    evil_threshold_ns_ = EvilMethodOptions{}.threshold_ns;
    jank_threshold_ns_ = FrameOptions{}.jank_tree_threshold_ns;
    warm_threshold_ns_ = StartupOptions{}.warm_threshold_ns;
  }
  any_tree_threshold_ns_ = std::min({evil_threshold_ns_, jank_threshold_ns_, warm_threshold_ns_});
}

void SampledTreeTracer::OnOtherEvent(const Event& event) {
  if (const auto* sample = std::get_if<StackSample>(&event)) {
    OnSample(*sample);
  } else if (const auto* sw = std::get_if<ThreadSwitch>(&event)) {
    OnSwitch(*sw);
  } else if (const auto* start = std::get_if<SessionStart>(&event)) {
    sample_hz_ = start->sample_hz;
    dwarf_ = start->dwarf_unwind;
  }
}

void SampledTreeTracer::OnSample(const StackSample& e) {
  Thread& t = threads_[e.tid];
  Sample s;
  s.frames = std::make_shared<const std::vector<std::string>>(e.frames);
  s.ts_ns = e.ts_ns;
  s.on_cpu = e.on_cpu;
  s.stop = e.stop;
  // Samples come in time order per thread; keep the deque sorted if one does not.
  if (!s.on_cpu) t.unsettled_from_ns = std::min(t.unsettled_from_ns, s.ts_ns);
  auto at = t.samples.end();
  while (at != t.samples.begin() && std::prev(at)->ts_ns > s.ts_ns) --at;
  t.samples.insert(at, std::move(s));
}

void SampledTreeTracer::OnSwitch(const ThreadSwitch& sw) {
  if (!sample_hz_) return;  // no stack samples in this session
  Thread& t = threads_[sw.tid];
  if (sw.off_cpu) {
    // Its sample (same timestamp) came first; a sample lost on the way leaves the time
    // without a stack, still counted.
    Sample* match = nullptr;
    for (auto it = t.samples.rbegin(); it != t.samples.rend() && it->ts_ns >= sw.ts_ns; ++it)
      if (it->ts_ns == sw.ts_ns && !it->on_cpu && !it->switch_seen) match = &*it;
    if (!match) {
      Sample s;
      s.ts_ns = sw.ts_ns;
      s.on_cpu = false;
      s.stop = "no stack sample";
      t.unsettled_from_ns = std::min(t.unsettled_from_ns, s.ts_ns);
      auto at = t.samples.end();
      while (at != t.samples.begin() && std::prev(at)->ts_ns > s.ts_ns) --at;
      match = &*t.samples.insert(at, std::move(s));
    }
    match->switch_seen = true;
    match->reason = ClassifyOffCpu(sw.state, sw.kernel_stack);
    return;
  }
  // Back on CPU: the latest off-CPU stretch ends.
  for (auto it = t.samples.rbegin(); it != t.samples.rend(); ++it) {
    if (it->on_cpu || !it->switch_seen) continue;
    if (!it->off_end_ns && it->ts_ns <= sw.ts_ns) it->off_end_ns = sw.ts_ns;
    break;
  }
  // A span that begins later begins after this record: a thread that wakes without
  // dispatching anything does not keep its samples.
  t.last_event_ns = std::max(t.last_event_ns, sw.ts_ns);
  Settle(t, sw.ts_ns);
  Prune(sw.tid, t);
}

// The thread ran at `running_ns` (a switch-in, a probe hit): every off-CPU stretch that
// began before has had its switch records (they come before the thread's later records),
// unless the record ring dropped them. Such a stretch would stay "still off CPU" forever and
// keep every later sample queued (Prune stops at it): its reason stays unknown and it ends
// at the next sample, or at `running_ns`, the latest it can have ended.
void SampledTreeTracer::SettleSamples(Thread& t, uint64_t running_ns) {
  uint64_t next_ns = running_ns, still = UINT64_MAX;
  for (auto it = t.samples.rbegin(); it != t.samples.rend() && it->ts_ns >= t.unsettled_from_ns; ++it) {
    if (it->on_cpu) {
      next_ns = std::min(next_ns, it->ts_ns);
      continue;
    }
    if (it->ts_ns >= running_ns) {
      if (!it->switch_seen || !it->off_end_ns) still = it->ts_ns;
      continue;
    }
    if (!it->switch_seen || !it->off_end_ns) {
      if (!it->switch_seen) {
        it->switch_seen = true;
        it->reason = "unknown";  // the switch record said why
      }
      if (!it->off_end_ns) it->off_end_ns = std::max(next_ns, it->ts_ns);
      context_.stats->Add(StatId::switch_record_lost);
    }
    next_ns = it->ts_ns;
  }
  t.unsettled_from_ns = still;
}

void SampledTreeTracer::EndSlowOrUnfinished(const Span& span) {
  if (span.close != SpanClose::kUnfinished) Settle(threads_[span.tid], span.end_ns);
  if (span.cost_ns() >= any_tree_threshold_ns_) BuildTreeOf(span);
  if (span.end_event) Ran(span.tid, span.end_ns);
}

void SampledTreeTracer::OnStartupRole(const ProbeEvent& e) {
  if (e.role == Role::kAppCreateBegin && !startup_ && !cold_done_) startup_ = {{e.tid, e.ts_ns}};
  if (e.role == Role::kActivityFocus && startup_ && !cold_done_) {
    const EventArg* name = e.Arg("name");
    const std::string activity = name && name->text ? *name->text : "";
    if (std::find(splash_.begin(), splash_.end(), activity) == splash_.end()) {
      // The cold start ends at the first focused activity that is not a splash screen.
      cold_done_ = true;
      auto [tid, begin] = *startup_;
      if (sample_hz_) cold_ = {{begin, e.ts_ns, Build(tid, begin, e.ts_ns)}};
      startup_.reset();
    }
  }
}

void SampledTreeTracer::ForgetOpen(uint64_t span_id) {
  for (auto it = open_.rbegin(); it != open_.rend(); ++it)
    if (it->id == span_id) {
      open_.erase(std::next(it).base());
      return;
    }
}

void SampledTreeTracer::BuildTreeOf(const Span& span) {
  const bool ended = span.close == SpanClose::kEnded;
  if (span.kind == SpanKind::kMessage && ended && span.cost_ns() >= evil_threshold_ns_) {
    messages_[{span.tid, span.begin_ns}] = Build(span.tid, span.begin_ns, span.end_ns);
  } else if (span.kind == SpanKind::kFrame && span.close != SpanClose::kUnfinished &&
             span.cost_ns() >= jank_threshold_ns_) {
    frames_[{span.tid, span.begin_ns}] = Build(span.tid, span.begin_ns, span.end_ns);
  } else if (span.kind == SpanKind::kLaunch && ended && cold_done_ && span.cost_ns() >= warm_threshold_ns_) {
    warm_[span.begin_ns] = Build(span.tid, span.begin_ns, span.end_ns);
  }
}

SampledCallTree SampledTreeTracer::Build(uint32_t tid, uint64_t begin_ns, uint64_t end_ns) {
  std::vector<WeightedStack> stacks;
  uint64_t off_total = 0;
  size_t on_samples = 0;
  auto& samples = threads_[tid].samples;
  for (const Sample& s : samples) {
    if (s.ts_ns > end_ns) break;
    if (s.on_cpu) {
      if (s.ts_ns >= begin_ns) ++on_samples;
      continue;
    }
    const uint64_t off_end = s.off_end_ns ? s.off_end_ns : end_ns;
    const uint64_t from = std::max(s.ts_ns, begin_ns), to = std::min(off_end, end_ns);
    if (to > from) off_total += to - from;
  }
  const uint64_t span_ns = end_ns - begin_ns;
  const uint64_t on_cpu_ns = span_ns > off_total ? span_ns - off_total : 0;
  // Samples are uniform in CPU time: each on-CPU sample stands for an equal share of it.
  uint64_t given = 0;
  size_t index = 0;
  for (const Sample& s : samples) {
    if (s.ts_ns > end_ns) break;
    WeightedStack w;
    w.frames = s.frames.get();
    w.ts_ns = s.ts_ns;
    w.on_cpu = s.on_cpu;
    w.stop = s.stop;
    if (s.on_cpu) {
      if (s.ts_ns < begin_ns) continue;
      ++index;
      const uint64_t share = on_cpu_ns * index / on_samples;  // no rounding drift
      w.weight_ns = share - given;
      given = share;
    } else {
      const uint64_t off_end = s.off_end_ns ? s.off_end_ns : end_ns;
      const uint64_t from = std::max(s.ts_ns, begin_ns), to = std::min(off_end, end_ns);
      if (to <= from) continue;
      w.weight_ns = to - from;
      w.reason = s.reason;
    }
    stacks.push_back(std::move(w));
  }
  SampledCallTree tree = BuildSampledTree(stacks, span_ns, on_cpu_ns, options_.max_nodes);
  tree.sample_hz = sample_hz_;
  tree.dwarf = dwarf_;
  for (const auto& [reason, n] : tree.walk_stops)
    if (reason != "no stack sample") context_.stats->Add(StatId::stack_walk_truncated, n);
  return tree;
}

// Drops the samples no span can still want: older than every open span of the thread (and
// the startup window), or, with none open, than the thread's latest event (a span that
// begins later begins after it).
void SampledTreeTracer::PruneSamples(uint32_t tid, Thread& t) {
  uint64_t keep_from = t.last_event_ns;
  for (const OpenSpan& open : open_)
    if (open.tid == tid) keep_from = std::min(keep_from, open.begin_ns);
  if (startup_ && startup_->first == tid) keep_from = std::min(keep_from, startup_->second);
  while (!t.samples.empty()) {
    const Sample& s = t.samples.front();
    if (!s.on_cpu && (!s.switch_seen || !s.off_end_ns)) break;  // still off CPU: its weight is unknown
    const uint64_t end = s.on_cpu ? s.ts_ns : s.off_end_ns;
    if (end >= keep_from) break;
    if (options_.folded_scope == "session" && options_.folded_source == "sampled") AddToSession(tid, s);
    t.samples.pop_front();
  }
}

void SampledTreeTracer::AddToSession(uint32_t tid, const Sample& s) {
  std::vector<std::string> frames;
  if (context_.session && tid != context_.session->pid) frames.push_back(fmt::format("[thread {}]", tid));
  if (s.frames && !s.frames->empty()) {
    if (!s.stop.empty()) frames.push_back("[unknown callers]");
    frames.insert(frames.end(), s.frames->rbegin(), s.frames->rend());
  } else {
    frames.push_back("[no stack]");
  }
  uint64_t weight = 0;
  if (s.on_cpu) {
    weight = sample_hz_ ? 1'000'000'000ull / sample_hz_ : 0;  // the nominal period
  } else {
    frames.push_back(OffCpuFrame(s.reason));
    weight = s.off_end_ns > s.ts_ns ? s.off_end_ns - s.ts_ns : 0;
  }
  if (weight) session_[frames] += weight;
}

void SampledTreeTracer::Folded(Report& report) {
  const uint64_t base = report.session.begin_ns;
  std::vector<FoldedStack>& out = report.folded;
  if (options_.folded_source == "instrumented") {
    std::map<std::vector<std::string>, uint64_t> merged;
    const bool session = options_.folded_scope == "session";
    auto add = [&](const std::string& label, const std::vector<NamedCallNode>& tree) {
      if (tree.empty()) return;
      if (session) {
        AddInstrumented("", tree, &merged);
      } else {
        std::map<std::vector<std::string>, uint64_t> one;
        AddInstrumented(label, tree, &one);
        for (auto& [frames, ns] : one) out.push_back({frames, ns});
      }
    };
    for (const EvilMethodReport& e : report.evil_methods)
      if (e.has_beats) add(Label(MessageName(e.message), e.message.begin_ns, base), e.tree);
    for (const FrameRecord& f : report.frames.frames)
      add(Label(fmt::format("frame {}", f.frame_id), f.begin_ns, base), f.tree);
    if (report.startup.app_create_begin_ns)
      add(Label("startup", *report.startup.app_create_begin_ns, base), report.startup.tree);
    for (const WarmStart& w : report.startup.warm_starts)
      add(Label("warm start " + w.activity, w.launch_ns, base), w.tree);
    for (auto& [frames, ns] : merged) out.push_back({frames, ns});
    return;
  }
  if (options_.folded_scope == "session") {
    for (auto& [frames, ns] : session_) out.push_back({frames, ns});
    return;
  }
  for (const EvilMethodReport& e : report.evil_methods)
    AddFolded(Label(MessageName(e.message), e.message.begin_ns, base), e.sampled, &out);
  for (const FrameRecord& f : report.frames.frames)
    AddFolded(Label(fmt::format("frame {}", f.frame_id), f.begin_ns, base), f.sampled, &out);
  if (report.startup.app_create_begin_ns)
    AddFolded(Label("startup", *report.startup.app_create_begin_ns, base), report.startup.sampled, &out);
  for (const WarmStart& w : report.startup.warm_starts)
    AddFolded(Label("warm start " + w.activity, w.launch_ns, base), w.sampled, &out);
}

void SampledTreeTracer::Contribute(Report& report) {
  for (auto& [tid, t] : threads_) {
    (void)t;
    if (options_.folded_scope == "session" && options_.folded_source == "sampled") {
      // What is left: weights of stretches still open end with the session.
      for (Sample& s : t.samples) {
        if (!s.on_cpu && !s.off_end_ns) s.off_end_ns = std::max(s.ts_ns, report.session.end_ns);
        AddToSession(tid, s);
      }
    }
  }
  for (EvilMethodReport& e : report.evil_methods) {
    auto it = messages_.find({e.message.tid, e.message.begin_ns});
    if (it != messages_.end()) e.sampled = std::move(it->second);
  }
  for (FrameRecord& f : report.frames.frames) {
    auto it = frames_.find({f.tid, f.begin_ns});
    // The same frames as get a method tree: janky (deadline missed) and long.
    if (it != frames_.end() && f.deadline_missed) f.sampled = std::move(it->second);
  }
  StartupReport& s = report.startup;
  if (cold_ && s.over_threshold && s.app_create_begin_ns && *s.app_create_begin_ns == std::get<0>(*cold_) &&
      s.care_focus_ns && *s.care_focus_ns == std::get<1>(*cold_))
    s.sampled = std::move(std::get<2>(*cold_));
  for (WarmStart& w : s.warm_starts) {
    auto it = warm_.find(w.launch_ns);
    if (it != warm_.end() && w.over_threshold) w.sampled = std::move(it->second);
  }
  // The interpreted stack of a stalled message (runtimes with method beats: the methods
  // still running in the open slice), innermost first, next to the native stacks.
  for (StallReport& stall : report.stalls) {
    std::vector<std::string> open;
    for (const NamedCallNode& n : stall.tree) {
      if (n.node.depth == 0 || !n.node.unfinished) continue;
      open.resize(n.node.depth - 1);
      open.push_back(n.name);
    }
    stall.interpreted_stack.assign(open.rbegin(), open.rend());
  }
  Folded(report);
}

}  // namespace looptrace
