#include <fmt/format.h>

#include <sstream>

#include "looptrace/report/cost_text.h"
#include "looptrace/report/render.h"
#include "looptrace/report/short_view.h"
#include "looptrace/report/stack_coverage.h"
#include "looptrace/util/text_safety.h"
#include "matrix_render.h"
#include "sampled_render.h"
#include "session_profile_text.h"
#include "stall_text.h"
#include "text_common.h"
#include "text_short.h"

#include <algorithm>
#include <map>

namespace looptrace {
namespace {

class TextRenderer : public Renderer {
 public:
  explicit TextRenderer(RenderOptions options) : options_(options) {}

  // Rendered into memory first: whatever a field escaped per name missed, the whole text is
  // escaped once more (newlines and tabs of the layout kept) before it reaches `final_out`.
  void Render(const Report& report, std::ostream& final_out) const override {
    std::ostringstream out;
    RenderUnchecked(report, out);
    const std::string text = std::move(out).str();
    if (IsTerminalSafe(text, /*keep_layout=*/true))
      final_out << text;
    else
      final_out << EscapeForTerminalKeepLayout(text);
  }

  // Like Android's `kill -3` traces.
  void RenderDump(const ThreadDump& dump, std::ostream& out) const override { out << RenderThreadDumpText(dump); }

 private:
  void RenderUnchecked(const Report& report, std::ostream& out) const {
    if (report.matrix.enabled) {
      RenderMatrixText(report.matrix, options_.top_n, out);
      return;
    }
    if (options_.full) {
      RenderSections(report, nullptr, out);
      return;
    }
    const ShortView view = MakeShortView(report, options_.top_n);
    RenderSections(view.report, &view, out);
  }

  // Every section of `report`; with a short view, the one-line forms and the cuts' line.
  void RenderSections(const Report& report, const ShortView* view, std::ostream& out) const {
    const SessionInfo& s = report.session;
    out << fmt::format("looptrace report: pid {} ({}), profile {}, threads {}\n", s.pid,
                       s.command.empty() ? "?" : Esc(s.command), s.profile.empty() ? "?" : Esc(s.profile),
                       Esc(s.thread_filter));
    out << fmt::format("session: {} ({}{})\n", FormatDuration(s.duration_ns()),
                       s.end_reason.empty() ? "ended" : Esc(s.end_reason),
                       s.exit_status ? fmt::format(", exit status {}", *s.exit_status) : "");
    for (const SessionInfo::Exec& e : s.execs)
      out << fmt::format("exec: at +{} the process became {}: the old program's probes no longer fire\n",
                         FormatDuration(e.ts_ns > s.begin_ns ? e.ts_ns - s.begin_ns : 0), Esc(e.comm));
    if (view) out << IncompleteStacksHint(view->incomplete);
    RenderMessages(report, out);
    RenderSessionProfileText(report, out);
    RenderFrames(report, out);
    RenderEvilMethods(report, view ? view->evil_methods_total : report.evil_methods.size(), out);
    RenderStallsText(report, out);
    RenderSignals(report, out);
    RenderSpanLags(report, out);
    RenderStartup(report, out);
    if (!view) {
      RenderStats(report.stats, out);
      out << CostText(report.stats, s.duration_ns());
      return;
    }
    if (view->quality_complete) {
      out << QualityLine(report.stats);
    } else {
      RenderStats(report.stats, out);
      out << IncompleteStacksLine(view->incomplete);
    }
    out << CostLine(report.stats, s.duration_ns()) << CutsLine(view->cuts);
  }

  void RenderMessages(const Report& report, std::ostream& out) const {
    const MessagesReport& m = report.messages;
    const uint64_t base = report.session.begin_ns;
    if (!m.enabled) {
      out << "\nmessages: off (the profile maps neither dispatch.begin/end nor poll.begin/end)\n";
      return;
    }
    if (m.definition == "poll-bounded")
      out << "\nmessages are poll-bounded (loop iterations): the busy time from a poll's return to the "
             "next poll call;\nwork the profile names inside an iteration (its dispatch roles) is a nested message\n";
    if (m.threads.empty()) {
      out << "\nmessages: none dispatched during the session\n";
      if (report.session.pid)
        out << fmt::format(
            "  (profile {} saw none: if the target was busy, its loop may be one another profile sees;\n"
            "  `looptrace probes -p {}` shows which profiles fit)\n",
            Esc(report.session.profile), report.session.pid);
    }
    for (const ThreadMessages& t : m.threads) {
      const CostSummary& c = t.cost;
      double busy_pct = report.session.duration_ns() ? 100.0 * t.busy_ns / report.session.duration_ns() : 0.0;
      out << fmt::format("\nmessages on thread {}{}\n", ThreadLabel(report, t.tid),
                         t.tid == report.session.pid ? " (main)" : "");
      out << fmt::format("  count {}   busy {} ({:.1f}% of the session)\n", c.count, FormatDuration(t.busy_ns),
                         busy_pct);
      out << fmt::format("  cost  p50 {}   p90 {}   p99 {}   max {}   mean {}\n", FormatDuration(c.p50_ns),
                         FormatDuration(c.p90_ns), FormatDuration(c.p99_ns), FormatDuration(c.max_ns),
                         FormatDuration(c.mean_ns));
    }
    if (const CostSummary& d = m.loop_delay; d.count)
      out << fmt::format(
          "\nevent-loop delay (how late {} timer run{} began after {} due time)\n"
          "  p50 {}   p99 {}   max {}   mean {}\n",
          d.count, d.count == 1 ? "" : "s", d.count == 1 ? "its" : "their", FormatDuration(d.p50_ns),
          FormatDuration(d.p99_ns), FormatDuration(d.max_ns), FormatDuration(d.mean_ns));
    if (m.not_listed)
      out << fmt::format("  ({} earlier messages are not listed (--keep-messages {}); the summaries count them{})\n",
                         m.not_listed, m.keep_limit,
                         m.approximate_percentiles ? ", percentiles within 0.4% (histogram)" : "");
    if (!m.slowest.empty()) {
      out << fmt::format("\nslowest messages (begin relative to session start)\n");
      // The thread's name in a column of its own when the session knows any.
      const bool names = !report.thread_names.empty();
      auto thread_name = [&](uint32_t tid) {
        auto it = report.thread_names.find(tid);
        return it == report.thread_names.end() ? std::string("-") : Esc(it->second);
      };
      out << fmt::format("  {:>3}  {:>12}  {:>12}  {:>8}  {}{:>8}  {}\n", "#", "begin s", "cost", "tid",
                         names ? fmt::format("{:<16}  ", "thread") : "", "id", "name");
      int rank = 1;
      for (const Message& msg : m.slowest) {
        out << fmt::format("  {:>3}  {:>12}  {:>12}  {:>8}  {}{:>8}  {}\n", rank++, Relative(msg.begin_ns, base),
                           FormatDuration(msg.cost_ns()), msg.tid,
                           names ? fmt::format("{:<16}  ", thread_name(msg.tid)) : "",
                           msg.msg_id ? std::to_string(*msg.msg_id) : "-", msg.name.empty() ? "-" : Esc(msg.name));
        // The slow messages nested in it, counted in it.
        for (const Message& inner : m.slowest_nested)
          if (inner.tid == msg.tid && inner.depth > msg.depth && inner.begin_ns >= msg.begin_ns &&
              inner.begin_ns <= msg.end_ns)
            out << fmt::format(
                "  {:>3}  {:>12}  {:>12}  nested: {}\n", "", Relative(inner.begin_ns, base),
                FormatDuration(inner.cost_ns()),
                inner.name.empty() ? (inner.msg_id ? std::to_string(*inner.msg_id) : "-") : Esc(inner.name));
      }
    }
    if (!m.by_name.empty()) {
      out << "\nmessages by name (by total cost)\n";
      // The name last: Python and Java names run long ("Widget.refresh() at app.py:20").
      out << fmt::format("  {:>6}  {:>12}  {:>12}  {:>12}  {}\n", "count", "total", "p50", "max", "name");
      size_t shown = 0;
      for (const NamedMessages& n : m.by_name) {
        if (shown++ == options_.top_n) break;
        out << fmt::format("  {:>6}  {:>12}  {:>12}  {:>12}  {}\n", n.cost.count, FormatDuration(n.cost.total_ns),
                           FormatDuration(n.cost.p50_ns), FormatDuration(n.cost.max_ns), Esc(n.name));
      }
    }
    for (const Message& msg : m.unfinished) {
      out << fmt::format(
          "\nunfinished: message {} on thread {} began {} and was still running "
          "after {} at session end\n",
          msg.name.empty() ? (msg.msg_id ? std::to_string(*msg.msg_id) : "-") : Esc(msg.name),
          ThreadLabel(report, msg.tid), Relative(msg.begin_ns, base), FormatDuration(msg.cost_ns()));
    }
  }

  // `total`: the evil methods before a short view kept the slowest.
  void RenderEvilMethods(const Report& report, size_t total, std::ostream& out) const {
    if (report.evil_methods.empty()) return;
    const uint64_t base = report.session.begin_ns;
    out << fmt::format(
        "\nevil methods: {} message{} of at least {}{}\n", total, total == 1 ? "" : "s",
        FormatDuration(report.evil_threshold_ns),
        total > report.evil_methods.size() ? fmt::format(" (the slowest {} below)", report.evil_methods.size()) : "");
    int index = 1;
    for (const EvilMethodReport& e : report.evil_methods) {
      const Message& m = e.message;
      std::string what = m.name.empty() ? (m.msg_id ? fmt::format("message {}", *m.msg_id) : "message") : Esc(m.name);
      std::string cpu = m.cpu_ns ? fmt::format("{} cpu ({:.1f}%)", FormatDuration(m.cpu_ns),
                                               100.0 * m.cpu_ns / std::max<uint64_t>(m.cost_ns(), 1))
                                 : "cpu unknown";
      out << fmt::format("\n[{}] {} on thread {}: {} wall, {}, began {} s\n", index++, what, ThreadLabel(report, m.tid),
                         FormatDuration(m.cost_ns()), cpu, Relative(m.begin_ns, base));
      for (const Message& n : e.nested)
        out << fmt::format("    {}nested: {}: {} wall, began {} s\n", std::string(2 * (n.depth - 1), ' '),
                           n.name.empty() ? (n.msg_id ? fmt::format("message {}", *n.msg_id) : "message") : Esc(n.name),
                           FormatDuration(n.cost_ns()), Relative(n.begin_ns, base));
      RenderCauses(e.causes, base, "    ", out);
      if (!e.has_beats) {
        if (e.sampled.empty()) out << "    no method beats (the profile maps no method.enter/method.exit)\n";
      } else if (e.tree.size() <= 1) {
        out << "    no instrumented method ran during this message\n";
      } else {
        RenderInstrumented(e, what, out);
      }
      // Both when the profile has method beats; the sampled one alone when it has none.
      RenderSampledTree(e.sampled, "[message] " + what, "    ", out);
    }
  }

  static void RenderInstrumented(const EvilMethodReport& e, const std::string& what, std::ostream& out) {
    out << fmt::format("    stackKey {}  {}{}\n", Esc(e.stack_key), Esc(e.stack_key_name),
                       e.matrix_compat ? "  (matrix-compat)" : "");
    if (e.nodes_before_trim > e.tree.size())
      out << fmt::format("    tree trimmed to {} of {} nodes (Matrix's rule)\n", e.tree.size(), e.nodes_before_trim);
    if (e.beats_overwritten)
      out << fmt::format(
          "    warning: {} beats were overwritten before they were read; the tree "
          "is incomplete (raise --beat-buffer)\n",
          e.beats_overwritten);
    const double root = static_cast<double>(std::max<uint64_t>(e.stack_cost_ns, 1));
    for (const NamedCallNode& n : e.tree) {
      std::string label = n.node.depth == 0 ? "[message] " + what : Esc(n.name);
      if (n.node.count > 1) label += fmt::format("  x{}", n.node.count);
      if (n.node.unfinished) label += "  (unfinished)";
      if (n.node.lost_exit) label += "  (exit lost)";
      out << fmt::format("    {:>12} {:>6.1f}%  {}{}\n", FormatDuration(n.node.cost_ns), 100.0 * n.node.cost_ns / root,
                         std::string(2 * n.node.depth, ' '), label);
    }
  }

  void RenderFrames(const Report& report, std::ostream& out) const {
    const FramesReport& f = report.frames;
    if (!f.enabled) {
      if (report.messages.enabled) out << "\nframes: off (the profile maps no frame.begin/frame.end)\n";
      return;
    }
    if (f.frames.empty()) {
      out << "\nframes: none drawn during the session\n";
      return;
    }
    std::string rates;
    for (double hz : f.refresh_rates) rates += fmt::format("{}{:.0f} Hz", rates.empty() ? "" : ", ", hz);
    out << fmt::format("\nframes: {} (refresh {})\n", f.frames.size(), rates);
    out << fmt::format("  {:<28} {:>6} {:>10} {:>10} {:>6} {:>6} {:>6} {:>12}\n", "scene", "frames", "fps",
                       "Matrix fps", "janky", "slow", "frozen", "msg delay");
    for (const FpsSummary& s : f.scenes)
      out << fmt::format("  {:<28} {:>6} {:>10.1f} {:>10.1f} {:>6} {:>6} {:>6} {:>12}\n",
                         s.scene.empty() ? "-" : Esc(s.scene), s.frames, s.delivered_fps, s.matrix_fps, s.janky, s.slow,
                         s.frozen, FormatDuration(s.delay_by_messages_ns));
    out << "  dropped-frame buckets (Matrix): ";
    std::map<std::string, size_t> levels;
    for (const FpsSummary& s : f.scenes)
      for (const auto& [bucket, n] : s.drop_level) levels[bucket] += n;
    bool first = true;
    for (const char* bucket : {"BEST", "NORMAL", "MIDDLE", "HIGH", "FROZEN"}) {
      out << fmt::format("{}{} {}", first ? "" : ", ", bucket, levels[bucket]);
      first = false;
    }
    out << "\n";
    if (f.worst.empty()) return;
    out << "  worst frames (total = end - vsync)\n";
    static const char* kPhases[] = {"input", "anim", "insets", "traversal", "commit"};
    size_t shown = 0;
    for (size_t index : f.worst) {
      if (shown++ == options_.top_n) break;
      const FrameRecord& fr = f.frames[index];
      std::string phases;
      for (const PhaseCost& p : fr.phases)
        phases += fmt::format(" {} {}", p.phase < 5 ? kPhases[p.phase] : "?", FormatDuration(p.cost_ns()));
      out << fmt::format("  frame {:>5} at {} s: total {} (doFrame {}), dropped {} [{}]{}{}{}\n", fr.frame_id,
                         Relative(fr.begin_ns, report.session.begin_ns), FormatDuration(fr.total_ns()),
                         FormatDuration(fr.cost_ns()), fr.dropped_frames, fr.bucket, phases,
                         fr.delay_by_messages_ns
                             ? fmt::format(", delayed {} by messages", FormatDuration(fr.delay_by_messages_ns))
                             : "",
                         fr.finished ? "" : " (unfinished)");
      if (fr.tree.size() > 1) RenderCallTree(fr.tree, fmt::format("frame {}", fr.frame_id), "      ", out);
      RenderSampledTree(fr.sampled, fmt::format("[frame] {}", fr.frame_id), "      ", out);
    }
  }

  void RenderSignals(const Report& report, std::ostream& out) const {
    const uint64_t base = report.session.begin_ns;
    for (const SignalAnrReport& s : report.signal_anrs) {
      out << fmt::format("\n{} at {} s: SIGQUIT from pid {} \"{}\" (tid {}){}\n",
                         s.from_self ? "self SIGQUIT (not an ANR)" : "confirmed ANR (signal)",
                         Relative(s.signal.ts_ns, base), s.signal.sender_pid, Esc(s.signal.sender_comm),
                         s.signal.sender_tid, s.signal.result ? " (not delivered)" : "");
      if (s.stalled)
        out << fmt::format("  the main thread was in {} for {}\n", MessageLabel(s.message),
                           FormatDuration(s.message.cost_ns()));
      else
        out << "  the main thread was not running a message\n";
    }
  }

  void RenderSpanLags(const Report& report, std::ostream& out) const {
    const uint64_t base = report.session.begin_ns;
    for (const SpanLagReport& l : report.span_lags) {
      out << fmt::format("\n{}: {} on thread {} took {} (from {} s)\n",
                         l.kind == "idle_lag" ? "idle handler lag" : "input lag", Esc(l.name),
                         ThreadLabel(report, l.tid), FormatDuration(l.end_ns - l.begin_ns), Relative(l.begin_ns, base));
      if (!l.tree.empty()) RenderCallTree(l.tree, l.name, "  ", out);
    }
    for (const BarrierLeakReport& b : report.barrier_leaks) {
      out << fmt::format(
          "\nleaked sync barrier: token {} on thread {} stood for {} from {} s while {} "
          "synchronous message{} waited{}\n",
          b.token, ThreadLabel(report, b.tid), FormatDuration(b.end_ns - b.begin_ns), Relative(b.begin_ns, base),
          b.sync_messages_enqueued, b.sync_messages_enqueued == 1 ? "" : "s", b.removed ? "" : " (never removed)");
    }
  }

  void RenderStartup(const Report& report, std::ostream& out) const {
    const StartupReport& s = report.startup;
    if (!s.seen) return;
    out << "\nstartup timeline (gap from the previous milestone)\n";
    uint64_t origin = s.milestones.empty() ? report.session.begin_ns : s.milestones.front().ts_ns;
    uint64_t previous = origin;
    for (const Milestone& m : s.milestones) {
      out << fmt::format("  {:>12}  {:>12}  {:<18} {}{}\n", "+" + FormatDuration(m.ts_ns - origin),
                         "+" + FormatDuration(m.ts_ns - previous), Esc(m.name), Esc(m.activity),
                         m.warm ? "  (warm)" : "");
      previous = m.ts_ns;
    }
    auto line = [&](const char* what, uint64_t ns, const char* note) {
      if (ns) out << fmt::format("  {:<38} {:>12}  {}\n", what, FormatDuration(ns), note);
    };
    out << "\nstartup costs\n";
    line("exec -> application create", s.exec_to_app_create_ns, "(before the app's first code; Matrix cannot see it)");
    line("application create", s.application_create_ns, "(Matrix application_create)");
    line("first screen (app create -> focus)", s.first_screen_ns, "(Matrix first_activity_create)");
    line("cold start (app create -> care scene)", s.cold_ns, "(Matrix startup_duration)");
    line("cold start from exec", s.cold_from_exec_ns, "");
    line("time to first frame (TTID-like)", s.ttid_ns, s.exec_ns ? "(from exec)" : "(from app create)");
    line("time to fully drawn (TTFD-like)", s.ttfd_ns, s.exec_ns ? "(from exec)" : "(from app create)");
    if (!s.care_scene.empty())
      out << fmt::format("  care scene: {}{}\n", Esc(s.care_scene),
                         !s.app_create_scene.empty() && s.app_create_scene != s.care_scene
                             ? fmt::format(" (after {})", Esc(s.app_create_scene))
                             : "");
    if (s.over_threshold) out << "  cold start over Matrix's threshold: call tree below\n";
    if (s.excessive) out << "  cold start is excessive by Android vitals (>= 5 s)\n";
    if (!s.missing.empty()) {
      std::string missing;
      for (const auto& m : s.missing) missing += (missing.empty() ? "" : ", ") + Esc(m);
      out << fmt::format("  not reached before the session ended ({}): {}\n", Esc(report.session.end_reason), missing);
    }
    if (!s.tree.empty()) RenderCallTree(s.tree, "startup", "  ", out);
    RenderSampledTree(s.sampled, "[startup]", "  ", out);
    for (const WarmStart& w : s.warm_starts) {
      out << fmt::format(
          "  warm start of {}: {}{}{}\n", Esc(w.activity), w.focus_ns ? FormatDuration(w.cost_ns()) : "never focused",
          w.first_frame_ns ? fmt::format(", first frame after {}", FormatDuration(w.first_frame_ns - w.launch_ns)) : "",
          w.excessive ? " (excessive by Android vitals, >= 2 s)" : "");
      if (!w.tree.empty()) RenderCallTree(w.tree, "warm start", "    ", out);
      RenderSampledTree(w.sampled, "[warm start]", "    ", out);
    }
  }

  void RenderStats(const Stats& stats, std::ostream& out) const {
    auto shown = [&](StatId id) {
      const StatSeverity severity = StatSeverityOf(id);
      return stats.Get(id) && severity != StatSeverity::kCost && severity != StatSeverity::kCoverage &&
             (options_.verbose || severity != StatSeverity::kFilter);
    };
    bool any = false;
    for (int i = 0; i < kStatCount; ++i) any |= shown(static_cast<StatId>(i));
    if (!any) {
      out << "\ndata quality: complete (no losses counted)\n" << StackCoverageLine(stats);
      return;
    }
    out << "\ndata quality\n" << StackCoverageLine(stats);
    for (int i = 0; i < kStatCount; ++i) {
      auto id = static_cast<StatId>(i);
      if (uint64_t v = stats.Get(id); v && shown(id))
        out << fmt::format("  {:<10} {:<26} {:>8}  {}\n", SeverityName(StatSeverityOf(id)), StatName(id), v,
                           StatDescription(id));
    }
  }

  RenderOptions options_;
};

}  // namespace

std::unique_ptr<Renderer> MakeTextRenderer(const RenderOptions& options) {
  return std::make_unique<TextRenderer>(options);
}

}  // namespace looptrace
