// Reports are plain data built by tracers, then projected by the renderers (render.h) and
// the exporters (metrics_text.h, clickhouse_rows.h): nothing here analyses anything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/report/call_tree.h"
#include "looptrace/report/frames_report.h"
#include "looptrace/report/matrix_issues.h"
#include "looptrace/report/process.h"
#include "looptrace/report/sampled_call_tree.h"
#include "looptrace/report/stats.h"

namespace looptrace {

struct SessionInfo {
  uint32_t pid = 0;
  std::string command;
  std::string command_line;  // the whole command line ("" when unknown: `command` stands in)
  std::string profile;
  std::string thread_filter = "main";
  uint64_t begin_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  uint64_t wall_time_ns = 0;  // CLOCK_REALTIME at begin
  std::string end_reason;
  std::optional<int> exit_status;        // run: the command's exit status
  std::vector<std::string> probe_roles;  // each probe point's role by name: what the profile could see
  DeviceInfo device;
  // exec()s into another program during the session (the comm changed): the old program's
  // probes stop firing there, so what follows is not the same program's.
  struct Exec {
    uint64_t ts_ns = 0;
    std::string comm;  // after the exec
  };
  std::vector<Exec> execs;

  uint64_t duration_ns() const { return end_ns > begin_ns ? end_ns - begin_ns : 0; }
};

// One dispatched message (a looper work unit).
struct Message {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;  // for unfinished messages: the session end
  std::optional<uint64_t> msg_id;
  std::string name;     // empty when the profile binds no name
  uint32_t depth = 0;   // > 0 for a message dispatched inside another (nested loop)
  uint64_t cpu_ns = 0;  // the thread's CPU time during the message (0 = unknown)
  // Event-loop delay: how late the timer the message runs ran, from its due time (a
  // dispatch.begin's `due_ms`: libuv's loop clock, CLOCK_MONOTONIC milliseconds).
  std::optional<uint64_t> loop_delay_ns;

  uint64_t cost_ns() const { return end_ns - begin_ns; }
};

// Nearest-rank percentiles over message costs.
struct CostSummary {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p90_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  uint64_t mean_ns = 0;
};

struct ThreadMessages {
  uint32_t tid = 0;
  CostSummary cost;
  uint64_t busy_ns = 0;  // time inside top-level messages (nested ones not double counted)
};

struct NamedMessages {
  std::string name;
  CostSummary cost;
};

struct MessagesReport {
  bool enabled = false;                 // false when the profile maps no dispatch roles
  std::string definition = "dispatch";  // dispatch | poll-bounded | none (span_tracker.h)
  std::vector<Message> messages;        // completed, ordered by (begin_ns, tid)
  std::vector<ThreadMessages> threads;  // ordered by tid
  std::vector<Message> slowest;         // top N by cost, ties by begin_ns; a nested slow one counted in its holder
  std::vector<Message> slowest_nested;  // slow messages nested in one of `slowest`, by begin
  std::vector<NamedMessages> by_name;   // ordered by total cost, then name
  std::vector<Message> unfinished;      // still running at session end
  // --keep-messages: completed messages left out of `messages` (the oldest), still counted
  // in `threads` and `by_name` (whose percentiles may then come from a histogram).
  uint64_t not_listed = 0;
  size_t keep_limit = 0;
  bool approximate_percentiles = false;
  // Every message's event-loop delay (Message::loop_delay_ns), as Node's
  // perf_hooks.monitorEventLoopDelay sees it; count 0 when the profile binds no due time.
  CostSummary loop_delay;
};

// A runtime's stall cause inside a message (tracers/stall_causes.h): a GC run anywhere in
// the process, or the thread's wait for a contended monitor.
struct StallCause {
  std::string kind;       // "gc" | "monitor"
  uint32_t tid = 0;       // gc: the collecting thread; monitor: the waiting thread
  uint64_t begin_ns = 0;  // clipped to the span asked about
  uint64_t end_ns = 0;
  std::string detail;       // gc: "full", "young", "generation 2"; monitor: its class
  uint64_t monitor = 0;     // monitor: its address
  uint32_t holder_tid = 0;  // monitor: the thread that released it to the waiter (0 = unknown)
  std::string holder_name;
  bool open = false;  // still running at the end of the span (or at the snapshot)

  uint64_t cost_ns() const { return end_ns > begin_ns ? end_ns - begin_ns : 0; }
};

// The total time of each kind in `causes` ("gc" -> ns), overlapping ones counted once.
std::map<std::string, uint64_t> TotalByKind(const std::vector<StallCause>& causes);

struct EvilMethodReport {
  Message message;
  std::string process;
  bool has_beats = false;  // false: the profile maps no method roles
  MethodIdKind kind = MethodIdKind::kId;
  std::vector<NamedCallNode> tree;  // pre-order, trimmed; root = the message
  size_t nodes_before_trim = 0;
  uint64_t stack_cost_ns = 0;  // max(message cost, costliest node)
  std::string stack_key;       // Matrix's "<id>|"
  std::string stack_key_name;
  uint64_t beats_overwritten = 0;
  bool matrix_compat = false;
  std::string matrix_stack;        // Matrix's "depth,methodId,count,cost\n" lines (ms)
  uint64_t matrix_cost_ms = 0;     // Matrix's "cost"
  std::vector<StallCause> causes;  // GC runs and monitor waits inside the message
  SampledCallTree sampled;         // from stack samples (sampled_tree.h); empty without samples
  // Slow messages dispatched inside this one (GLib's named callback inside its
  // g_main_context_dispatch): one event, reported once, here, in begin order.
  std::vector<Message> nested;
};

// Why a thread was off the CPU for a while (sched_switch state + kernel stack).
struct OffCpuInterval {
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  std::string reason;  // lock | io | sleep | poll | preempted | other
  uint32_t state = 0;
  std::vector<std::string> kernel_stack;
  uint32_t waker_tid = 0;  // who woke it (sched_wakeup), 0 = unknown
  std::string waker_comm;
  bool open = false;  // still off-CPU at the end of the span
};

struct ReasonTotal {
  std::string reason;
  uint64_t total_ns = 0;
  uint64_t count = 0;
};

// A message still running past the LAG (2 s) or ANR (5 s) threshold.
struct StallReport {
  bool anr = false;
  uint64_t threshold_ns = 0;
  Message message;  // end_ns: when it ended, or the session end if it never did
  bool finished = false;
  StallSnapshot snapshot;                      // taken while it was still running
  std::string stuck_reason;                    // e.g. "running", "lock wait", "disk I/O", "sleep", "deadlock"
  std::vector<NamedCallNode> tree;             // the open method slice at the snapshot (Matrix's ANR stack)
  std::vector<std::string> interpreted_stack;  // its methods still running, innermost first
  std::string stack_key;
  std::vector<OffCpuInterval> off_cpu;  // the longest intervals during the message
  std::vector<ReasonTotal> off_cpu_by_reason;
  uint64_t on_cpu_ns = 0;                // message time not covered by off-CPU intervals
  std::vector<uint32_t> deadlock_cycle;  // tids, the stalled thread first; empty if none
  std::string frame;                     // the frame/phase in progress, if any
  std::string scene;
  std::vector<StallCause> causes;  // GC runs and monitor waits inside the message
};

struct SignalAnrReport {
  SignalSent signal;
  bool from_self = false;
  bool stalled = false;  // a message was running on the main thread at the signal
  Message message;       // that message (end_ns = the signal time)
  std::string scene;
};

// IdleHandler or input event handled too slowly (Matrix's 2 s defaults).
struct SpanLagReport {
  std::string kind;  // idle_lag | input_lag
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  std::string name;  // idle handler name, or "input N"
  std::vector<NamedCallNode> tree;
  std::string scene;
};

// A sync barrier left at the head of the queue while synchronous messages starve.
struct BarrierLeakReport {
  uint32_t tid = 0;
  uint64_t token = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  bool removed = false;
  uint64_t sync_messages_enqueued = 0;  // synchronous messages posted while it stood
};

struct Milestone {
  std::string name;  // exec, app.create.begin, app.create.end, activity.launch, first.frame,
                     // activity.focus, fully.drawn, fully.drawn.frame
  uint64_t ts_ns = 0;
  std::string activity;
  bool warm = false;
};

struct WarmStart {
  std::string activity;
  uint64_t launch_ns = 0;
  uint64_t focus_ns = 0;        // 0: never focused before the session ended
  uint64_t first_frame_ns = 0;  // end of the first frame after the launch (0: none)
  bool over_threshold = false;  // Matrix's warm threshold (4 s)
  bool excessive = false;       // Android vitals' warm level (2 s)
  std::vector<NamedCallNode> tree;
  SampledCallTree sampled;
  uint64_t cost_ns() const { return focus_ns > launch_ns ? focus_ns - launch_ns : 0; }
};

// Startup (Matrix's StartupTracer plus what it cannot see: exec, TTID/TTFD, frames).
struct StartupReport {
  bool seen = false;                  // any lifecycle role fired
  std::vector<Milestone> milestones;  // in time order
  std::optional<uint64_t> exec_ns;
  std::optional<uint64_t> app_create_begin_ns, app_create_end_ns;
  std::optional<uint64_t> first_focus_ns, care_focus_ns, first_frame_ns, fully_drawn_ns, fully_drawn_frame_ns;
  std::string app_create_scene;  // first launched activity (Matrix application_create_scene)
  std::string care_scene;        // first focused activity that is not a splash
  bool cold_complete = false;    // the care scene got focus
  // Costs (0 when a milestone is missing); Matrix's names in comments.
  uint64_t exec_to_app_create_ns = 0;  // what Matrix cannot see: exec -> app create begin
  uint64_t application_create_ns = 0;  // application_create
  uint64_t first_screen_ns = 0;        // first_activity_create: app create begin -> first focus
  uint64_t cold_ns = 0;                // startup_duration: app create begin -> care scene focus
  uint64_t cold_from_exec_ns = 0;      // exec -> care scene focus
  uint64_t ttid_ns = 0;                // exec (or app create) -> first frame after launch
  uint64_t ttfd_ns = 0;                // exec (or app create) -> first frame after fully drawn
  bool over_threshold = false;         // Matrix's cold threshold (10 s)
  bool excessive = false;              // Android vitals' cold level (5 s)
  std::vector<NamedCallNode> tree;     // startup call tree when over the threshold
  SampledCallTree sampled;             // the same from stack samples
  std::vector<WarmStart> warm_starts;
  std::vector<std::string> missing;  // milestones never reached
};

// Where a thread's on-CPU samples are, for a session without messages (a JVM started with no
// flags): the sampled_tree tracer's view of the whole session, per thread.
struct MethodShare {
  std::string name;
  uint64_t self_samples = 0;   // samples with the frame innermost
  uint64_t total_samples = 0;  // samples with the frame anywhere (once per sample)
};
struct ThreadProfile {
  uint32_t tid = 0;
  uint64_t samples = 0;          // on CPU
  std::vector<MethodShare> top;  // by self samples, then total, then name
  SampledCallTree tree;          // the thread's whole session, trimmed as slow spans' trees
};
struct SessionProfileReport {
  std::vector<ThreadProfile> threads;  // most samples first; empty when the session had messages
};

struct Report {
  SessionInfo session;
  // The threads' names (comm) as the loader read them while they lived, by tid; a thread
  // without one (a replayed recording from before names were recorded) shows its number only.
  std::map<uint32_t, std::string> thread_names;
  MessagesReport messages;
  uint64_t evil_threshold_ns = 0;
  std::vector<EvilMethodReport> evil_methods;
  std::vector<StallReport> stalls;
  std::vector<SignalAnrReport> signal_anrs;
  std::vector<SpanLagReport> span_lags;
  std::vector<BarrierLeakReport> barrier_leaks;
  StartupReport startup;
  FramesReport frames;
  // Every stack sample of the session, folded by stack (the sampled_tree tracer): what -f folded
  // --folded-scope session draws.
  std::vector<FoldedStack> session_stacks;
  // With no messages: each sampled thread's profile (the sampled_tree tracer).
  SessionProfileReport session_profile;
  Stats stats;
  // `report ISSUES...`: issues the Matrix SDK reported on phones, and their fleet view.
  // When enabled, the report is this section alone (no session was traced).
  MatrixIssuesReport matrix;
};

}  // namespace looptrace
