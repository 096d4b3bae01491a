// A live tracing session: prepare (profile, plan, BPF), attach, stream events to a
// sink until the duration ends, a signal arrives or the target exits, then detach.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/profile.h"
#include "looptrace/tracers/event.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct SessionOptions {
  std::string profile;          // built-in name or file; empty = detect from the target
  bool all_threads = false;     // --threads all
  double duration_s = 0;        // 0 = until Ctrl-C / target exit
  size_t ringbuf_bytes = 8u << 20;
  size_t beat_capacity = 1u << 20;             // method-beat ring records (power of two)
  uint64_t beat_min_cost_ns = 700'000'000;     // messages this long get their beats copied
  uint64_t cold_startup_beats_ns = 10'000'000'000;  // startups this long too
  uint64_t warm_startup_beats_ns = 4'000'000'000;
  std::string btf_path;
  int poll_interval_ms = 25;    // ring buffer drained (and the watchdog run) this often
  bool thread_tracking = true;  // sched_switch/wakeup/signal programs + cpu-clock samples
  int sample_hz = 49;           // cpu-clock samples of the main thread (its stack while running)
  bool dwarf_unwind = false;    // copy registers + stack top for DWARF unwinding (no frame pointers)
  uint64_t lag_threshold_ns = 2'000'000'000;  // watchdog: LAG snapshot
  uint64_t anr_threshold_ns = 5'000'000'000;  // watchdog: ANR snapshot
  bool exact_entry = false;     // --exact-entry: no probe relocation (probe_placement.h)
};

// Blocks SIGINT/SIGTERM and returns a signalfd for them: signals are then handled in
// the event loop (and during attach) instead of killing the process mid-way.
Result<int> BlockTerminationSignals();

// Picks the profile: the explicit one, or the first built-in that resolves for the target.
Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested,
                                                     const TargetBinaries& target);

// record -p PID
Result<void> RecordProcess(pid_t pid, const SessionOptions& options, int signal_fd,
                           EventSink& sink);

struct RunResult {
  pid_t pid = 0;
  std::optional<int> exit_status;  // set when the child exited during the session
  std::optional<int> exit_signal;
};

// run -- CMD ARGS: starts the command with probes attached before it executes.
Result<RunResult> RunCommand(const std::vector<std::string>& argv, const SessionOptions& options,
                             int signal_fd, EventSink& sink);

}  // namespace looptrace::loader
