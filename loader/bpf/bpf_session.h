// The BPF side of a session: the skeleton, the ring buffer, the beat ring, perf events and
// attached links, each owned RAII-style. The only code of the project that calls libbpf
// (with bpf_prerequisites.cc, uprobe_multi.cc and beat_ring.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "loader/bpf/beat_ring.h"
#include "loader/bpf/record_ring.h"
#include "loader/bpf/uprobe_multi.h"
#include "loader/plan/attach_plan.h"
#include "loader/runtimes/interpreter.h"
#include "looptrace/events.h"
#include "looptrace/report/stats.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

struct lt_probes;  // generated skeleton (bpf/looptrace.bpf.c)
struct ring_buffer;

namespace looptrace::loader {

struct BpfSessionOptions {
  uint32_t target_tgid = 0;
  uint32_t thread_filter = LT_THREADS_MAIN;    // LT_THREADS_*
  std::string loop_name;                       // LT_THREADS_LOOP: the loop thread's name prefix ("" = any thread)
  bool loop_name_exact = false;                // the name is the whole thread name
  size_t ringbuf_bytes = 8u << 20;             // side records (strings, identities), power of two
  size_t record_capacity = 1u << 16;           // record ring records, power of two
  size_t beat_capacity = 1u << 20;             // method-beat ring records, power of two
  std::vector<lt_probe_config> probe_configs;  // by probe id
  bool thread_tracking = true;                 // sched/signal/exec programs, stacks, cpu-clock samples
  bool dwarf_unwind = false;                   // copy watched threads' registers + stack top
  bool eh_unwind = false;                      // walk sampled user stacks with .eh_frame rows once published
  bool eh_view_cut = false;                    // ... only as far as the runtime's default view shows them
  size_t unwind_row_capacity = 0;              // entries of the unwind_rows array (events.h)
  bool sample_records = false;                 // stack samples for sampled call trees (sample ring)
  size_t sample_ring_bytes = 4u << 20;         // the sample ring, power of two
  bool samples_after_exec = false;             // run: no samples of the held child before its exec
  bool switch_stacks_idle = true;              // stacks at the loop thread's idle switch-outs too (session_cost.h)
  bool messages_poll_bounded = false;          // the loop is idle only in its poll wait
  bool waits_by_syscall = false;               // early waits keep their syscall, no stacks (events.h)
  bool early_wait_stacks_deferred = false;     // ... and their user stack only if they outlive the early age
  std::string btf_path;                        // empty: the kernel's /sys/kernel/btf/vmlinux
  InterpreterBpfConfig interpreters;           // layouts of the interpreters BPF walks (runtimes/interpreter.h)
  // Which probe programs the plan attaches: each of them costs the verifier 0.2-0.5 s of CPU
  // (the whole probe path, Python callables included), so the others are not loaded.
  bool uprobe_points = true;  // uprobes or uretprobes (lt_uprobe_multi, else lt_uprobe)
  bool usdt_points = true;    // USDT probes (lt_usdt)
  bool fast_beats = true;     // method beats on the fast path (lt_beat_enter, lt_beat_exit)
};

// What opening a session cost: the kernel's verifier dominates a session's start.
struct BpfLoadCost {
  uint64_t wall_ns = 0;       // opening and loading the object (every program verified)
  uint64_t cpu_ns = 0;        // the loader's CPU time meanwhile (the verifier runs in its syscalls)
  size_t programs = 0;        // programs loaded
  size_t verified_insns = 0;  // instructions the verifier processed, all programs
};

// The loader attaches a group of points in uprobe_multi links of at most this many, so it
// can report progress between them. Each link costs one RCU grace period to detach
// (~40-70 ms here, bench/attach_scale.cc), and 20,000 points attach in ~60 ms: links are
// only split where attaching would take seconds.
inline constexpr size_t kMaxPointsPerLink = 1u << 17;
// Without uprobe_multi every point is its own link anyway: progress every this many.
inline constexpr size_t kMaxPointsPerPerfGroup = 256;

class BpfSession {
 public:
  using SideRecordCallback = std::function<void(std::span<const uint8_t>)>;
  using RecordCallback = std::function<void(const lt_record&)>;

  // Side records (ring buffer and sample ring) go to `on_side_record`, ring records to
  // `on_record`; each Consume() delivers the side records first (the strings records refer
  // to, the stack samples taken before them).
  static Result<std::unique_ptr<BpfSession>> Open(const BpfSessionOptions& options, SideRecordCallback on_side_record,
                                                  RecordCallback on_record);
  ~BpfSession();
  BpfSession(const BpfSession&) = delete;
  BpfSession& operator=(const BpfSession&) = delete;

  // Attaches probe points of one binary and one kind (uprobe or uretprobe, as
  // AttachAsReturnProbe says) for process `pid`, each at all its AttachOffsets: one
  // uprobe_multi link when the kernel has them, else one link per offset.
  // USDT points are attached one by one.
  Result<void> Attach(const std::vector<const ResolvedProbe*>& probes, int pid);
  // Splits attach groups so none holds more points (AttachPointCount) than one step of
  // attaching should: kMaxPointsPerLink, or kMaxPointsPerPerfGroup without uprobe_multi.
  std::vector<std::vector<const ResolvedProbe*>> SplitIntoLinks(
      std::vector<std::vector<const ResolvedProbe*>> groups) const;
  size_t attached_points() const { return attached_points_; }
  size_t skipped_points() const { return skipped_points_; }  // glob matches the kernel refused
  bool uses_uprobe_multi() const { return uprobe_multi_; }
  const BpfLoadCost& load_cost() const { return load_cost_; }

  // Fd that becomes readable when BPF nudges (the record ring is half full, a SIGQUIT);
  // otherwise the caller polls on a timer and calls Consume().
  int ring_epoll_fd() const;
  // Delivers the side records, then the ring records claimed before the side records were
  // read (so every side record a thread wrote before a record comes first); returns the
  // number of ring records.
  Result<size_t> Consume();

  // Thread-state programs (sched_switch, sched_waking, signal_generate, exec) and the
  // cpu-clock sampler at `sample_hz` (AttachCpuSampler; none at 0). A kernel without them
  // turns the feature off with one warning (the result says why), it is not an error.
  Result<void> AttachThreadTracking(int sample_hz);
  bool thread_tracking() const { return thread_tracking_; }

  // The latest state BPF saw for every thread of the target (tid -> state).
  std::vector<std::pair<uint32_t, lt_thread_state>> ThreadStates() const;
  // The latest state BPF saw for thread `tid`; nothing when it has none.
  std::optional<lt_thread_state> ThreadState(uint32_t tid) const;
  // A watched thread's registers and stack top at its last switch-out or sample
  // (--dwarf-unwind); nothing when off or never captured.
  std::optional<lt_stack_copy> StackCopy(uint32_t tid) const;
  // The uretprobe shadow stack of a thread now (events.h); empty when none.
  std::vector<lt_shadow_frame> ShadowStack(uint32_t tid) const;
  // Instruction pointers of a stack id (innermost first); empty if gone.
  std::vector<uint64_t> StackIps(int32_t stack_id) const;

  const BeatRing& beats() const { return beats_; }

  // Stack samples wake the loader only when their ring is half full (true), or each (false:
  // the default, while the target starts).
  void BatchSampleWakeups(bool batched);

  // No stacks at the loop thread's preemptions in messages younger than this (0: every
  // preemption gets one; session_cost.h), from now on.
  void SetPreemptStacksAfter(uint64_t ns);

  // Early waits' stacks deferred (BpfSessionOptions::early_wait_stacks_deferred) from now on,
  // or taken at their switch-out while the loader could not read them in time (false).
  void DeferEarlyWaitStacks(bool now);

  // The cpu-clock samplers' rate from now on (--cpu-budget), on every CPU.
  Result<void> SetSampleRate(int hz);

  // Where the target's interpreters are, once located: BPF walks their frames from now on.
  void PublishInterpreterAddresses(const InterpreterBpfConfig& config);

  // .eh_frame rows for the BPF stack walker (events.h: lt_unwind_row): one module's rows
  // into unwind_rows from index `first` (within unwind_row_capacity), then the sorted list
  // of the target's mappings that use them. Rows before the mappings that use them: BPF
  // reads both without a lock.
  Result<void> WriteUnwindRows(uint32_t first, std::span<const lt_unwind_row> rows);
  Result<void> PublishUnwindModules(std::span<const lt_unwind_module> modules);

  // LT_THREADS_LOOP: the loop thread BPF claimed (0 while none did), or names it first.
  uint32_t loop_tid() const;
  void SetLoopTid(uint32_t tid, uint32_t replacing = 0);
  // cpu-clock samples at `sample_hz` on every online CPU, once a session (later calls keep
  // the first rate): lt_cpu_sample keeps those of watched threads and of threads a runtime
  // asked for, and a stack of any target thread every 20 ms for snapshots. CPUs brought
  // online later are not sampled.
  Result<void> AttachCpuSampler(int sample_hz);
  // cpu-clock samples of a thread that is not watched (one a runtime asks for): BPF keeps
  // its samples, not its switches. At most 256 threads (BPF's runtime_sampled map).
  Result<void> SampleUnwatchedThread(int tid, int sample_hz);

  // Loss and filter counters kept by the BPF programs (summed over CPUs), and what the
  // programs cost (the kernel's run counts and times, when it keeps them).
  Stats ReadCounters() const;
  // The records lost so far (dropped in BPF on a full ring, or overwritten): one counter read.
  uint64_t RecordsLost() const;
  // The cpu-clock sampler program's time so far, every CPU (estimated like the other
  // programs' costs): what --cpu-budget sheds by lowering the rate.
  uint64_t SamplerBpfNs() const;
  // What one uprobe hit costs here (the trap, the kernel's dispatch, an empty BPF program),
  // in ns: a function of looptrace's own timed with a probe on it and without (a few ms).
  Result<uint64_t> MeasureUprobeHitNs();

  // Detaches every probe (also done by the destructor).
  void Detach();

 private:
  struct SkeletonDeleter {
    void operator()(lt_probes* skel) const;
  };
  struct RingDeleter {
    void operator()(ring_buffer* ring) const;
  };

  BpfSession() = default;
  struct ProgramCost {
    uint64_t runs = 0, ns = 0;  // ns: estimated from the timed runs
  };
  std::optional<ProgramCost> CostOfProgram(uint32_t prog) const;  // one of LT_PROG_*
  void AddProgramCosts(Stats* stats) const;
  void NoteLoadedPrograms();
  Result<void> AttachOne(const ResolvedProbe& probe, int pid);
  Result<void> AttachMulti(const std::vector<const ResolvedProbe*>& probes, int pid);
  int CreateMultiLink(const std::vector<const ResolvedProbe*>& probes, int pid);

  // Members are destroyed in reverse order: links first, the skeleton last.
  std::unique_ptr<lt_probes, SkeletonDeleter> skel_;
  std::unique_ptr<ring_buffer, RingDeleter> ring_;  // the side-record ring and the sample ring
  BeatRing beats_;
  std::vector<UniqueFd> perf_fds_;
  std::vector<AttachedLink> links_;
  RecordRing records_;
  SideRecordCallback on_side_record_;
  RecordCallback on_record_;
  uint64_t records_lost_ = 0;
  size_t attached_points_ = 0;
  size_t skipped_points_ = 0;
  bool thread_tracking_enabled_ = true;
  bool thread_tracking_ = false;
  bool cpu_samplers_attached_ = false;
  bool uprobe_multi_ = false;
  BpfLoadCost load_cost_;
};

}  // namespace looptrace::loader
