// ANR, LAG, signal ANR, idle/input lag and leaked sync barriers (Matrix's LooperAnrTracer,
// SignalAnrTracer, IdleHandlerLagTracer, TouchEventLagTracer), from outside: snapshots come
// from the loader's watchdog while the message still runs; this tracer joins them with
// the message's end, its off-CPU intervals and its method beats.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/looper_monitor.h"
#include "looptrace/tracers/report.h"

namespace looptrace {

struct AnrOptions {
  uint64_t anr_threshold_ns = 5'000'000'000;    // Matrix DEFAULT_ANR; Android input timeout
  uint64_t lag_threshold_ns = 2'000'000'000;    // Matrix DEFAULT_NORMAL_LAG
  uint64_t idle_lag_threshold_ns = 2'000'000'000;
  uint64_t input_lag_threshold_ns = 2'000'000'000;
  uint64_t barrier_threshold_ns = 2'000'000'000;
  size_t max_nodes = 30;
  size_t max_intervals = 20;  // longest off-CPU intervals kept per report
  CallTreeOptions tree;
};

// "lock", "io", "sleep", "poll", "preempted" or "other", from the task state at switch-out
// and the kernel stack it blocked in.
std::string ClassifyOffCpu(uint32_t state, const std::vector<std::string>& kernel_stack);

// Follows "waits on a futex owned by" edges from `start`; the cycle if it comes back.
std::vector<uint32_t> FindDeadlock(const std::vector<ThreadSnapshot>& threads, uint32_t start);

class AnrTracer {
 public:
  // `looper` says which messages are running (it pairs dispatch.begin/end).
  AnrTracer(AnrOptions options, Stats* stats, const MethodNamer* namer, const LooperMonitor* looper);

  void OnProbe(const ProbeEvent& event);
  void OnMessageEnd(const Message& message);  // a message the looper monitor completed
  void OnBeats(const MethodBeats& beats);
  void OnSwitch(const ThreadSwitch& event);
  void OnWakeup(const Wakeup& event);
  void OnSnapshot(const StallSnapshot& snapshot);
  void OnSignal(const SignalSent& signal, uint32_t pid);
  void Finish(uint64_t end_ns);
  void Contribute(Report* report);

 private:
  struct PendingStall {
    StallReport report;
    std::optional<MethodBeats> open_beats;
  };
  void Finalize(PendingStall pending, uint64_t end_ns, bool finished);
  std::vector<NamedCallNode> Tree(const MethodBeats& beats, std::string* stack_key);
  std::string CurrentFrame(uint32_t tid) const;

  AnrOptions options_;
  Stats* stats_;
  const MethodNamer* namer_;
  const LooperMonitor* looper_;
  // (tid, message begin, anr level) -> stall waiting for its message to end
  std::map<std::tuple<uint32_t, uint64_t, bool>, PendingStall> pending_;
  std::map<uint32_t, std::deque<OffCpuInterval>> intervals_;   // recent, per tid
  std::map<uint32_t, OffCpuInterval> off_now_;                 // open interval per tid
  std::map<uint32_t, Wakeup> last_wakeup_;
  std::map<uint32_t, std::pair<uint64_t, std::string>> open_idle_;   // tid -> (begin, name)
  std::map<uint64_t, std::pair<uint32_t, uint64_t>> open_inputs_;    // seq -> (tid, receive)
  std::map<std::pair<std::string, uint64_t>, MethodBeats> span_beats_;  // (span, begin)
  std::map<uint64_t, BarrierLeakReport> barriers_;             // open barriers by token
  std::map<uint32_t, std::string> frame_;                      // tid -> "frame N phase P"
  std::string scene_;
  std::vector<StallReport> stalls_;
  std::vector<SignalAnrReport> signals_;
  std::vector<SpanLagReport> span_lags_;
  std::vector<BarrierLeakReport> barrier_leaks_;
};

}  // namespace looptrace
