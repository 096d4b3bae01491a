#include "looptrace/tracers/anr.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace looptrace {
namespace {

bool AnyFrame(const std::vector<std::string>& stack, std::initializer_list<std::string_view> needles) {
  for (const auto& frame : stack)
    for (auto needle : needles)
      if (frame.find(needle) != std::string::npos) return true;
  return false;
}

constexpr uint32_t kTaskUninterruptible = 0x2;

}  // namespace

std::string ClassifyOffCpu(uint32_t state, const std::vector<std::string>& kernel_stack) {
  if (state == 0) return "preempted";  // still runnable: it lost the CPU, it did not wait
  if (AnyFrame(kernel_stack, {"futex_wait", "futex_lock_pi", "rt_mutex", "__mutex_lock",
                              "rwsem_down", "__down"}))
    return "lock";
  if (AnyFrame(kernel_stack, {"io_schedule", "blk_", "bio_", "folio_wait", "wait_on_page",
                              "ext4_", "xfs_", "btrfs_", "jbd2", "file_write_and_wait",
                              "filemap_fdatawait", "__filemap_fdatawait", "nvme", "submit_bio"}))
    return "io";
  if (AnyFrame(kernel_stack, {"do_nanosleep", "hrtimer_nanosleep", "clock_nanosleep", "msleep"}))
    return "sleep";
  if (AnyFrame(kernel_stack, {"ep_poll", "do_epoll_wait", "do_sys_poll", "do_select", "poll_schedule",
                              "pipe_read", "unix_stream_read", "sk_wait", "tcp_recvmsg"}))
    return "poll";
  if (state & kTaskUninterruptible) return "io";  // D state without a known frame: most likely I/O
  return "other";
}

std::vector<uint32_t> FindDeadlock(const std::vector<ThreadSnapshot>& threads, uint32_t start) {
  std::map<uint32_t, uint32_t> waits_on;  // tid -> owner of the futex it waits on
  for (const auto& t : threads)
    if (t.futex_address && t.futex_owner_tid && t.futex_owner_tid != t.tid)
      waits_on[t.tid] = t.futex_owner_tid;
  std::vector<uint32_t> path = {start};
  std::set<uint32_t> seen = {start};
  uint32_t at = start;
  while (waits_on.contains(at)) {
    at = waits_on[at];
    if (at == start) return path;
    if (!seen.insert(at).second) return {};  // a cycle that does not include `start`
    path.push_back(at);
  }
  return {};
}

AnrTracer::AnrTracer(AnrOptions options, Stats* stats, const MethodNamer* namer,
                     const LooperMonitor* looper)
    : options_(options), stats_(stats), namer_(namer), looper_(looper) {}

std::vector<NamedCallNode> AnrTracer::Tree(const MethodBeats& beats, std::string* stack_key) {
  auto nodes = BuildCallTree(beats, options_.tree, stats_);
  TrimCallTree(&nodes, std::max<size_t>(options_.max_nodes, 1));
  uint64_t max_cost = 0;
  for (const auto& n : nodes) max_cost = std::max(max_cost, n.cost_ns);
  if (stack_key) {
    if (const CallNode* key = StackKeyNode(nodes, max_cost))
      *stack_key = beats.kind == MethodIdKind::kId || key->id == kDispatchMethodId
                       ? fmt::format("{}|", key->id)
                       : fmt::format("{:#x}|", key->id);
  }
  std::vector<NamedCallNode> out;
  for (const auto& n : nodes) out.push_back({n, NameMethod(namer_, &beats, n.id, stats_)});
  return out;
}

std::string AnrTracer::CurrentFrame(uint32_t tid) const {
  auto it = frame_.find(tid);
  return it == frame_.end() ? "" : it->second;
}

void AnrTracer::OnProbe(const ProbeEvent& e) {
  auto arg = [&](std::string_view name) -> uint64_t {
    const EventArg* a = e.Arg(name);
    return a ? a->value : 0;
  };
  auto text = [&](std::string_view name) -> std::string {
    const EventArg* a = e.Arg(name);
    return a && a->text ? *a->text : "";
  };
  switch (e.role) {
    case Role::kFrameBegin:
      frame_[e.tid] = fmt::format("frame {}", arg("frame_id"));
      break;
    case Role::kFrameEnd:
      frame_.erase(e.tid);
      break;
    case Role::kPhaseBegin: {
      static constexpr const char* kPhases[] = {"INPUT", "ANIMATION", "INSETS_ANIMATION", "TRAVERSAL", "COMMIT"};
      uint64_t phase = arg("phase");
      std::string base = CurrentFrame(e.tid);
      if (size_t cut = base.find(" phase "); cut != std::string::npos) base.resize(cut);
      frame_[e.tid] = (base.empty() ? "frame ?" : base) + " phase " +
                      (phase < 5 ? kPhases[phase] : std::to_string(phase));
      break;
    }
    case Role::kActivityFocus:
      if (!text("name").empty()) scene_ = text("name");
      break;
    case Role::kIdleBegin:
      open_idle_[e.tid] = {e.ts_ns, text("name")};
      break;
    case Role::kIdleEnd: {
      auto it = open_idle_.find(e.tid);
      if (it == open_idle_.end()) break;
      auto [begin, name] = it->second;
      open_idle_.erase(it);
      if (e.ts_ns - begin < options_.idle_lag_threshold_ns) break;
      SpanLagReport lag{"idle_lag", e.tid, begin, e.ts_ns, name.empty() ? "idle handler" : name, {}, scene_};
      if (auto b = span_beats_.find({"idle", begin}); b != span_beats_.end()) {
        lag.tree = Tree(b->second, nullptr);
        span_beats_.erase(b);
      }
      span_lags_.push_back(std::move(lag));
      break;
    }
    case Role::kInputReceive:
      open_inputs_[arg("seq")] = {e.tid, e.ts_ns};
      break;
    case Role::kInputFinish: {
      auto it = open_inputs_.find(arg("seq"));
      if (it == open_inputs_.end()) break;
      auto [tid, begin] = it->second;
      uint64_t seq = it->first;
      open_inputs_.erase(it);
      if (e.ts_ns - begin < options_.input_lag_threshold_ns) break;
      SpanLagReport lag{"input_lag", tid, begin, e.ts_ns, fmt::format("input {}", seq), {}, scene_};
      if (auto b = span_beats_.find({"input", begin}); b != span_beats_.end()) {
        lag.tree = Tree(b->second, nullptr);
        span_beats_.erase(b);
      }
      span_lags_.push_back(std::move(lag));
      break;
    }
    case Role::kBarrierPost: {
      BarrierLeakReport b;
      b.tid = e.tid;
      b.token = arg("token");
      b.begin_ns = e.ts_ns;
      barriers_[b.token] = b;
      break;
    }
    case Role::kBarrierRemove: {
      auto it = barriers_.find(arg("token"));
      if (it == barriers_.end()) break;
      BarrierLeakReport b = it->second;
      barriers_.erase(it);
      b.end_ns = e.ts_ns;
      b.removed = true;
      if (b.end_ns - b.begin_ns >= options_.barrier_threshold_ns && b.sync_messages_enqueued > 0)
        barrier_leaks_.push_back(b);
      break;
    }
    case Role::kMessageEnqueue:
      if (arg("async") == 0)
        for (auto& [token, b] : barriers_) ++b.sync_messages_enqueued;
      break;
    default:
      break;
  }
}

void AnrTracer::OnMessageEnd(const Message& m) {
  // Every stall snapshot of this message (LAG, ANR) ends now.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (std::get<0>(it->first) == m.tid && std::get<1>(it->first) == m.begin_ns) {
      PendingStall pending = std::move(it->second);
      it = pending_.erase(it);
      pending.report.message.end_ns = m.end_ns;
      Finalize(std::move(pending), m.end_ns, true);
    } else {
      ++it;
    }
  }
  if (looper_->OpenMessages(m.tid).empty()) {
    // No message open: keep only a little off-CPU history.
    auto& intervals = intervals_[m.tid];
    while (!intervals.empty() && intervals.front().end_ns < m.end_ns) intervals.pop_front();
  }
}

void AnrTracer::OnBeats(const MethodBeats& beats) {
  if (beats.span == "idle" || beats.span == "input") span_beats_[{beats.span, beats.begin_ns}] = beats;
  if (beats.span != "open") return;
  // The open slice of a stalled message, copied with its snapshot.
  for (auto& [key, pending] : pending_)
    if (std::get<0>(key) == beats.tid && std::get<1>(key) == beats.begin_ns && !pending.open_beats)
      pending.open_beats = beats;
}

void AnrTracer::OnSwitch(const ThreadSwitch& e) {
  if (e.off_cpu) {
    OffCpuInterval interval;
    interval.begin_ns = e.ts_ns;
    interval.state = e.state;
    interval.kernel_stack = e.kernel_stack;
    interval.reason = ClassifyOffCpu(e.state, e.kernel_stack);
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
  if (!looper_->OpenMessages(e.tid).empty()) intervals_[e.tid].push_back(std::move(interval));
}

void AnrTracer::OnWakeup(const Wakeup& e) { last_wakeup_[e.tid] = e; }

void AnrTracer::OnSnapshot(const StallSnapshot& snapshot) {
  const Message* message = nullptr;
  for (const Message* open : looper_->OpenMessages(snapshot.tid))
    if (open->begin_ns == snapshot.message_begin_ns) message = open;
  PendingStall pending;
  StallReport& r = pending.report;
  r.anr = snapshot.anr;
  r.threshold_ns = snapshot.anr ? options_.anr_threshold_ns : options_.lag_threshold_ns;
  r.snapshot = snapshot;
  if (message) {
    r.message = *message;
  } else {
    r.message.tid = snapshot.tid;
    r.message.begin_ns = snapshot.message_begin_ns;
  }
  r.message.end_ns = snapshot.ts_ns;
  r.frame = CurrentFrame(snapshot.tid);
  r.scene = scene_;
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
  for (const auto& interval : intervals_[tid])
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
  static const std::map<std::string, std::string> kText = {
      {"lock", "lock wait"}, {"io", "disk I/O"},          {"sleep", "sleep"},
      {"poll", "poll/epoll wait"}, {"preempted", "waiting for a CPU"}, {"other", "blocked"}};
  auto text = [&](const std::string& reason) { return kText.contains(reason) ? kText.at(reason) : reason; };
  r.deadlock_cycle = FindDeadlock(r.snapshot.threads, tid);
  const ThreadSnapshot* self = r.snapshot.threads.empty() ? nullptr : &r.snapshot.threads.front();
  std::string seen;
  if (self && self->state != 'R') {
    seen = self->futex_address ? "lock"
                               : ClassifyOffCpu(self->state == 'D' ? kTaskUninterruptible : 1, self->kernel_stack);
    if (seen == "other") seen.clear();
  }
  if (!r.deadlock_cycle.empty()) {
    r.stuck_reason = "deadlock";
  } else if (!seen.empty()) {
    r.stuck_reason = text(seen);
  } else if (!r.off_cpu_by_reason.empty() && r.off_cpu_by_reason.front().total_ns > r.on_cpu_ns) {
    r.stuck_reason = text(r.off_cpu_by_reason.front().reason);
  } else {
    r.stuck_reason = "running";
  }
  if (pending.open_beats) r.tree = Tree(*pending.open_beats, &r.stack_key);
  stalls_.push_back(std::move(r));
}

void AnrTracer::OnSignal(const SignalSent& signal, uint32_t pid) {
  SignalAnrReport r;
  r.signal = signal;
  r.from_self = signal.sender_pid == pid;
  r.scene = scene_;
  auto open = looper_->OpenMessages(pid);
  if (!open.empty()) {
    r.stalled = true;
    r.message = *open.front();
    r.message.end_ns = std::max(signal.ts_ns, r.message.begin_ns);
  }
  signals_.push_back(std::move(r));
}

void AnrTracer::Finish(uint64_t end_ns) {
  for (auto& [key, pending] : pending_) Finalize(std::move(pending), end_ns, false);
  pending_.clear();
  for (auto& [token, b] : barriers_) {
    b.end_ns = end_ns;
    if (b.end_ns - b.begin_ns >= options_.barrier_threshold_ns && b.sync_messages_enqueued > 0)
      barrier_leaks_.push_back(b);
  }
  barriers_.clear();
  for (auto& [tid, idle] : open_idle_) {
    if (end_ns - idle.first >= options_.idle_lag_threshold_ns)
      span_lags_.push_back({"idle_lag", tid, idle.first, end_ns, idle.second, {}, scene_});
  }
  for (auto& [seq, input] : open_inputs_) {
    if (end_ns - input.second >= options_.input_lag_threshold_ns)
      span_lags_.push_back({"input_lag", input.first, input.second, end_ns, fmt::format("input {}", seq), {}, scene_});
  }
}

void AnrTracer::Contribute(Report* report) {
  auto by_time = [](const auto& a, const auto& b) { return a.message.begin_ns < b.message.begin_ns; };
  std::stable_sort(stalls_.begin(), stalls_.end(), [&](const StallReport& a, const StallReport& b) {
    if (a.message.begin_ns != b.message.begin_ns) return by_time(a, b);
    return !a.anr && b.anr;
  });
  report->stalls = std::move(stalls_);
  report->signal_anrs = std::move(signals_);
  std::stable_sort(span_lags_.begin(), span_lags_.end(),
                   [](const SpanLagReport& a, const SpanLagReport& b) { return a.begin_ns < b.begin_ns; });
  report->span_lags = std::move(span_lags_);
  report->barrier_leaks = std::move(barrier_leaks_);
}

}  // namespace looptrace
