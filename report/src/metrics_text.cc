#include "looptrace/report/metrics_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "looptrace/report/cost_text.h"
#include "looptrace/report/live_status.h"
#include "looptrace/report/stats.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

enum class Type { kCounter, kGauge, kHistogram, kInfo };

// One metric family: its header once, then the samples of every session.
class Writer {
 public:
  explicit Writer(bool openmetrics) : openmetrics_(openmetrics) {}

  void Family(std::string_view name, Type type, std::string_view help, std::string_view unit = {}) {
    family_ = std::string(name);
    type_ = type;
    // OpenMetrics names the family without the counter's _total suffix; the classic format
    // declares the sample name.
    std::string declared = family_;
    if (type == Type::kCounter && !openmetrics_) declared += "_total";
    if (type == Type::kInfo && !openmetrics_) declared += "_info";
    const char* type_name = type == Type::kCounter     ? "counter"
                            : type == Type::kGauge     ? "gauge"
                            : type == Type::kHistogram ? "histogram"
                            : openmetrics_             ? "info"
                                                       : "gauge";
    out_ += fmt::format("# TYPE {} {}\n", declared, type_name);
    if (openmetrics_ && !unit.empty()) out_ += fmt::format("# UNIT {} {}\n", declared, unit);
    out_ += fmt::format("# HELP {} {}\n", declared, help);
  }

  // A sample of the current family: `suffix` "" for gauges, "_total" is added for counters.
  void Sample(const std::string& labels, double value, std::string_view suffix = {}) {
    std::string name = family_;
    if (type_ == Type::kCounter) name += "_total";
    if (type_ == Type::kInfo) name += "_info";
    name += suffix;
    out_ += fmt::format("{}{{{}}} {}\n", name, labels, Number(value));
  }

  std::string Finish() {
    if (openmetrics_) out_ += "# EOF\n";
    return std::move(out_);
  }

  static std::string Number(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v)) return "NaN";
    if (v == std::floor(v) && std::abs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
    return fmt::format("{}", v);
  }

 private:
  bool openmetrics_;
  std::string family_;
  Type type_ = Type::kGauge;
  std::string out_;
};

std::string Label(std::string_view name, std::string_view value) {
  return fmt::format("{}=\"{}\"", name, EscapeLabelValue(value));
}

std::string TargetLabels(const MetricsSession& s) {
  return fmt::format("{},{},{},{}", Label("pid", std::to_string(s.status.pid)), Label("comm", s.status.command),
                     Label("profile", s.status.profile), Label("host", s.host));
}

std::string With(const std::string& labels, std::string_view name, std::string_view value) {
  return labels + "," + Label(name, value);
}

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

bool WantsOpenMetrics(std::string_view accept) {
  // The first media type Prometheus lists is the one it prefers.
  const size_t om = accept.find("application/openmetrics-text");
  if (om == std::string_view::npos) return false;
  const size_t text = accept.find("text/plain");
  return text == std::string_view::npos || om < text;
}

std::string EscapeLabelValue(std::string_view raw) {
  // Terminal escapes first, as every other output does (a scrape ends up in terminals,
  // curl's and promtool's): ESC, C1 controls and bidi overrides become visible text;
  // newlines and tabs stay for the label syntax below.
  const std::string value = EscapeForTerminalKeepLayout(raw);
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderMetrics(const std::vector<MetricsSession>& sessions, const ExporterCounters& exporters,
                          const std::string& host, bool openmetrics) {
  Writer w(openmetrics);
  using Field = std::function<double(const LiveStatus&)>;
  auto per_session = [&](std::string_view name, Type type, std::string_view help, Field field,
                         std::string_view unit = {}) {
    w.Family(name, type, help, unit);
    for (const auto& s : sessions) w.Sample(TargetLabels(s), field(s.status));
  };

  w.Family("looptrace_session", Type::kInfo, "a background session: its target and how messages are defined");
  for (const auto& s : sessions) w.Sample(With(TargetLabels(s), "message_definition", s.status.message_definition), 1);
  per_session(
      "looptrace_session_start_time_seconds", Type::kGauge, "when the session began (Unix time)",
      [](const LiveStatus& st) { return static_cast<double>(st.wall_time_ns) / 1e9; }, "seconds");

  w.Family("looptrace_message_duration_seconds", Type::kHistogram,
           "cost of each dispatched message (begin to end), per thread", "seconds");
  for (const auto& s : sessions) {
    for (const LiveThread& t : s.status.threads) {
      const std::string labels = With(TargetLabels(s), "tid", std::to_string(t.tid));
      uint64_t cumulative = 0;
      for (size_t i = 0; i < kMessageBuckets; ++i) {
        cumulative += t.buckets[i];
        const std::string le = i < kMessageBucketsSeconds.size() ? Writer::Number(kMessageBucketsSeconds[i]) : "+Inf";
        w.Sample(With(labels, "le",
                      openmetrics && i < kMessageBucketsSeconds.size() && le.find('.') == std::string::npos ? le + ".0"
                                                                                                            : le),
                 static_cast<double>(cumulative), "_bucket");
      }
      w.Sample(labels, Seconds(t.total_ns), "_sum");
      w.Sample(labels, static_cast<double>(t.messages), "_count");
    }
  }
  // Node's event-loop delay (how late timers ran), where the profile binds timers' due times.
  if (std::any_of(sessions.begin(), sessions.end(), [](const auto& s) { return s.status.loop_delay.count > 0; })) {
    w.Family("looptrace_event_loop_delay_seconds", Type::kGauge,
             "how late timers ran after their due time since the session began (p50, p99, max)", "seconds");
    for (const auto& s : sessions) {
      const CostSummary& d = s.status.loop_delay;
      if (!d.count) continue;
      for (auto [stat, ns] : {std::pair{"p50", d.p50_ns}, std::pair{"p99", d.p99_ns}, std::pair{"max", d.max_ns}})
        w.Sample(With(TargetLabels(s), "stat", stat), Seconds(ns));
    }
  }
  w.Family("looptrace_busy_seconds", Type::kCounter, "time the thread spent in top-level messages", "seconds");
  for (const auto& s : sessions)
    for (const LiveThread& t : s.status.threads)
      w.Sample(With(TargetLabels(s), "tid", std::to_string(t.tid)), Seconds(t.busy_ns));
  per_session(
      "looptrace_current_message_seconds", Type::kGauge,
      "how long the main thread's running message has run (0: none running)",
      [](const LiveStatus& st) { return Seconds(st.current_running_ns); }, "seconds");
  per_session("looptrace_stall_level", Type::kGauge,
              "the running message against the thresholds: 0 none or short, 1 past LAG, 2 past ANR",
              [](const LiveStatus& st) { return st.state == "anr"   ? 2.0
                                                : st.state == "lag" ? 1.0
                                                                    : 0.0; });

  w.Family("looptrace_frames", Type::kCounter,
           "frames by Android's class: smooth (within vsync + one interval), janky (missed it), frozen (>= 700 ms)");
  for (const auto& s : sessions)
    for (size_t i = 0; i < kJankClasses.size(); ++i)
      w.Sample(With(TargetLabels(s), "class", kJankClasses[i]), static_cast<double>(s.status.frames_by_jank[i]));
  per_session("looptrace_slow_frames", Type::kCounter, "frames over 16 ms at 60 Hz, scaled (Android vitals' slow)",
              [](const LiveStatus& st) { return static_cast<double>(st.slow_frames); });
  w.Family("looptrace_frames_by_bucket", Type::kCounter, "frames by Matrix's dropped-frame bucket");
  for (const auto& s : sessions)
    for (const auto& bucket : DropBuckets()) {
      auto it = s.status.frames_by_bucket.find(bucket);
      w.Sample(With(TargetLabels(s), "bucket", bucket),
               static_cast<double>(it == s.status.frames_by_bucket.end() ? 0 : it->second));
    }
  per_session("looptrace_dropped_frames", Type::kCounter, "vsyncs frames missed (Android's floor(total / interval))",
              [](const LiveStatus& st) { return static_cast<double>(st.dropped_frames); });
  per_session("looptrace_fps", Type::kGauge, "frames per second over the last 10 s (Matrix's formula; 0: no frame)",
              [](const LiveStatus& st) { return st.fps; });
  per_session(
      "looptrace_refresh_rate_hertz", Type::kGauge, "display refresh rate measured from vsyncs",
      [](const LiveStatus& st) { return st.refresh_hz; }, "hertz");

  per_session("looptrace_anrs", Type::kCounter, "messages still running past the ANR threshold (snapshots taken)",
              [](const LiveStatus& st) { return static_cast<double>(st.anrs); });
  per_session("looptrace_lags", Type::kCounter, "messages still running past the LAG threshold (snapshots taken)",
              [](const LiveStatus& st) { return static_cast<double>(st.lags); });
  per_session("looptrace_signal_anrs", Type::kCounter, "SIGQUITs sent to the target by another process",
              [](const LiveStatus& st) { return static_cast<double>(st.signal_anrs); });
  per_session("looptrace_self_sigquits", Type::kCounter, "SIGQUITs the target sent itself",
              [](const LiveStatus& st) { return static_cast<double>(st.self_sigquits); });
  per_session("looptrace_idle_lags", Type::kCounter, "IdleHandlers over the idle-lag threshold",
              [](const LiveStatus& st) { return static_cast<double>(st.idle_lags); });
  per_session("looptrace_input_lags", Type::kCounter, "input events handled slower than the input-lag threshold",
              [](const LiveStatus& st) { return static_cast<double>(st.input_lags); });
  per_session("looptrace_barrier_leaks", Type::kCounter,
              "sync barriers that stood past the threshold while sync messages waited",
              [](const LiveStatus& st) { return static_cast<double>(st.barrier_leaks); });
  per_session("looptrace_evil_methods", Type::kCounter,
              "messages at least the evil-method threshold long (slow, with a call tree)",
              [](const LiveStatus& st) { return static_cast<double>(st.evil_methods); });

  w.Family("looptrace_data_quality", Type::kCounter,
           "loss and degradation counters of the session (see docs/output-formats.md, counters), by name and severity");
  for (const auto& s : sessions)
    for (int i = 0; i < kStatCount; ++i) {
      const StatId id = static_cast<StatId>(i);
      w.Sample(With(With(TargetLabels(s), "counter", StatName(id)), "severity", SeverityName(StatSeverityOf(id))),
               static_cast<double>(s.status.stats.Get(id)));
    }

  w.Family("looptrace_cost_seconds", Type::kCounter,
           "CPU time tracing took from the target and the machine, by part: the loader's own process, the probe hits "
           "(hits x the cost of one measured at the start, + BPF time), the scheduler programs (every CPU)");
  for (const auto& s : sessions) {
    const CostBreakdown cost = CostOf(s.status.stats);
    for (const auto& [part, ns] : {std::pair<const char*, uint64_t>{"loader", cost.loader_ns},
                                   {"probes", cost.probes_ns},
                                   {"scheduler", cost.scheduler_ns}})
      w.Sample(With(TargetLabels(s), "part", part), ns / 1e9);
  }

  if (exporters.clickhouse) {
    const std::string labels = Label("host", host);
    w.Family("looptrace_clickhouse_rows", Type::kCounter, "report rows for ClickHouse: sent, or dropped (see the log)");
    w.Sample(labels + "," + Label("outcome", "sent"), static_cast<double>(exporters.rows_sent));
    w.Sample(labels + "," + Label("outcome", "dropped"), static_cast<double>(exporters.rows_dropped));
    w.Family("looptrace_clickhouse_queued_rows", Type::kGauge, "rows waiting to be sent to ClickHouse");
    w.Sample(labels, static_cast<double>(exporters.rows_queued));
    w.Family("looptrace_clickhouse_insert_failures", Type::kCounter, "INSERTs ClickHouse refused or never answered");
    w.Sample(labels, static_cast<double>(exporters.insert_failures));
  }
  return w.Finish();
}

}  // namespace looptrace
