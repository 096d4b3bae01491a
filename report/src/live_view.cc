#include "looptrace/report/live_view.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>

#include "looptrace/report/render.h"
#include "looptrace/util/local_time.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

std::string Clock(uint64_t wall_ns, bool millis) {
  return LocalTime(wall_ns, millis ? LocalTimeStyle::kTimeMillis : LocalTimeStyle::kTime);
}

// CLOCK_MONOTONIC of the session -> wall clock.
uint64_t Wall(const LiveStatus& s, uint64_t mono_ns) {
  return mono_ns >= s.begin_ns ? s.wall_time_ns + (mono_ns - s.begin_ns) : s.wall_time_ns;
}

std::string MessageText(const LiveMessage& m) {
  std::string text = m.name.empty() ? "message" : "\"" + TerminalText(m.name, 80) + "\"";
  if (m.msg_id) text += fmt::format(" (id {})", *m.msg_id);
  return text;
}

std::string StateLabel(const LiveStatus& s) {
  if (s.state == "anr") return "ANR";
  if (s.state == "lag") return "LAG";
  if (s.state == "running") return "running";
  return "idle";
}

std::string Losses(const Stats& stats) {
  std::string out;
  for (int i = 0; i < kStatCount; ++i) {
    const StatId id = static_cast<StatId>(i);
    const StatSeverity severity = StatSeverityOf(id);
    if (severity == StatSeverity::kInfo || severity == StatSeverity::kFilter || severity == StatSeverity::kCost ||
        severity == StatSeverity::kCoverage || !stats.Get(id))
      continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", StatName(id), stats.Get(id));
  }
  return out.empty() ? "complete (no losses counted)" : out;
}

uint64_t TotalMessages(const LiveStatus& s) {
  uint64_t n = 0;
  for (const auto& t : s.threads) n += t.messages;
  return n;
}

std::string Fit(std::string line, int width) {
  if (width > 0 && line.size() > static_cast<size_t>(width)) {
    // Cut at a character boundary (names are UTF-8).
    size_t cut = static_cast<size_t>(width);
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line.resize(cut);
  }
  return line;
}

}  // namespace

std::string TerminalText(std::string_view text, size_t max_bytes) { return EscapeForTerminal(text, max_bytes); }

std::string FormatAge(uint64_t ns) {
  const uint64_t s = ns / 1'000'000'000;
  if (s < 60) return fmt::format("{:.1f}s", ns / 1e9);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
  return fmt::format("{}d{:02}h", s / 86400, (s / 3600) % 24);
}

std::string FormatStatus(const SessionSummary& session, const LiveStatus& s) {
  std::string out;
  out += fmt::format("pid {} ({}), profile {}, attached {} ({} ago), daemon pid {}\n", s.pid, TerminalText(s.command),
                     s.profile, LocalTime(s.wall_time_ns), FormatAge(s.now_ns - std::min(s.now_ns, s.begin_ns)),
                     session.daemon_pid);
  out += fmt::format("  {} probe points; final report: {}{}\n", session.probe_points,
                     session.output.empty() ? "none (attach had no -o)" : session.output,
                     session.output.empty() ? "" : " (" + session.format + ")");
  if (!session.metrics_url.empty()) out += fmt::format("  metrics: {}\n", session.metrics_url);
  if (!session.log_path.empty()) out += fmt::format("  log: {}\n", session.log_path);

  out += "\nnow: ";
  if (s.current)
    out += fmt::format("{} running for {} [{}]\n", MessageText(*s.current), FormatDuration(s.current_running_ns),
                       StateLabel(s));
  else
    out += s.messages_enabled ? "idle (no message running)\n" : "no messages (the profile maps no dispatch roles)\n";
  if (!s.frame.empty() || !s.scene.empty())
    out += fmt::format("     {}{}{}\n", TerminalText(s.frame), !s.frame.empty() && !s.scene.empty() ? "; " : "",
                       s.scene.empty() ? "" : "scene " + TerminalText(s.scene));
  out += fmt::format("     thresholds: LAG {}, ANR {}\n", FormatDuration(s.lag_threshold_ns),
                     FormatDuration(s.anr_threshold_ns));

  out += fmt::format("\nlast {} (main thread):\n", FormatAge(s.window_ns));
  out += fmt::format("  messages  {:.1f}/s   p50 {}   p99 {}   max {}   busy {:.1f}%\n", s.messages_per_s,
                     FormatDuration(s.p50_ns), FormatDuration(s.p99_ns), FormatDuration(s.max_ns), s.busy_percent);
  if (s.frames_enabled)
    out += fmt::format("  frames    {:.1f} fps ({:.0f} Hz)   janky {} of {}\n", s.fps, s.refresh_hz, s.window_janky,
                       s.window_frames);

  out += "\nsince attach:\n";
  std::string per_thread;
  for (const auto& t : s.threads)
    per_thread += fmt::format("{}{} {}", per_thread.empty() ? "" : ", ",
                              t.tid == s.pid ? "main" : std::to_string(t.tid), t.messages);
  out += fmt::format("  messages  {}{}\n", TotalMessages(s), per_thread.empty() ? "" : " (" + per_thread + ")");
  out += fmt::format(
      "  stalls    ANR {}  LAG {}  signal ANR {}  self SIGQUIT {}  idle lag {}  input lag {}  "
      "barrier leak {}  evil methods {}\n",
      s.anrs, s.lags, s.signal_anrs, s.self_sigquits, s.idle_lags, s.input_lags, s.barrier_leaks, s.evil_methods);
  if (s.frames_enabled) {
    std::string buckets;
    for (const auto& [bucket, n] : s.frames_by_bucket) buckets += fmt::format(" {} {}", bucket, n);
    out += fmt::format("  frames    {}: smooth {}, janky {}, frozen {}; slow {}; dropped {}; buckets{}\n", s.frames,
                       s.frames_by_jank[0], s.frames_by_jank[1], s.frames_by_jank[2], s.slow_frames, s.dropped_frames,
                       buckets);
  }
  if (!s.recent_slow.empty()) {
    out += fmt::format("\nrecent slow messages (>= {}):\n", FormatDuration(kLiveSlowMessageNs));
    for (const auto& m : s.recent_slow)
      out += fmt::format("  {}  {:>10}  {} tid {}\n", Clock(Wall(s, m.begin_ns), true),
                         FormatDuration(m.end_ns - m.begin_ns), MessageText(m), m.tid);
  }
  if (s.last_stall)
    out += fmt::format("\nlast stall: {} of {} at {} (tid {})\n", s.last_stall->kind == "anr" ? "ANR" : "LAG",
                       s.last_stall->name.empty() ? "a message" : "\"" + TerminalText(s.last_stall->name, 80) + "\"",
                       Clock(Wall(s, s.last_stall->at_ns), false), s.last_stall->tid);
  out += fmt::format("\ndata quality: {}\n", Losses(s.stats));
  if (session.clickhouse)
    out += fmt::format(
        "clickhouse: {}: {} rows sent, {} dropped, {} queued{}\n", session.clickhouse_url, session.rows_sent,
        session.rows_dropped, session.rows_queued,
        session.clickhouse_error.empty() ? "" : "; last error: " + TerminalText(session.clickhouse_error, 300));
  return out;
}

std::vector<std::string> TopScreen(const SessionSummary& session, const LiveStatus& s, int width, int height) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("looptrace top - pid {} ({}) profile {} - up {} - {}", s.pid, TerminalText(s.command, 40),
                              s.profile, FormatAge(s.now_ns - std::min(s.now_ns, s.begin_ns)),
                              Clock(Wall(s, s.now_ns), false)));
  std::string state = StateLabel(s);
  if (s.current)
    lines.push_back(
        fmt::format("loop: {:<8} {} for {}", state, MessageText(*s.current), FormatDuration(s.current_running_ns)));
  else
    lines.push_back(fmt::format("loop: {:<8} no message running", state));
  lines.push_back(fmt::format("msgs: {:8.1f}/s   p50 {:>10}   p99 {:>10}   max {:>10}   busy {:5.1f}%   (last {})",
                              s.messages_per_s, FormatDuration(s.p50_ns), FormatDuration(s.p99_ns),
                              FormatDuration(s.max_ns), s.busy_percent, FormatAge(s.window_ns)));
  if (s.frames_enabled)
    lines.push_back(fmt::format("frames: {:6.1f} fps @ {:.0f} Hz   janky {} of {} (last {})   frozen {} total", s.fps,
                                s.refresh_hz, s.window_janky, s.window_frames, FormatAge(s.window_ns),
                                s.frames_by_jank[2]));
  else
    lines.push_back("frames: none (the profile maps no frame roles)");
  lines.push_back(
      fmt::format("stalls: ANR {}  LAG {}  signal ANR {}  idle lag {}  input lag {}  barrier leak {}  evil {}", s.anrs,
                  s.lags, s.signal_anrs, s.idle_lags, s.input_lags, s.barrier_leaks, s.evil_methods));
  if (s.last_stall)
    lines.push_back(fmt::format("last stall: {} {} at {}", s.last_stall->kind == "anr" ? "ANR" : "LAG",
                                s.last_stall->name.empty() ? "-" : TerminalText(s.last_stall->name, 60),
                                Clock(Wall(s, s.last_stall->at_ns), false)));
  lines.push_back(fmt::format("data quality: {}", Losses(s.stats)));
  if (session.clickhouse)
    lines.push_back(fmt::format("clickhouse: {} sent, {} dropped, {} queued{}", session.rows_sent, session.rows_dropped,
                                session.rows_queued, session.clickhouse_error.empty() ? "" : " (failing)"));
  lines.push_back("");
  lines.push_back(fmt::format("recent slow messages (>= {})", FormatDuration(kLiveSlowMessageNs)));
  lines.push_back(fmt::format("{:<12} {:>10} {:>8}  {}", "at", "cost", "tid", "message"));
  for (const auto& m : s.recent_slow)
    lines.push_back(fmt::format("{:<12} {:>10} {:>8}  {}", Clock(Wall(s, m.begin_ns), true),
                                FormatDuration(m.end_ns - m.begin_ns), m.tid, MessageText(m)));
  if (s.recent_slow.empty()) lines.push_back("(none yet)");
  if (height > 1 && lines.size() > static_cast<size_t>(height - 1)) lines.resize(static_cast<size_t>(height - 1));
  lines.push_back("q: quit");
  for (auto& line : lines) line = Fit(std::move(line), width);
  return lines;
}

std::string TopLine(const LiveStatus& s, uint64_t wall_now_ns) {
  std::string line =
      fmt::format("{} pid {} state {} msgs/s {:.1f} p50 {} p99 {} busy {:.1f}%", Clock(wall_now_ns, false), s.pid,
                  StateLabel(s), s.messages_per_s, FormatDuration(s.p50_ns), FormatDuration(s.p99_ns), s.busy_percent);
  if (s.frames_enabled) line += fmt::format(" fps {:.1f} janky {}/{}", s.fps, s.window_janky, s.window_frames);
  line += fmt::format(" anr {} lag {}", s.anrs, s.lags);
  if (s.current) line += fmt::format(" current {} {}", MessageText(*s.current), FormatDuration(s.current_running_ns));
  return line;
}

std::string FormatSessions(const std::vector<SessionRow>& rows, uint64_t wall_now_ns) {
  if (rows.empty()) return "no background sessions\n";
  std::string out = fmt::format("{:>8}  {:<16} {:<12} {:<19} {:>8}  {:>10} {:>5} {:>5} {:>6}  {}\n", "PID", "TARGET",
                                "PROFILE", "SINCE", "AGE", "MESSAGES", "ANR", "LAG", "LOSSES", "REPORT");
  for (const auto& r : rows) {
    const SessionSummary& s = r.summary;
    if (!r.note.empty()) {
      out += fmt::format("{:>8}  {}\n", s.pid, r.note);
      continue;
    }
    out += fmt::format("{:>8}  {:<16} {:<12} {:<19} {:>8}  {:>10} {:>5} {:>5} {:>6}  {}\n", s.pid,
                       TerminalText(s.command, 16), s.profile, LocalTime(s.since_wall_ns),
                       FormatAge(wall_now_ns > s.since_wall_ns ? wall_now_ns - s.since_wall_ns : 0), s.messages, s.anrs,
                       s.lags, s.data_loss, s.output.empty() ? "-" : s.output);
  }
  return out;
}

}  // namespace looptrace
