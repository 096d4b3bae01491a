// Live figures of a running session, as plain data: what `status`, `top`, the Prometheus
// endpoint and the ClickHouse sink show while it runs. LiveStatsTracer (tracers/live_stats.h)
// makes a LiveStatus; the daemon adds a SessionSummary; both travel as JSON over the control
// socket (json_codecs.h) and are drawn by live_view.h and metrics_text.h.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/report/stats.h"

namespace looptrace {

// Upper bounds of the message-duration histogram, in seconds (1 ms ... 10 s; +Inf after).
inline constexpr std::array<double, 13> kMessageBucketsSeconds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                                  0.25,  0.5,    1,     2.5,  5,     10};
inline constexpr size_t kMessageBuckets = kMessageBucketsSeconds.size() + 1;  // + Inf

// A frame's class by Android's definitions, exclusive: smooth (ended within its vsync + one
// refresh interval), janky (missed that deadline), frozen (took at least 700 ms). Android
// vitals' "slow" (over 16 ms at 60 Hz, scaled) overlaps them and is counted on its own.
inline constexpr std::array<const char*, 3> kJankClasses = {"smooth", "janky", "frozen"};

// The window the "now" figures cover.
inline constexpr uint64_t kLiveWindowNs = 10'000'000'000;
// A message at least this long is "slow" in the live view (one 60 Hz frame).
inline constexpr uint64_t kLiveSlowMessageNs = 16'000'000;

struct LiveThread {
  uint32_t tid = 0;
  uint64_t messages = 0;
  uint64_t busy_ns = 0;                             // top-level messages only
  uint64_t total_ns = 0;                            // every message (the histogram's sum)
  std::array<uint64_t, kMessageBuckets> buckets{};  // per bucket, not cumulative
};

struct LiveMessage {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;  // 0 while it runs
  std::optional<uint64_t> msg_id;
  std::string name;
};

struct LiveStall {
  std::string kind;  // anr | lag
  uint32_t tid = 0;
  uint64_t at_ns = 0;  // the snapshot
  uint64_t message_begin_ns = 0;
  std::string name;
};

struct LiveStatus {
  uint32_t pid = 0;
  std::string command;
  std::string profile;
  std::string message_definition = "dispatch";
  uint64_t begin_ns = 0;      // CLOCK_MONOTONIC
  uint64_t wall_time_ns = 0;  // CLOCK_REALTIME at begin
  uint64_t now_ns = 0;
  bool messages_enabled = false;
  bool frames_enabled = false;

  // Since the session began.
  std::vector<LiveThread> threads;  // by tid
  uint64_t frames = 0;
  std::array<uint64_t, kJankClasses.size()> frames_by_jank{};
  uint64_t slow_frames = 0;
  std::map<std::string, uint64_t> frames_by_bucket;  // Matrix's five buckets, all present
  uint64_t dropped_frames = 0;
  uint64_t anrs = 0, lags = 0, signal_anrs = 0, self_sigquits = 0, idle_lags = 0, input_lags = 0, barrier_leaks = 0,
           evil_methods = 0;

  // The main thread over the last window (window_ns: how much of it the session covers).
  uint64_t window_ns = 0;
  uint64_t window_messages = 0;
  double messages_per_s = 0;
  uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
  double busy_percent = 0;  // of the window, the running message included
  uint64_t window_frames = 0;
  uint64_t window_janky = 0;  // janky or frozen
  double fps = 0;             // Matrix's formula over the window's frames (0: no frame)
  double refresh_hz = 0;      // as measured so far (or forced)

  // Now.
  std::optional<LiveMessage> current;  // the main thread's outermost running message
  uint64_t current_running_ns = 0;
  std::string state = "idle";  // idle | running | lag | anr (by the running message)
  std::string frame;           // "frame 12 phase TRAVERSAL" while one runs
  std::string scene;
  uint64_t lag_threshold_ns = 0, anr_threshold_ns = 0;
  std::vector<LiveMessage> recent_slow;  // newest first, at least kLiveSlowMessageNs
  std::optional<LiveStall> last_stall;
  // Event-loop delay since the session began (messages with a timer's due time; count 0:
  // the profile binds none).
  CostSummary loop_delay;

  Stats stats;  // the tracers' counters (the loader adds the BPF side)
};

// The message intervals a ClickHouse sink takes as rows: per thread, what ended since the
// last take.
struct MessageInterval {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;  // the previous take (or the session begin)
  uint64_t end_ns = 0;
  CostSummary cost;
  uint64_t busy_ns = 0;
};

// What `sessions` and `status` say about a session besides its live figures.
struct SessionSummary {
  uint32_t pid = 0;
  std::string command;
  std::string profile;
  uint64_t since_wall_ns = 0;
  uint32_t daemon_pid = 0;
  size_t probe_points = 0;
  std::string output;  // the final report's path ("" = none)
  std::string format;
  std::string metrics_url;
  std::string log_path;
  uint64_t messages = 0;
  uint64_t anrs = 0;
  uint64_t lags = 0;
  uint64_t data_loss = 0;  // sum of the data-loss counters
  bool clickhouse = false;
  std::string clickhouse_url;
  uint64_t rows_sent = 0, rows_dropped = 0, rows_queued = 0;
  std::string clickhouse_error;  // the last one, "" if none
};
}  // namespace looptrace
