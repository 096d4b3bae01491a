#include "looptrace/tracers/anr.h"

#include "looptrace/tracers/messages.h"
#include "looptrace/tracers/stall_causes.h"

#include <algorithm>

namespace looptrace {
namespace {

// The task state of a thread's last switch-out, as it exits (TASK_DEAD): it never runs again.
constexpr uint32_t kTaskDead = 0x80;

}  // namespace

void AnrOptions::Declare(OptionSet&) {}

AnrTracer::AnrTracer(const AnrOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {}

std::vector<WatchThreshold> AnrTracer::Watches() const {
  return {{SpanKind::kMessage, context_.common->lag_threshold_ns, "lag", false},
          {SpanKind::kMessage, context_.common->anr_threshold_ns, "anr", true}};
}

bool AnrTracer::MessageOpen(uint32_t tid) const {
  return context_.spans->Innermost(tid, SpanKind::kMessage) != nullptr;
}

void AnrTracer::OnEvent(const Event& event) {
  if (const auto* sw = std::get_if<ThreadSwitch>(&event))
    OnSwitch(*sw);
  else if (const auto* wakeup = std::get_if<Wakeup>(&event))
    last_wakeup_[wakeup->tid] = *wakeup;
  else if (const auto* snapshot = std::get_if<StallSnapshot>(&event))
    OnSnapshot(*snapshot);
  else if (const auto* signal = std::get_if<SignalSent>(&event))
    OnSignal(*signal);
  else if (const auto* beats = std::get_if<MethodBeats>(&event))
    OnOpenBeats(*beats);
}

void AnrTracer::EndStalls(const Span& span) {
  const bool finished = span.close == SpanClose::kEnded;
  // Every stall snapshot of this message (LAG, ANR) ends now; one whose end record was lost
  // (closed by the next message, message_end_lost) at the latest it can have ended, not
  // finished, so its snapshot and open slice are not held for the rest of the session.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (std::get<0>(it->first) == span.tid && std::get<1>(it->first) == span.begin_ns) {
      PendingStall pending = std::move(it->second);
      it = pending_.erase(it);
      pending.report.message.end_ns = span.end_ns;
      Finalize(std::move(pending), span.end_ns, finished);
    } else {
      ++it;
    }
  }
}

void AnrTracer::TrimIntervals(const Span& span) {
  if (MessageOpen(span.tid)) return;
  // No message open: keep only a little off-CPU history.
  if (auto it = intervals_.find(span.tid); it != intervals_.end()) {
    auto& intervals = it->second;
    while (!intervals.empty() && intervals.front().end_ns < span.end_ns) intervals.pop_front();
    if (intervals.empty()) intervals_.erase(it);  // no entry per thread that ever had one
  }
}

void AnrTracer::OnOpenBeats(const MethodBeats& beats) {
  if (beats.span != "open") return;
  // The open slice of a stalled message, copied with its snapshot.
  for (auto& [key, pending] : pending_)
    if (std::get<0>(key) == beats.tid && std::get<1>(key) == beats.begin_ns && !pending.open_beats)
      pending.open_beats = beats;
}

void AnrTracer::OnSwitch(const ThreadSwitch& e) {
  if (e.off_cpu && (e.state & kTaskDead)) {
    // The thread exited: it waits for nothing. Nothing of it is kept, so a later thread
    // given its number is not reported off the CPU since this one left.
    off_now_.erase(e.tid);
    last_wakeup_.erase(e.tid);
    if (!MessageOpen(e.tid)) intervals_.erase(e.tid);
    return;
  }
  if (e.off_cpu) {
    OffCpuInterval interval;
    interval.begin_ns = e.ts_ns;
    interval.state = e.state;
    interval.kernel_stack = e.kernel_stack;
    interval.reason = ClassifyOffCpu(e.state, e.kernel_stack, e.wait_syscall);
    off_now_[e.tid] = std::move(interval);
    last_wakeup_.erase(e.tid);
    return;
  }
  auto it = off_now_.find(e.tid);
  if (it == off_now_.end()) return;
  OffCpuInterval interval = std::move(it->second);
  off_now_.erase(it);
  interval.end_ns = std::max(e.ts_ns, interval.begin_ns);
  if (auto w = last_wakeup_.find(e.tid); w != last_wakeup_.end()) {
    interval.waker_tid = w->second.waker_tid;
    interval.waker_comm = w->second.waker_comm;
  }
  // Only intervals inside a running message can matter to a stall report.
  if (MessageOpen(e.tid)) intervals_[e.tid].push_back(std::move(interval));
}

void AnrTracer::OnSnapshot(const StallSnapshot& snapshot) {
  const Span* message = nullptr;
  for (const Span* open : context_.spans->Open(snapshot.tid, SpanKind::kMessage))
    if (open->begin_ns == snapshot.message_begin_ns) message = open;
  PendingStall pending;
  StallReport& r = pending.report;
  r.anr = snapshot.anr;
  r.threshold_ns = snapshot.anr ? context_.common->anr_threshold_ns : context_.common->lag_threshold_ns;
  r.snapshot = snapshot;
  if (message) {
    r.message = MessageOf(*message);
    // An unnamed outer message (a loop iteration, g_main_context_dispatch) is stuck in the
    // innermost named one running inside it: name the stall after that.
    if (r.message.name.empty()) {
      auto open = context_.spans->Open(snapshot.tid, SpanKind::kMessage);
      for (auto it = open.rbegin(); it != open.rend(); ++it)
        if (std::string name = (*it)->ArgText("name"); !name.empty()) {
          r.message.name = name;
          break;
        }
    }
  } else {
    r.message.tid = snapshot.tid;
    r.message.begin_ns = snapshot.message_begin_ns;
  }
  r.message.end_ns = snapshot.ts_ns;
  r.frame = context_.spans->CurrentFrame(snapshot.tid);
  r.scene = context_.spans->scene();
  if (context_.causes) {
    // A monitor wait of the stalled thread, or a GC anywhere, still running now.
    for (const StallCause& c : context_.causes->Within(snapshot.tid, snapshot.ts_ns, snapshot.ts_ns, *context_.spans))
      if (c.open && (pending.open_cause.empty() || c.kind == "monitor")) pending.open_cause = c.kind;
  }
  // One report per message and level: a repeated snapshot does not duplicate it.
  pending_.try_emplace({snapshot.tid, snapshot.message_begin_ns, snapshot.anr}, std::move(pending));
}

void AnrTracer::Finalize(PendingStall pending, uint64_t end_ns, bool finished) {
  StallReport& r = pending.report;
  r.finished = finished;
  r.message.end_ns = std::max(end_ns, r.message.begin_ns);
  const uint32_t tid = r.message.tid;
  // Off-CPU intervals inside [begin, end], longest first.
  std::vector<OffCpuInterval> inside;
  if (auto held = intervals_.find(tid); held != intervals_.end())
    for (const auto& interval : held->second)
      if (interval.end_ns > r.message.begin_ns && interval.begin_ns < r.message.end_ns) inside.push_back(interval);
  if (auto it = off_now_.find(tid); it != off_now_.end() && it->second.begin_ns < r.message.end_ns) {
    OffCpuInterval open = it->second;
    open.end_ns = r.message.end_ns;
    open.open = true;
    inside.push_back(open);
  }
  std::map<std::string, ReasonTotal> totals;
  uint64_t off_total = 0;
  for (auto& interval : inside) {
    interval.begin_ns = std::max(interval.begin_ns, r.message.begin_ns);
    interval.end_ns = std::min(interval.end_ns, r.message.end_ns);
    auto& t = totals[interval.reason];
    t.reason = interval.reason;
    t.total_ns += interval.end_ns - interval.begin_ns;
    ++t.count;
    off_total += interval.end_ns - interval.begin_ns;
  }
  r.on_cpu_ns = r.message.cost_ns() > off_total ? r.message.cost_ns() - off_total : 0;
  for (auto& [reason, total] : totals) r.off_cpu_by_reason.push_back(total);
  std::stable_sort(r.off_cpu_by_reason.begin(), r.off_cpu_by_reason.end(),
                   [](const ReasonTotal& a, const ReasonTotal& b) { return a.total_ns > b.total_ns; });
  std::stable_sort(inside.begin(), inside.end(), [](const OffCpuInterval& a, const OffCpuInterval& b) {
    return a.end_ns - a.begin_ns > b.end_ns - b.begin_ns;
  });
  if (inside.size() > options_.max_intervals) inside.resize(options_.max_intervals);
  r.off_cpu = std::move(inside);

  // Why it is stuck: a deadlock; else what the snapshot saw the thread block in; else
  // where the message spent most of its time (on CPU, or off it for one reason).
  static const std::map<std::string, std::string> kCauseText = {{"gc", "garbage collection"},
                                                                {"monitor", "monitor contention"}};
  if (context_.causes) r.causes = context_.causes->Within(tid, r.message.begin_ns, r.message.end_ns, *context_.spans);
  // A cause already running at the snapshot whose begin record had not reached user space
  // when the snapshot was taken (a loaded machine): known now.
  if (pending.open_cause.empty())
    for (const StallCause& c : r.causes)
      if (c.begin_ns <= r.snapshot.ts_ns && (c.open || c.end_ns >= r.snapshot.ts_ns) &&
          (c.kind != "monitor" || c.tid == tid) && (pending.open_cause.empty() || c.kind == "monitor"))
        pending.open_cause = c.kind;
  // The runtime cause that took most of the message, if it took at least half of it.
  std::string main_cause;
  uint64_t main_cause_ns = 0;
  for (const auto& [kind, total] : TotalByKind(r.causes))
    if (total > main_cause_ns && total * 2 >= r.message.cost_ns()) {
      main_cause = kind;
      main_cause_ns = total;
    }
  r.deadlock_cycle = FindDeadlock(r.snapshot.threads, tid);
  const ThreadSnapshot* self = r.snapshot.threads.empty() ? nullptr : &r.snapshot.threads.front();
  std::string seen;
  if (self && self->state != 'R') {
    seen = SnapshotWaitReason(*self);
    if (seen == "other") seen.clear();
  }
  if (!r.deadlock_cycle.empty()) {
    r.stuck_reason = "deadlock";
  } else if (!pending.open_cause.empty()) {
    // More precise than the futex or park the runtime blocks in.
    r.stuck_reason = kCauseText.at(pending.open_cause);
  } else if (!seen.empty()) {
    r.stuck_reason = StuckText(seen);
  } else if (!main_cause.empty()) {
    r.stuck_reason = kCauseText.at(main_cause);
  } else if (!r.off_cpu_by_reason.empty() && r.off_cpu_by_reason.front().total_ns > r.on_cpu_ns) {
    r.stuck_reason = StuckText(r.off_cpu_by_reason.front().reason);
  } else {
    r.stuck_reason = "running";
  }
  if (pending.open_beats) {
    NamedCallTree tree = BuildNamedCallTree(*pending.open_beats, context_.common->max_nodes, 0, context_.namer,
                                            context_.stats, options_.tree);
    r.tree = std::move(tree.nodes);
    r.stack_key = std::move(tree.stack_key);
  }
  // The interpreted stack (runtimes with method beats: the methods still running in the open
  // slice), innermost first, next to the native stacks.
  std::vector<std::string> open;
  for (const NamedCallNode& n : r.tree) {
    if (n.node.depth == 0 || !n.node.unfinished) continue;
    open.resize(n.node.depth - 1);
    open.push_back(n.name);
  }
  r.interpreted_stack.assign(open.rbegin(), open.rend());
  stalls_.push_back(std::move(r));
}

void AnrTracer::OnSignal(const SignalSent& signal) {
  const uint32_t pid = context_.session->pid;
  SignalAnrReport r;
  r.signal = signal;
  r.from_self = signal.sender_pid == pid;
  r.scene = context_.spans->scene();
  auto open = context_.spans->Open(pid, SpanKind::kMessage);
  if (!open.empty()) {
    r.stalled = true;
    r.message = MessageOf(*open.front());
    r.message.end_ns = std::max(signal.ts_ns, r.message.begin_ns);
  }
  signals_.push_back(std::move(r));
}

void AnrTracer::Contribute(Report& report) {
  // Snapshots whose message the span tracker never knew end with the session.
  for (auto& [key, pending] : pending_) Finalize(std::move(pending), report.session.end_ns, false);
  pending_.clear();
  auto by_time = [](const auto& a, const auto& b) { return a.message.begin_ns < b.message.begin_ns; };
  std::stable_sort(stalls_.begin(), stalls_.end(), [&](const StallReport& a, const StallReport& b) {
    if (a.message.begin_ns != b.message.begin_ns) return by_time(a, b);
    return !a.anr && b.anr;
  });
  report.stalls = std::move(stalls_);
  report.signal_anrs = std::move(signals_);
}

}  // namespace looptrace
