// A live tracing session: BPF programs loaded for one target, probes attached in order,
// records streamed through the decoder into the pipeline until the duration ends, a signal
// arrives or the target exits. It is the pipeline's source of method-beat slices and of
// snapshots of the target's threads (the pipeline asks when a span runs past a tracer's
// threshold, or for `looptrace snapshot`). Destruction detaches everything.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loader/bpf/bpf_session.h"
#include "loader/bpf/unwind_rows.h"
#include "loader/decode/address_namer.h"
#include "loader/decode/beat_slicer.h"
#include "loader/decode/event_decoder.h"
#include "loader/decode/stack_resolver.h"
#include "loader/decode/string_reader.h"
#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"
#include "loader/session/early_wait_stacks.h"
#include "loader/session/event_loop.h"
#include "loader/session/session_cost.h"
#include "loader/session/stall_snapshot.h"
#include "loader/session/thread_names.h"
#include "looptrace/tracers/event_sanitize.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct SessionOptions {
  std::string profile;                // built-in name or file; empty = detect from the target
  ThreadChoice threads;               // --threads; kUnset: the profile's choice, else main
  double duration_s = 0;              // 0 = until Ctrl-C / target exit
  size_t ringbuf_bytes = 4u << 20;    // side records: strings, identities
  size_t record_capacity = 1u << 16;  // record ring records (power of two)
  size_t beat_capacity = 1u << 20;    // method-beat ring records (power of two)
  std::string btf_path;
  int poll_interval_ms = 25;    // ring buffer drained (and the watchdog run) this often
  bool thread_tracking = true;  // sched_switch/waking/signal programs + cpu-clock samples
  // --sample-rate: cpu-clock stack samples of the main thread per second of its CPU time, for
  // sampled call trees (and snapshots of busy threads); 0: no stack samples (49 Hz, for
  // snapshots only). 997: prime, so it does not beat with periodic work; ~1 ms resolution.
  int sample_hz = 997;
  size_t sample_ring_bytes = 8u << 20;  // --sample-ring: the BPF ring of stack samples
  bool held_child = false;              // run: the target is looptrace's held child until it execs
  bool dwarf_unwind = false;            // copy registers + stack top for DWARF unwinding (no frame pointers)
  bool fp_unwind = false;               // --fp-unwind: sampled stacks by frame pointers only (no .eh_frame rows)
  bool exact_entry = false;             // --exact-entry: no probe relocation (probe_placement.h)
  bool idle_stacks = false;             // --idle-stacks: stacks at idle switch-outs too (session_cost.h)
  double cpu_budget_percent = 0;        // --cpu-budget: of one CPU, kept by the sample rate (CostBudget); 0: none
  // --native-frames: interpreter frames spliced into the native stack (the interpreter loop's
  // frames replaced) instead of shown alone over the native code the time is in.
  bool native_frames = false;
};

// Blocks SIGINT/SIGTERM/SIGHUP and returns a signalfd for them: signals are then handled
// in the event loop (and during attach) instead of killing the process mid-way.
Result<UniqueFd> BlockTerminationSignals();

class Session : private SnapshotSource {
 public:
  // Events go to `pipeline`, which asks this session for slices and snapshots.
  Session(const SessionOptions& options, int signal_fd, Pipeline& pipeline);
  ~Session() override;

  Result<void> Prepare(const Profile& profile, AttachPlan plan, uint32_t tgid);
  // Before Prepare: compiles the BPF stack walker's .eh_frame rows (the running target's
  // modules, or `exe_path` and the libraries it needs for a command not started yet), so
  // Prepare sizes their array; they are written once the probes are attached (Join).
  void PrepareUnwindRows(int pid, const std::string& exe_path, const std::string& ld_library_path);
  // Before Prepare: the target's interpreter (runtimes.h InterpreterOf), whose frames BPF
  // walks once it is located in the process; null: none.
  void SetInterpreter(std::unique_ptr<InterpreterSupport> interpreter) { interpreter_ = std::move(interpreter); }
  // Attaches every probe point (ends first); a signal meanwhile detaches all and fails.
  Result<void> Attach(pid_t pid);
  // Off-CPU reasons, wakeups, SIGQUIT and stacks; a kernel without them only loses those.
  void AttachThreadTracking();
  void Start(SessionStart start);
  // Streams until the duration ends ("duration"), a signal arrives ("interrupted") or
  // `pid_fd` becomes readable ("target-exited").
  Result<std::string> Stream(int pid_fd);
  // Detaches, drains what is left and closes the stream.
  void Finish(const std::string& reason, std::optional<int> exit_status = std::nullopt);

  // For a loop shared with other work (background sessions, daemon.h): the ring and the
  // target's pidfd join `loop`, `on_target_exit` runs once the target is gone, and the
  // owner calls Drain() after every wait (at least every poll interval).
  Result<void> Join(EventLoop& loop, int pid_fd, std::function<void()> on_target_exit);
  void Leave(EventLoop& loop);
  // Delivers what the rings hold and lets the pipeline check its watches (Pipeline::Tick).
  Result<void> Drain();
  // The BPF programs' and the decoder's counters so far (Finish sends them at the end).
  Stats LiveLosses() const;
  uint32_t tgid() const { return tgid_; }

  const AttachPlan& plan() const { return plan_; }

 private:
  void OnRecord(const lt_record& record);
  void OnSideRecord(std::span<const uint8_t> raw);
  // Snapshots stalls (pipeline Tick) only when `judge_stalls`: the view holds every record.
  void Watchdog(uint64_t now_ns, bool judge_stalls);
  // --cpu-budget: the sample rate for the running cost of the last second (CostBudget).
  void KeepCostBudget(uint64_t now_ns);
  // SnapshotSource: the main thread, or the loop thread once BPF claimed it (0 before).
  uint32_t LoopThread() override;
  StallSnapshot Take(const SnapshotRequest& request) override;

  // What the session's own readers learn from the stream: who woke a thread of the target
  // (for snapshots), an exec (the stack resolver reads the new image's mappings).
  class ProcessTaps : public EventSink {
   public:
    explicit ProcessTaps(Session& session) : session_(session) {}
    void OnEvent(const Event& event) override;

   private:
    Session& session_;
  };
  // Until the interpreter is found in the process (a program `run` starts maps it after exec).
  void LocateInterpreter();
  // cpu-clock samplers on the threads the runtime asks to sample (InterpreterSupport::
  // ThreadsToSample) that have none yet.
  void SampleRuntimeThreads();
  // Wait-bounded messages: the loop thread by its name (no probe claims it at a first message).
  void FindLoopThreadByName();
  // Sampled user stacks are walked in BPF with .eh_frame rows (default), not frame pointers.
  bool UsesUnwindRows() const;
  void SyncUnwindRows();

  SessionOptions options_;
  int signal_fd_;
  Pipeline& pipeline_;
  int ring_fd_ = -1;
  int pid_fd_ = -1;
  SanitizingSink events_;                     // every event on its way to pipeline_: names from the target made safe
  std::optional<ThreadNamer> threads_named_;  // decoded events, each new thread named first (Prepare)
  std::string profile_name_;
  std::string message_definition_;  // the profile's `messages` line, "" if none
  AttachPlan plan_;
  ProcessStringReader process_strings_;
  StringTable strings_{&process_strings_};
  IdentityTable identities_;
  Stats loader_stats_;
  std::optional<SymbolizingAddressNamer> addresses_;
  std::optional<BpfKernelStacks> kernel_stacks_;
  std::optional<StackResolver> stacks_;
  std::unique_ptr<InterpreterSupport> interpreter_;
  InterpreterBpfConfig interpreter_config_;
  bool interpreter_pending_ = false;  // not located yet, nor given up on
  std::optional<EventDecoder> decoder_;
  std::optional<BeatSlicer> slicer_;
  std::optional<SnapshotTaker> snapshots_;
  std::optional<EarlyWaitStacks> early_waits_;
  std::optional<EarlyWaitDeferral> early_wait_deferral_;  // from the session's start
  std::vector<Event> side_decoded_;
  bool primed_ = false;
  bool shadow_stack_ = false;                // uretprobe return addresses kept for stack samples (shadow_probes.h)
  bool waits_by_syscall_ = false;            // early loop-thread waits keep their system call, no stacks (events.h)
  bool early_wait_stacks_deferred_ = false;  // ... and their user stack once they outlive the early age
  uint32_t tgid_ = 0;
  ThreadChoice threads_;         // resolved: --threads, else the profile's, else main
  uint32_t known_loop_tid_ = 0;  // the loop thread, once BPF claimed it (LT_THREADS_LOOP)
  uint64_t last_cpu_sample_ns_ = 0;
  std::optional<CostBudget> budget_;  // --cpu-budget, once the cpu-clock samplers run
  // --cpu-budget: the loader's CPU on on-CPU samples so far, and on frames records since
  // the last sample (theirs, once it comes).
  uint64_t sample_work_ns_ = 0, frames_work_ns_ = 0;
  uint64_t last_budget_ns_ = 0;
  uint64_t records_lost_seen_ = 0;      // RecordsLost() at the last drain
  uint64_t copies_seen_ = 0;            // stacks_->copies_decoded() at the last drain
  uint64_t trusted_since_ns_ = 0;       // the last drain that lost records began here
  std::set<uint32_t> runtime_sampled_;  // threads sampled for the runtime (SampleRuntimeThreads)
  uint64_t stop_ns_ = UINT64_MAX;       // the session's end: later records are dropped (and counted)
  uint64_t start_ns_ = 0;               // the session's start: earlier probe hits are dropped (and counted)
  uint64_t deadline_ns_ = UINT64_MAX;   // when -d ends the session
  ProcessTaps taps_{*this};
  OwnCpuClock own_cpu_;  // the loader's CPU time, a cost counter
  // FirstUseScope::TotalNs() once the session started: files first met after it cost once.
  std::optional<uint64_t> first_use_at_start_ns_;
  std::unique_ptr<BpfSession> bpf_;
  // The BPF stack walker's .eh_frame rows (after bpf_: dropped before it).
  std::optional<UnwindRowsPublisher> unwind_rows_;
  uint64_t unwind_rows_synced_ns_ = 0;  // last look at the target's maps
  uint64_t unwind_rows_first_ns_ = 0;   // first rows out
};

}  // namespace looptrace::loader
