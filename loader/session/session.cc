#include "loader/session/session.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "loader/plan/attach_order.h"
#include "loader/plan/probe_config.h"
#include "loader/plan/shadow_probes.h"
#include "loader/target/proc_readers.h"
#include "looptrace/report/cost_text.h"
#include "looptrace/util/first_use_cost.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
}

// The signal number if one is pending on the signalfd, else 0.
int TakePendingSignal(int signal_fd) {
  signalfd_siginfo info;
  ssize_t n = read(signal_fd, &info, sizeof(info));
  return n == sizeof(info) ? static_cast<int>(info.ssi_signo) : 0;
}

}  // namespace

Result<UniqueFd> BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return SystemError("sigprocmask", errno);
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return SystemError("signalfd", errno);
  return UniqueFd(fd);
}

Session::Session(const SessionOptions& options, int signal_fd, Pipeline& pipeline)
    : options_(options), signal_fd_(signal_fd), pipeline_(pipeline), events_(pipeline) {}

Session::~Session() {
  if (early_wait_stacks_deferred_) FirstUseScope::SetBusyObserver({});
  pipeline_.SetSliceSource(nullptr);
  pipeline_.SetSnapshotSource(nullptr);
  pipeline_.RemoveObserver(&taps_);
}

void Session::ProcessTaps::OnEvent(const Event& event) {
  if (const auto* wakeup = std::get_if<Wakeup>(&event); wakeup && wakeup->waker_pid == session_.tgid_)
    session_.snapshots_->SetLastWaker(wakeup->tid, wakeup->waker_tid);
  else if (std::holds_alternative<ProcessExec>(event))
    session_.stacks_->OnExec();
}

void Session::OnRecord(const lt_record& record) {
  if (!primed_) {
    // The first record proves the target runs its own image now.
    addresses_->Prime();
    primed_ = true;
  }
  // Detaching takes a while (links of many points); what the target did meanwhile is after
  // the session's end, so not in its report.
  if (record.ts_ns > stop_ns_) {
    loader_stats_.Add(StatId::records_after_end);
    return;
  }
  // Attaching goes group by group: a message begun before the last group was in may miss
  // what those probes see (nested callbacks, names), so the session starts with all of them.
  if (record.type == LT_RECORD_PROBE && record.ts_ns < start_ns_) [[unlikely]] {
    loader_stats_.Add(StatId::records_before_start);
    return;
  }
  decoder_->Decode(record, [this](const Event& event) { threads_named_->OnEvent(event); });
}

void Session::OnSideRecord(std::span<const uint8_t> raw) {
  // Under --cpu-budget the loader's work on stack samples is timed (a sample's Python or
  // JavaScript frames come first, in a record of their own): what of its cost a lower rate
  // sheds is the on-CPU samples' part (CostBudget).
  lt_record_header header{};
  if (raw.size() >= sizeof(header)) std::memcpy(&header, raw.data(), sizeof(header));
  if (header.type == LT_RECORD_WAIT_OUTLIVED && early_waits_) {
    if (auto sample = early_waits_->Read(raw)) threads_named_->OnEvent(Event(std::move(*sample)));
    return;
  }
  const bool timed = budget_ && raw.size() >= sizeof(header);
  const uint64_t began = timed ? NowNs(CLOCK_THREAD_CPUTIME_ID) : 0;
  side_decoded_.clear();
  decoder_->DecodeSide(raw, &side_decoded_);
  for (const Event& event : side_decoded_) threads_named_->OnEvent(event);
  if (!timed) return;
  const uint64_t work_ns = NowNs(CLOCK_THREAD_CPUTIME_ID) - began;
  if (header.type == LT_RECORD_INTERP_STACK) {
    frames_work_ns_ += work_ns;
  } else if (header.type == LT_RECORD_SAMPLE || header.type == LT_RECORD_SAMPLE_COPY) {
    const bool on_cpu = !side_decoded_.empty() && std::holds_alternative<StackSample>(side_decoded_.front()) &&
                        std::get<StackSample>(side_decoded_.front()).on_cpu;
    if (on_cpu) sample_work_ns_ += work_ns + frames_work_ns_;
    frames_work_ns_ = 0;
  }
}

Result<void> Session::Prepare(const Profile& profile, AttachPlan plan, uint32_t tgid) {
  profile_name_ = profile.name;
  message_definition_ = profile.message_definition;
  plan_ = std::move(plan);
  // The loop thread's early waits keep only their system call, and a snapshot that finds one
  // still waiting unwinds its stack then (events.h, LT_STACK_IN_SYSCALL). A uretprobe pending
  // on that stack left the trampoline's address in its return slot, which the shadow stack
  // puts back: kept for this when the plan's entry probes already keep it (no probe hit
  // added); otherwise early waits keep their stacks.
  const bool returns = HasReturnProbes(plan_);
  waits_by_syscall_ = options_.thread_tracking && (!returns || EntryProbesCoverReturns(plan_));
  // Their user stacks too, but for the waits that outlive the early age, read from outside
  // while they still wait (early_wait_stacks.h).
  early_wait_stacks_deferred_ = waits_by_syscall_ && options_.sample_hz > 0 &&
                                EarlyWaitStacks::CanDefer(interpreter_.get(), options_.native_frames);
  shadow_stack_ = NeedsShadowStack(options_.thread_tracking, options_.sample_hz, options_.dwarf_unwind,
                                   KernelFixesUretprobeStacks()) ||
                  (waits_by_syscall_ && returns);
  if (shadow_stack_) AddShadowProbes(&plan_);
  tgid_ = tgid;
  // A runtime's own name for its thread first (a Java thread's), else the kernel's.
  threads_named_.emplace(events_, [this, proc = ThreadNamer::ProcReader(static_cast<pid_t>(tgid))](uint32_t tid) {
    if (interpreter_ && !interpreter_pending_)
      if (auto name = interpreter_->ThreadName(tid)) return *name;
    return proc(tid);
  });
  addresses_.emplace(static_cast<int>(tgid));
  threads_ = options_.threads.mode != ThreadChoice::Mode::kUnset ? options_.threads : profile.thread;
  if (threads_.mode == ThreadChoice::Mode::kUnset) threads_.mode = ThreadChoice::Mode::kMain;
  BpfSessionOptions bpf_options;
  bpf_options.target_tgid = tgid;
  bpf_options.thread_filter = threads_.mode == ThreadChoice::Mode::kAll    ? LT_THREADS_ALL
                              : threads_.mode == ThreadChoice::Mode::kLoop ? LT_THREADS_LOOP
                                                                           : LT_THREADS_MAIN;
  bpf_options.loop_name = threads_.name;
  bpf_options.loop_name_exact = threads_.exact;
  bpf_options.ringbuf_bytes = options_.ringbuf_bytes;
  bpf_options.record_capacity = options_.record_capacity;
  bpf_options.beat_capacity = options_.beat_capacity;
  bpf_options.probe_configs = MakeProbeConfigs(plan_);
  bpf_options.thread_tracking = options_.thread_tracking;
  bpf_options.dwarf_unwind = options_.dwarf_unwind;
  bpf_options.eh_unwind = unwind_rows_.has_value();
  // The default view of an interpreted runtime shows no native callers of its interpreter:
  // BPF walks no further than that (--native-frames: the whole stack).
  bpf_options.eh_view_cut = unwind_rows_ && interpreter_ && !options_.native_frames;
  if (bpf_options.eh_view_cut)
    unwind_rows_->SetInterpreterModules([interpreter = interpreter_.get()](std::string_view module) {
      return interpreter->IsInterpreterModule(module);
    });
  bpf_options.unwind_row_capacity = unwind_rows_ ? unwind_rows_->RowCapacity() : 0;
  bpf_options.sample_records = options_.sample_hz > 0;
  bpf_options.sample_ring_bytes = options_.sample_ring_bytes;
  bpf_options.samples_after_exec = options_.held_child;
  bpf_options.btf_path = options_.btf_path;
  const SwitchStackPolicy switch_stacks = ChooseSwitchStacks(plan_, message_definition_, options_.idle_stacks);
  bpf_options.switch_stacks_idle = switch_stacks.at_idle;
  bpf_options.messages_poll_bounded = switch_stacks.poll_bounded;
  if (shadow_stack_) MarkShadowProbes(plan_, &bpf_options.probe_configs);
  bpf_options.uprobe_points = bpf_options.usdt_points = bpf_options.fast_beats = false;
  bpf_options.waits_by_syscall = waits_by_syscall_;
  bpf_options.early_wait_stacks_deferred = early_wait_stacks_deferred_;
  for (const ResolvedProbe& probe : plan_.probes) {
    (probe.spec.kind == ProbeKind::kUsdt ? bpf_options.usdt_points : bpf_options.uprobe_points) = true;
    bpf_options.fast_beats |= UsesFastBeats(probe);
  }
  if (interpreter_) interpreter_->DescribeLayout(&bpf_options.interpreters);
  ASSIGN_OR_RETURN(bpf_, BpfSession::Open(
                             bpf_options, [this](std::span<const uint8_t> raw) { OnSideRecord(raw); },
                             [this](const lt_record& record) { OnRecord(record); }));
  kernel_stacks_.emplace(bpf_.get());
  // Rows are written once the probes are attached (Join: a running target's; a command's
  // after its exec, at the first drains): a session records from the start without waiting
  // for them, and the few samples before are walked by frame pointers.
  if (unwind_rows_) unwind_rows_->SetBpf(bpf_.get(), bpf_options.unwind_row_capacity);
  stacks_.emplace(static_cast<pid_t>(tgid), addresses_->symbolizer(), &loader_stats_);
  decoder_.emplace(&plan_, &strings_, &loader_stats_, tgid, &*kernel_stacks_, &identities_, &*addresses_);
  decoder_->SetStackResolver(&*stacks_);
  decoder_->SetInterpreter(interpreter_.get(), options_.native_frames);
  interpreter_pending_ = interpreter_ != nullptr;
  LocateInterpreter();
  slicer_.emplace(&plan_, &bpf_->beats(), &strings_, &*addresses_, &loader_stats_, tgid, &identities_);
  if (slicer_->enabled()) pipeline_.SetSliceSource(&*slicer_);
  snapshots_.emplace(static_cast<pid_t>(tgid), bpf_.get(), &*kernel_stacks_, &*stacks_, &loader_stats_,
                     options_.dwarf_unwind, threads_.mode == ThreadChoice::Mode::kAll);
  pipeline_.SetSnapshotSource(this);
  pipeline_.AddObserver(&taps_, EventBit<Wakeup>() | EventBit<ProcessExec>());
  snapshots_->SetInterpreter(interpreter_.get());
  if (early_wait_stacks_deferred_) {
    early_waits_.emplace(bpf_.get(), &*stacks_, &loader_stats_);
    early_waits_->SetInterpreter(interpreter_.get());
  }
  return {};
}

uint32_t Session::LoopThread() {
  if (threads_.mode != ThreadChoice::Mode::kLoop) return tgid_;
  if (!known_loop_tid_) {
    known_loop_tid_ = bpf_->loop_tid();
    if (known_loop_tid_)
      log::V1("loop thread: tid {} \"{}\"", known_loop_tid_,
              ReadFirstLine(fmt::format("/proc/{}/task/{}/comm", tgid_, known_loop_tid_)));
  }
  return known_loop_tid_;
}

void Session::FindLoopThreadByName() {
  if (threads_.mode != ThreadChoice::Mode::kLoop || threads_.name.empty() ||
      !message_definition_.starts_with("wait-bounded ") || !bpf_)
    return;
  const uint32_t current = bpf_->loop_tid();
  if (current && access(fmt::format("/proc/{}/task/{}", tgid_, current).c_str(), F_OK) == 0) return;
  // None yet, or it exited (AWT starts a new event dispatch thread after its last one ended).
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", tgid_), ec)) {
    const auto tid = ParseUnsigned(entry.path().filename().string());
    if (!tid || *tid == current) continue;
    const std::string name = ReadFirstLine(entry.path().string() + "/comm");
    if (threads_.exact ? name != threads_.name : !name.starts_with(threads_.name)) continue;
    bpf_->SetLoopTid(static_cast<uint32_t>(*tid), current);
    known_loop_tid_ = 0;  // LoopThread learns it from BPF
    LoopThread();
    return;
  }
}

void Session::AttachThreadTracking() {
  if (!options_.thread_tracking) {
    if (options_.cpu_budget_percent > 0)
      log::Warning("--cpu-budget is not kept with --no-thread-tracking: no samples to shed, probe hits are not");
    return;
  }
  // Without sampled trees, a low rate still gives snapshots the stacks of busy threads. BPF
  // keeps the loop thread's samples from its first message on (none before one claims it).
  const int hz = options_.sample_hz > 0 ? options_.sample_hz : 49;
  if (auto ok = bpf_->AttachThreadTracking(hz); !ok) {
    log::Warning("thread-state tracing is off: {}", ok.error().message);
    loader_stats_.Add(StatId::thread_tracking_off);
    return;
  }
  if (options_.cpu_budget_percent > 0) budget_.emplace(options_.cpu_budget_percent / 100, hz);
  SampleRuntimeThreads();
  FindLoopThreadByName();
}

Result<void> Session::Attach(pid_t pid) {
  auto groups = bpf_->SplitIntoLinks(AttachGroups(plan_));
  const size_t total = plan_.probes.size();
  auto started = std::chrono::steady_clock::now();
  for (const auto& group : groups) {
    if (int sig = TakePendingSignal(signal_fd_)) {
      size_t attached = bpf_->attached_points();
      bpf_->Detach();
      return MakeError(fmt::format("interrupted by SIG{} while attaching ({} of {} probe points "
                                   "attached, all detached)",
                                   sigabbrev_np(sig), attached, total),
                       ExitCode::kInterrupted);
    }
    RETURN_IF_ERROR(bpf_->Attach(group, pid));
    if (std::chrono::steady_clock::now() - started > std::chrono::seconds(1))
      log::Info("attached {} of {} probe points...", bpf_->attached_points(), total);
  }
  log::V1("attached {} probe points with {}", bpf_->attached_points(),
          bpf_->uses_uprobe_multi() ? "uprobe_multi links" : "one perf-event link each");
  if (size_t skipped = bpf_->skipped_points())
    log::Warning("{} probe point{} matched by a pattern could not be probed and {} skipped (-v lists them)", skipped,
                 skipped == 1 ? "" : "s", skipped == 1 ? "was" : "were");
  return {};
}

void Session::Start(SessionStart start) {
  start.ts_ns = start_ns_ = NowNs(CLOCK_MONOTONIC);
  start.wall_time_ns = NowNs(CLOCK_REALTIME);
  start.profile = profile_name_;
  start.message_definition = message_definition_;
  start.thread_filter = threads_.Describe();
  start.sample_hz = options_.thread_tracking && bpf_->thread_tracking() && options_.sample_hz > 0
                        ? static_cast<uint32_t>(options_.sample_hz)
                        : 0;
  start.dwarf_unwind = options_.dwarf_unwind;
  if (auto hit_ns = bpf_->MeasureUprobeHitNs())
    loader_stats_.Set(StatId::cost_uprobe_hit_ns, *hit_ns);
  else
    log::V1("no uprobe cost measured: {}", hit_ns.error().message);
  for (const auto& p : plan_.probes)
    if (!p.shadow_only)
      start.probes.push_back(
          {p.probe_id, p.spec.role, std::string(ProbeKindName(p.spec.kind)), p.binary_path, p.symbol, p.file_offset});
  events_.OnEvent(start);
  // Only now do the tracers know the probes (FrameTracer: whether frames can come), so the
  // shortest message a report shows with stacks, and the preemptions that need none.
  const uint64_t preempt_after_ns =
      ChooseSwitchStacks(plan_, message_definition_, options_.idle_stacks, ShortestSlowMessageNs(pipeline_))
          .preempt_stacks_after_ns;
  bpf_->SetPreemptStacksAfter(preempt_after_ns);
  loader_stats_.Set(StatId::cost_preempt_stacks_after_ns, preempt_after_ns);
  if (early_wait_stacks_deferred_) {
    loader_stats_.Set(StatId::cost_wait_stacks_after_ns, preempt_after_ns);
    // Deferred once the loader has settled, and not while it reads a file it met first.
    early_wait_deferral_.emplace([bpf = bpf_.get()](bool now) { bpf->DeferEarlyWaitStacks(now); });
    FirstUseScope::SetBusyObserver(
        [deferral = &*early_wait_deferral_](bool busy) { deferral->OnLoaderBusy(busy, NowNs(CLOCK_MONOTONIC)); });
  }
  loader_stats_.Set(StatId::cost_loader_start_cpu_ns, own_cpu_.ElapsedNs());
  first_use_at_start_ns_ = FirstUseScope::TotalNs();
}

void Session::Watchdog(uint64_t now_ns, bool judge_stalls) {
  if (now_ns - last_cpu_sample_ns_ >= 500'000'000) {
    snapshots_->SampleCpu(now_ns);
    FindLoopThreadByName();
    SampleRuntimeThreads();  // threads started since
    last_cpu_sample_ns_ = now_ns;
  }
  if (judge_stalls) pipeline_.Tick(now_ns, trusted_since_ns_);
  if (early_wait_deferral_) early_wait_deferral_->Tick(now_ns);
  // Once a window: each look reads every BPF counter.
  if (budget_ && now_ns - last_budget_ns_ >= CostBudget::kWindowNs) KeepCostBudget(now_ns);
}

void Session::KeepCostBudget(uint64_t now_ns) {
  last_budget_ns_ = now_ns;
  const int hz = budget_->hz();
  const uint64_t sampling_ns = bpf_->SamplerBpfNs() + sample_work_ns_;
  if (budget_->Update(now_ns, CostOf(LiveLosses()).running_ns(), sampling_ns) == hz) return;
  log::V1("cpu budget: sample rate {} -> {} Hz", hz, budget_->hz());
  if (auto ok = bpf_->SetSampleRate(budget_->hz()); !ok) {
    log::Warning("--cpu-budget: {}; the budget is no longer kept", ok.error().message);
    budget_.reset();
    return;
  }
  decoder_->SampleRateChanged(NowNs(CLOCK_MONOTONIC), 1'000'000'000ull / static_cast<uint64_t>(budget_->hz()));
}

StallSnapshot Session::Take(const SnapshotRequest& request) {
  if (!request.on_demand) return snapshots_->Take(request.tid, request.stuck_since_ns, request.anr, request.now_ns);
  Stats scratch;  // incomplete stacks of a dump are not the session's losses
  Stats* session_stats = snapshots_->SwapStats(&scratch);
  StallSnapshot snapshot = snapshots_->Take(request.tid, request.stuck_since_ns, request.anr, request.now_ns);
  snapshots_->SwapStats(session_stats);
  return snapshot;
}

Result<void> Session::Join(EventLoop& loop, int pid_fd, std::function<void()> on_target_exit) {
  SyncUnwindRows();
  // The ring's fd only wakes the loop early (a nudge); Drain() consumes.
  ring_fd_ = bpf_->ring_epoll_fd();
  RETURN_IF_ERROR(loop.Add(ring_fd_, EPOLLIN, [](uint32_t) {}));
  if (pid_fd >= 0) {
    pid_fd_ = pid_fd;
    auto on_exit = std::make_shared<std::function<void()>>(std::move(on_target_exit));
    RETURN_IF_ERROR(loop.Add(pid_fd, EPOLLIN, [this, &loop, on_exit](uint32_t) {
      loop.Remove(pid_fd_);  // level-triggered: once is enough
      pid_fd_ = -1;
      if (stacks_) stacks_->NoteTargetExited();
      (*on_exit)();
    }));
  }
  return {};
}

void Session::Leave(EventLoop& loop) {
  if (ring_fd_ >= 0) loop.Remove(ring_fd_);
  if (pid_fd_ >= 0) loop.Remove(pid_fd_);
  ring_fd_ = pid_fd_ = -1;
}

void Session::LocateInterpreter() {
  if (!interpreter_pending_) return;
  auto located = interpreter_->Locate(&interpreter_config_);
  if (!located) {
    log::Warning("{}", located.error().message);
    interpreter_pending_ = false;
    return;
  }
  if (!*located) return;
  bpf_->PublishInterpreterAddresses(interpreter_config_);
  interpreter_pending_ = false;
  SampleRuntimeThreads();
}

namespace {
// The size of BPF's runtime_sampled map (looptrace.bpf.c): a JVM's threads beyond it are not
// sampled (one map entry each: the CPUs' cpu-clock events sample whatever runs).
constexpr size_t kMaxRuntimeSampled = 256;
}  // namespace

void Session::SampleRuntimeThreads() {
  if (!interpreter_ || interpreter_pending_ || !options_.thread_tracking || options_.sample_hz <= 0 || !bpf_ ||
      !bpf_->thread_tracking())
    return;
  for (uint32_t tid : interpreter_->ThreadsToSample()) {
    // Watched threads' samples are kept anyway: every thread with `threads all`, the loop thread.
    const bool watched = threads_.mode == ThreadChoice::Mode::kAll || tid == known_loop_tid_ ||
                         (tid == tgid_ && threads_.mode == ThreadChoice::Mode::kMain);
    if (watched || runtime_sampled_.contains(tid)) continue;
    if (runtime_sampled_.size() >= kMaxRuntimeSampled) {
      log::V1("{} threads sampled for {}: no more", runtime_sampled_.size(), interpreter_->what());
      return;
    }
    // Marked even when it fails (the thread is gone): not asked again.
    runtime_sampled_.insert(tid);
    if (auto ok = bpf_->SampleUnwatchedThread(static_cast<int>(tid), options_.sample_hz); !ok)
      log::V1("no cpu-clock samples of thread {}: {}", tid, ok.error().message);
  }
}

bool Session::UsesUnwindRows() const {
  return options_.thread_tracking && options_.sample_hz > 0 && !options_.dwarf_unwind && !options_.fp_unwind;
}

void Session::PrepareUnwindRows(int pid, const std::string& exe_path, const std::string& ld_library_path) {
  if (!UsesUnwindRows()) return;
  unwind_rows_.emplace(pid);
  if (options_.held_child) {
    unwind_rows_->Precompile(exe_path, ld_library_path);
  } else {
    unwind_rows_->CompileMapped();
  }
}

void Session::SyncUnwindRows() {
  if (!unwind_rows_) {
    bpf_->BatchSampleWakeups(true);
    return;
  }
  // New mappings (dlopen) are rare once a program runs: a look at its maps once a second.
  // While a command `run` starts (ld.so mapping libraries after its exec) every 100 ms, for
  // two seconds from the first rows out, and every stack sample wakes the loop; a running
  // process (`record -p`) has its libraries mapped, and compiled before attaching (a sample
  // per wake-up there was ~500 wake-ups a second for its first two seconds). Not at every
  // drain: a sample that meets a library without rows comes as a stack copy, and its drain
  // looks at once (Drain); a JVM's maps took ~5% of the loader's CPU read at each sample.
  const uint64_t now = NowNs(CLOCK_MONOTONIC);
  const bool starting =
      unwind_rows_synced_ns_ == 0 || (options_.held_child && now - unwind_rows_first_ns_ < 2'000'000'000);
  bpf_->BatchSampleWakeups(!starting);
  const uint64_t period_ns = starting ? 100'000'000 : 1'000'000'000;
  if (unwind_rows_synced_ns_ != 0 && now - unwind_rows_synced_ns_ < period_ns) return;
  unwind_rows_->Sync();
  if (unwind_rows_->modules() == 0) return;
  if (unwind_rows_first_ns_ == 0) unwind_rows_first_ns_ = now;
  unwind_rows_synced_ns_ = now;
}

Result<void> Session::Drain() {
  LocateInterpreter();
  SyncUnwindRows();
  // Everything before now is in the rings: once they are consumed, the pipeline's view is
  // complete up to here, however long consuming takes (a backlog must not make the spans it
  // ends look older than they are).
  const uint64_t complete_ns = NowNs(CLOCK_MONOTONIC);
  RETURN_IF_ERROR(bpf_->Consume());
  // Stack copies while BPF walks by rows: its walks met a library loaded since the rows were
  // published (dlopen). Publish them at once, not at the next look a second from now.
  if (unwind_rows_ && stacks_->copies_decoded() != copies_seen_) {
    copies_seen_ = stacks_->copies_decoded();
    unwind_rows_synced_ns_ = 0;
    SyncUnwindRows();
  }
  // Records lost since the last look may hold a message's end: its span looks open until a
  // later record settles it (the next begin ends it as lost), so no stall is judged now.
  const uint64_t lost = bpf_->RecordsLost();
  const bool complete = lost == records_lost_seen_;
  // What began before this look may have lost its end: the loss can be as late as the look
  // itself (a long consume runs while the ring fills), not only before complete_ns.
  if (!complete) trusted_since_ns_ = NowNs(CLOCK_MONOTONIC);
  records_lost_seen_ = lost;
  Watchdog(complete_ns, complete);
  return {};
}

Result<std::string> Session::Stream(int pid_fd) {
  // -d counts from here, where the target runs traced: Join's first look at the unwind rows
  // can take a loaded machine half a second, which a short session must not add.
  const uint64_t began_ns = NowNs(CLOCK_MONOTONIC);
  ASSIGN_OR_RETURN(auto loop, EventLoop::Create());
  std::string reason;
  RETURN_IF_ERROR(Join(*loop, pid_fd, [&] {
    // A loader busy past its deadline (a slow first look at the unwind rows on a loaded
    // machine) sees the timer and the exit in one wake-up, in either order: the deadline
    // came first unless the target exited before it, which the loader cannot tell now: -d
    // wins, and the session ends at its deadline (Finish).
    reason = NowNs(CLOCK_MONOTONIC) >= deadline_ns_ ? "duration" : "target-exited";
  }));
  RETURN_IF_ERROR(loop->Add(signal_fd_, EPOLLIN, [&](uint32_t) {
    if (int sig = TakePendingSignal(signal_fd_)) {
      if (reason.empty()) reason = "interrupted";
      log::V1("{} received, stopping", strsignal(sig));
    }
  }));
  UniqueFd timer;
  if (options_.duration_s > 0) {
    timer = UniqueFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
    if (!timer) return SystemError("timerfd_create", errno);
    itimerspec spec{};
    deadline_ns_ = began_ns + static_cast<uint64_t>(options_.duration_s * 1e9);
    stop_ns_ = deadline_ns_;  // records the loop reads late are still after the end
    spec.it_value.tv_sec = static_cast<time_t>(deadline_ns_ / 1'000'000'000ull);
    spec.it_value.tv_nsec = static_cast<long>(deadline_ns_ % 1'000'000'000ull);
    timerfd_settime(timer.get(), TFD_TIMER_ABSTIME, &spec, nullptr);
    RETURN_IF_ERROR(loop->Add(timer.get(), EPOLLIN, [&](uint32_t) {
      if (reason.empty()) reason = "duration";
    }));
  }
  while (reason.empty()) {
    RETURN_IF_ERROR(loop->RunOnce(options_.poll_interval_ms));
    RETURN_IF_ERROR(Drain());
  }
  Leave(*loop);
  return reason;
}

Stats Session::LiveLosses() const {
  Stats losses = bpf_->ReadCounters();
  losses.Merge(loader_stats_);
  losses.Set(StatId::cost_loader_cpu_ns, own_cpu_.ElapsedNs());
  if (first_use_at_start_ns_)
    losses.Set(StatId::cost_loader_first_use_cpu_ns, FirstUseScope::TotalNs() - *first_use_at_start_ns_);
  if (unwind_rows_) losses.Set(StatId::stack_modules_without_rows, unwind_rows_->modules_without_room());
  if (budget_) {
    losses.Set(StatId::cost_budget_ns_per_s, budget_->ns_per_s());
    losses.Set(StatId::cost_budget_lowest_hz, static_cast<uint64_t>(budget_->lowest_hz()));
    losses.Set(StatId::cost_budget_lowered_ns, budget_->lowered_ns());
    losses.Set(StatId::cost_budget_over_ns, budget_->over_ns());
  }
  return losses;
}

void Session::Finish(const std::string& reason, std::optional<int> exit_status) {
  // -d ends at its deadline, however late the loop noticed (a busy or loaded loader).
  uint64_t end_ns = NowNs(CLOCK_MONOTONIC);
  if (reason == "duration") end_ns = std::min(end_ns, deadline_ns_);
  stop_ns_ = end_ns;
  if (early_wait_stacks_deferred_) FirstUseScope::SetBusyObserver({});
  bpf_->Detach();
  (void)bpf_->Consume();
  stacks_->Finish();
  Stats losses = LiveLosses();
  events_.OnEvent(LossCounters{losses});
  events_.OnEvent(SessionEnd{end_ns, reason, exit_status});
  if (losses.Get(StatId::records_full))
    log::Warning("{} records were lost because the record ring was full; try a larger --record-ring",
                 losses.Get(StatId::records_full));
  if (losses.Get(StatId::ringbuf_full))
    log::Warning("{} strings or identities were lost because the ring buffer was full; try a larger --ringbuf-size",
                 losses.Get(StatId::ringbuf_full));
}

}  // namespace looptrace::loader
