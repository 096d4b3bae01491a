// Every loss and degradation has a named counter here; reports always carry them
// (text shows the non-zero ones, JSON shows all). Nothing is dropped silently.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace looptrace {

// kFilter: hits BPF filtered out on purpose (other processes, threads, conditions): not a
// loss; the text report shows them with -v only. kCost: what looptrace itself cost the
// target and the machine (not a loss; the text report sums them up in one line). kCoverage:
// how much of what was sampled is whole (the text report says it as a share, in one line).
enum class StatSeverity { kInfo, kError, kDataLoss, kFilter, kCost, kCoverage };

// X(name, severity, description)
#define LOOPTRACE_STATS(X)                                                                                             \
  X(ringbuf_full, kDataLoss, "strings or identities dropped in BPF because the ring buffer was full")                  \
  X(records_full, kDataLoss, "records dropped in BPF because the record ring was full (raise --record-ring)")          \
  X(records_overwritten, kDataLoss, "records overwritten by a concurrent writer before they were read")                \
  X(predicate_rejected, kFilter, "probe hits whose conditions did not hold (filtered in BPF)")                         \
  X(verdicts_evicted, kFilter, "cached string-condition verdicts replaced by another string's")                        \
  X(records_after_end, kFilter, "records made while probes were being detached, after the session's end")              \
  X(records_before_start, kFilter, "probe hits while probes were being attached, before the session's start")          \
  X(verdicts_stale, kFilter, "cached verdicts re-checked because the string at the address changed")                   \
  X(malformed_records, kDataLoss, "ring buffer records with an unknown type or a bad size")                            \
  X(unknown_probe_id, kDataLoss, "records naming a probe the session did not attach")                                  \
  X(messages_running_at_start, kInfo, "dispatch.end of messages already running when tracing began")                   \
  X(unmatched_dispatch_end, kDataLoss, "dispatch.end with no open dispatch.begin on its thread")                       \
  X(dispatch_id_mismatch, kError, "dispatch.end whose id differs from the open message's id")                          \
  X(message_end_lost, kDataLoss,                                                                                       \
    "messages whose end was lost: the next one began no deeper on the thread's stack (closed there, not listed)")      \
  X(message_nesting_capped, kDataLoss,                                                                                 \
    "the outermost open message of a thread closed because more than 64 were nested (its end was lost)")               \
  X(unfinished_messages, kInfo, "messages still running when the session ended")                                       \
  X(string_read_failed, kError, "string arguments that could not be read from the target")                             \
  X(arg_read_failed, kError, "USDT arguments BPF could not read")                                                      \
  X(other_thread_hits, kFilter, "probe hits on threads the thread filter excludes")                                    \
  X(other_process_hits, kFilter, "probe hits from other processes mapping the same binary (filtered in BPF)")          \
  X(bpf_string_copy_failed, kInfo, "strings BPF could not copy (page not resident): read from the target instead")     \
  X(stack_failed, kError, "stacks BPF could not capture (stack map full, or no stack)")                                \
  X(method_beats_overwritten, kDataLoss, "method beats of a slow message overwritten before they were read")           \
  X(unmatched_method_exit, kError, "method exits with no open enter of that method (ignored)")                         \
  X(method_exit_missing, kError, "method frames whose exit never came (exception/longjmp)")                            \
  X(method_depth_exceeded, kError, "method frames deeper than the tree depth limit (not shown)")                       \
  X(method_names_unknown, kInfo, "method ids or addresses without a name in the reports")                              \
  X(snapshot_incomplete, kError, "stall snapshots missing a thread, a stack or the process (it exited)")               \
  X(thread_tracking_off, kInfo, "thread-state tracing unavailable: no off-CPU reasons or stacks")                      \
  X(phase_without_frame, kError, "phase events with no open frame on their thread (ignored)")                          \
  X(phase_end_without_begin, kError, "phase.end with no open phase (ignored)")                                         \
  X(phase_mismatch, kError, "phase.end naming another phase than the open one")                                        \
  X(phase_unclosed, kError, "phases closed by the next phase or by their frame's end")                                 \
  X(frame_end_without_begin, kDataLoss, "frame.end with no open frame (ignored)")                                      \
  X(frame_id_mismatch, kError, "frame.end whose frame id is not open")                                                 \
  X(nested_frames, kInfo, "frames begun while another frame was open on the thread")                                   \
  X(frame_end_lost, kDataLoss, "frames closed by an outer frame or their message ending")                              \
  X(unfinished_frames, kInfo, "frames still running when the session ended")                                           \
  X(frame_without_vsync, kError, "frames without a vsync timestamp (their begin was used)")                            \
  X(vsync_without_timestamp, kError, "vsync events without a timestamp (ignored)")                                     \
  X(refresh_rate_assumed, kInfo, "too few vsyncs to measure the refresh rate (guessed)")                               \
  X(refresh_rate_changes, kInfo, "refresh-rate changes detected")                                                      \
  X(recording_bad_lines, kDataLoss, "lines of a recording that could not be parsed")                                   \
  X(recording_truncated, kDataLoss, "recordings whose compressed data ended early: the events after the cut are lost") \
  X(events_out_of_order, kError, "events older than the previous event of the same thread")                            \
  X(samples_dropped, kDataLoss, "stack samples dropped in BPF because the sample ring was full (raise --sample-ring)") \
  X(shadow_overflow, kError,                                                                                           \
    "uretprobe return addresses BPF could not remember (nested deeper than 8, or their thread's slot taken by "        \
    "another thread)")                                                                                                 \
  X(stack_copy_failed, kError, "samples whose stack copy faulted (nothing readable at the stack pointer)")             \
  X(switch_record_lost, kInfo,                                                                                         \
    "off-CPU stretches whose switch record was lost (records_full): reason unknown, ended at the thread's next "       \
    "sample or event")                                                                                                 \
  X(stack_walk_truncated, kInfo, "stack walks that stopped before the outermost frame (why: in the sampled trees)")    \
  X(bogus_frames_dropped, kInfo,                                                                                       \
    "return addresses outside every executable mapping (code without frame pointers or CFI): the walk ended there")    \
  X(uretprobe_frames_restored, kInfo,                                                                                  \
    "return addresses replaced by the uretprobe trampoline, put back from the shadow stack")                           \
  X(samples_after_exit, kInfo, "samples unwound after their process exited (named from the maps read last)")           \
  X(module_replaced, kError,                                                                                           \
    "modules replaced on disk after they were mapped: named from the mapped copy, or not at all")                      \
  X(perf_map_bad_lines, kError, "malformed lines in /tmp/perf-PID.map (JIT symbols), skipped")                         \
  X(cpu_switch_untraced, kInfo,                                                                                        \
    "switches the kernel made without a sched_switch event: a switch-in is made up at the thread's next switch-out "   \
    "from its CPU time; the loop thread's CPU time over that stretch is the kernel's tick-granular count")             \
  X(switch_stacks_idle, kInfo,                                                                                         \
    "loop-thread switch-outs with no message open (idle, or in its poll wait): not recorded, nor the wakeup and "      \
    "switch-in that end the wait, no stack taken; no report shows that wait (--idle-stacks records them)")             \
  X(samples_idle, kInfo,                                                                                               \
    "cpu-clock samples of the loop thread with no message open: not taken, no report shows them (--idle-stacks "       \
    "takes them)")                                                                                                     \
  X(early_preemptions_unstacked, kInfo,                                                                                \
    "loop-thread preemptions early in a message (younger than cost_preempt_stacks_after_ns): no stack taken, the "     \
    "reason (preempted) kept")                                                                                         \
  X(switch_stacks_waiting, kInfo,                                                                                      \
    "switch-outs of the target's other threads into a wait (sleep, lock, I/O): no stack taken; a stall snapshot "      \
    "reads the stacks of a thread still waiting when it is taken")                                                     \
  X(early_waits_by_syscall, kInfo,                                                                                     \
    "loop-thread waits early in a message (younger than cost_preempt_stacks_after_ns): no kernel stack taken, the "    \
    "reason from the system call it waits in; its user stack taken at the switch-out, or only once the wait is that "  \
    "old (early_wait_stacks_late); a snapshot reads a thread still waiting")                                           \
  X(early_wait_stacks_late, kInfo,                                                                                     \
    "early waits that lasted cost_preempt_stacks_after_ns: their user stack read from outside while they still "       \
    "waited (shorter ones keep only their system call, their time shown under the nearest sample's stack)")            \
  X(early_wait_stacks_missed, kError,                                                                                  \
    "early waits that lasted cost_preempt_stacks_after_ns but ran again before the loader read their stack: only "     \
    "their system call kept")                                                                                          \
  X(early_wait_stacks_at_switch_out, kInfo,                                                                            \
    "early waits whose user stack was taken at their switch-out, as before deferring: the loader was reading a file "  \
    "it met for the first time (symbols, unwind rows) and could not have read a long one in time")                     \
  X(cost_probe_hits, kCost, "probe hits on the target (runs of looptrace's uprobe and USDT programs)")                 \
  X(cost_probe_bpf_ns, kCost,                                                                                          \
    "ns in looptrace's uprobe and USDT programs (estimated: every run counted, ~1 in 64 timed)")                       \
  X(cost_sched_runs, kCost,                                                                                            \
    "runs of looptrace's scheduler, signal, exec and sampler programs (every CPU, every process: they filter)")        \
  X(cost_sched_bpf_ns, kCost,                                                                                          \
    "ns in looptrace's scheduler, signal, exec and sampler programs, on every CPU (estimated like cost_probe_bpf_ns)") \
  X(cost_switch_stacks, kCost, "switch-outs of the target's threads whose kernel and user stacks BPF took")            \
  X(cost_uprobe_hit_ns, kCost,                                                                                         \
    "ns one uprobe hit costs on this machine, measured at the start (trap, dispatch, an empty program)")               \
  X(cost_preempt_stacks_after_ns, kCost,                                                                               \
    "preemptions get stacks only in messages open this long (ns; a tenth of the shortest slow message, 0: all)")       \
  X(cost_wait_stacks_after_ns, kCost,                                                                                  \
    "early waits get their user stack only once they have lasted this long (ns, cost_preempt_stacks_after_ns; 0: "     \
    "at their switch-out)")                                                                                            \
  X(cost_loader_cpu_ns, kCost, "ns of CPU (user + system) looptrace's own process spent in the session")               \
  X(cost_loader_start_cpu_ns, kCost,                                                                                   \
    "ns of cost_loader_cpu_ns spent before the session started (BPF load, symbols, probes attached), once a session")  \
  X(cost_loader_first_use_cpu_ns, kCost,                                                                               \
    "ns of cost_loader_cpu_ns spent after the start on files first met (symbols, DWARF, unwind rows), once a file")    \
  X(cost_budget_ns_per_s, kCost, "--cpu-budget: ns of CPU a second the session may cost as it runs (0: no budget)")    \
  X(cost_budget_lowest_hz, kCost, "--cpu-budget: the lowest cpu-clock sample rate the budget asked for (Hz)")          \
  X(cost_budget_lowered_ns, kCost,                                                                                     \
    "--cpu-budget: ns of the session the sample rate ran below --sample-rate (sampled trees hold fewer samples)")      \
  X(cost_budget_over_ns, kCost,                                                                                        \
    "--cpu-budget: ns of the session in seconds that cost more than the budget (probe hits, switches are not shed)")   \
  X(interp_stacks_dropped, kDataLoss,                                                                                  \
    "interpreter stacks (Python frames) dropped in BPF because the sample ring was full (raise --sample-ring)")        \
  X(interp_stacks_truncated, kInfo,                                                                                    \
    "interpreter stacks deeper than the walk's limit (64 frames): their outer frames are missing, marked in the tree") \
  X(interp_stacks_failed, kError,                                                                                      \
    "interpreter stacks whose walk stopped at a frame that could not be read or was not a code object")                \
  X(interp_frames_unnamed, kError, "interpreter frames whose code object could not be read (shown as unknown)")        \
  X(interp_code_reused, kInfo,                                                                                         \
    "interpreter frames whose code object was freed and its address reused before it was named (shown as unknown)")    \
  X(interp_callables_unnamed, kError, "callables of a runtime (asyncio callbacks) that could not be named")            \
  X(stack_walks_unsupported_row, kInfo,                                                                                \
    "user stacks whose BPF walk stopped at an .eh_frame row it cannot follow (a DWARF expression, a signal frame) "    \
    "or at an impossible frame: their callers are missing")                                                            \
  X(stack_walks_no_cfi, kInfo,                                                                                         \
    "user stacks whose BPF walk stopped in code of a module without .eh_frame rows for it and no frame pointer: "      \
    "their callers are missing")                                                                                       \
  X(stack_walks_depth_limit, kInfo, "user stacks whose BPF walk stopped at the depth limit (127 frames)")              \
  X(stack_walks_read_fault, kInfo,                                                                                     \
    "user stacks whose BPF walk stopped where a return address could not be read (page not resident)")                 \
  X(stack_walks_no_frame_pointer, kInfo,                                                                               \
    "user stacks whose BPF walk stopped in code outside every module (JIT) that keeps no frame pointer")               \
  X(stack_modules_without_rows, kDataLoss,                                                                             \
    "modules loaded while the session ran whose .eh_frame rows found no room left in the BPF walker's table: "         \
    "stacks through their code stop there")                                                                            \
  X(stack_walks_finished_from_copy, kInfo,                                                                             \
    "user stacks whose BPF walk met a library loaded since its rows were last published (dlopen): sent as a stack "    \
    "copy and walked in user space")                                                                                   \
  X(stack_frames_by_frame_pointer, kCoverage,                                                                          \
    "frames the BPF walk took by frame pointer: code no .eh_frame row covers (JIT code, V8's builtins)")               \
  X(stack_walks_cut_at_interpreter, kFilter,                                                                           \
    "user stacks walked in BPF only down to the interpreter's code: the runtime's frames are shown there "             \
    "(--native-frames walks on)")                                                                                      \
  X(user_stacks_sampled, kCoverage,                                                                                    \
    "user stacks of stack samples the loader resolved (those cut at the interpreter on purpose not counted)")          \
  X(user_stacks_complete, kCoverage,                                                                                   \
    "of them, stacks whose outermost frame is main or a thread's start (_start, start_thread, clone3)")

enum class StatId : int {
#define LOOPTRACE_STAT_ENUM(name, severity, description) name,
  LOOPTRACE_STATS(LOOPTRACE_STAT_ENUM)
#undef LOOPTRACE_STAT_ENUM
      kCount
};

constexpr int kStatCount = static_cast<int>(StatId::kCount);

std::string_view StatName(StatId id);
std::optional<StatId> StatFromName(std::string_view name);
std::string_view StatDescription(StatId id);
StatSeverity StatSeverityOf(StatId id);
std::string_view SeverityName(StatSeverity severity);

class Stats {
 public:
  void Add(StatId id, uint64_t n = 1) { values_[static_cast<int>(id)] += n; }
  void Set(StatId id, uint64_t n) { values_[static_cast<int>(id)] = n; }
  uint64_t Get(StatId id) const { return values_[static_cast<int>(id)]; }
  void Merge(const Stats& other) {
    for (int i = 0; i < kStatCount; ++i) values_[i] += other.values_[i];
  }
  bool AnyNonZero() const {
    for (uint64_t v : values_)
      if (v) return true;
    return false;
  }

 private:
  std::array<uint64_t, kStatCount> values_{};
};

}  // namespace looptrace
