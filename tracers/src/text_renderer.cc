#include <fmt/format.h>

#include "looptrace/tracers/render.h"

namespace looptrace {

std::string FormatDuration(uint64_t ns) {
  if (ns < 1'000'000) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns < 1'000'000'000) return fmt::format("{:.2f} ms", ns / 1e6);
  return fmt::format("{:.3f} s", ns / 1e9);
}

std::optional<OutputFormat> OutputFormatFromName(std::string_view name) {
  if (name == "text") return OutputFormat::kText;
  if (name == "json") return OutputFormat::kJson;
  return std::nullopt;
}

namespace {

std::string Relative(uint64_t ts, uint64_t base) {
  if (ts < base) return fmt::format("-{:.6f}", (base - ts) / 1e9);
  return fmt::format("+{:.6f}", (ts - base) / 1e9);
}

class TextRenderer : public Renderer {
 public:
  explicit TextRenderer(RenderOptions options) : options_(options) {}

  void Render(const Report& report, std::ostream& out) const override {
    const SessionInfo& s = report.session;
    out << fmt::format("looptrace report: pid {} ({}), profile {}, threads {}\n", s.pid,
                       s.command.empty() ? "?" : s.command, s.profile.empty() ? "?" : s.profile,
                       s.thread_filter);
    out << fmt::format("session: {} ({})\n", FormatDuration(s.duration_ns()),
                       s.end_reason.empty() ? "ended" : s.end_reason);
    RenderMessages(report, out);
    RenderEvilMethods(report, out);
    RenderStats(report.stats, out);
  }

 private:
  void RenderMessages(const Report& report, std::ostream& out) const {
    const MessagesReport& m = report.messages;
    const uint64_t base = report.session.begin_ns;
    if (!m.enabled) {
      out << "\nmessages: off (the profile maps no dispatch.begin/dispatch.end)\n";
      return;
    }
    if (m.threads.empty()) {
      out << "\nmessages: none dispatched during the session\n";
    }
    for (const ThreadMessages& t : m.threads) {
      const CostSummary& c = t.cost;
      double busy_pct = report.session.duration_ns()
                            ? 100.0 * t.busy_ns / report.session.duration_ns()
                            : 0.0;
      out << fmt::format("\nmessages on thread {}{}\n", t.tid,
                         t.tid == report.session.pid ? " (main)" : "");
      out << fmt::format("  count {}   busy {} ({:.1f}% of the session)\n", c.count,
                         FormatDuration(t.busy_ns), busy_pct);
      out << fmt::format("  cost  p50 {}   p90 {}   p99 {}   max {}   mean {}\n",
                         FormatDuration(c.p50_ns), FormatDuration(c.p90_ns),
                         FormatDuration(c.p99_ns), FormatDuration(c.max_ns),
                         FormatDuration(c.mean_ns));
    }
    if (!m.slowest.empty()) {
      out << fmt::format("\nslowest messages (begin relative to session start)\n");
      out << fmt::format("  {:>3}  {:>12}  {:>12}  {:>8}  {:>8}  {}\n", "#", "begin s", "cost",
                         "tid", "id", "name");
      int rank = 1;
      for (const Message& msg : m.slowest) {
        out << fmt::format("  {:>3}  {:>12}  {:>12}  {:>8}  {:>8}  {}\n", rank++,
                           Relative(msg.begin_ns, base), FormatDuration(msg.cost_ns()), msg.tid,
                           msg.msg_id ? std::to_string(*msg.msg_id) : "-",
                           msg.name.empty() ? "-" : msg.name);
      }
    }
    if (!m.by_name.empty()) {
      out << "\nmessages by name (by total cost)\n";
      out << fmt::format("  {:<24}  {:>6}  {:>12}  {:>12}  {:>12}\n", "name", "count", "total",
                         "p50", "max");
      size_t shown = 0;
      for (const NamedMessages& n : m.by_name) {
        if (shown++ == options_.top_n) break;
        out << fmt::format("  {:<24}  {:>6}  {:>12}  {:>12}  {:>12}\n", n.name, n.cost.count,
                           FormatDuration(n.cost.total_ns), FormatDuration(n.cost.p50_ns),
                           FormatDuration(n.cost.max_ns));
      }
    }
    for (const Message& msg : m.unfinished) {
      out << fmt::format("\nunfinished: message {} on thread {} began {} and was still running "
                         "after {} at session end\n",
                         msg.name.empty() ? (msg.msg_id ? std::to_string(*msg.msg_id) : "-")
                                          : msg.name,
                         msg.tid, Relative(msg.begin_ns, base), FormatDuration(msg.cost_ns()));
    }
  }

  void RenderEvilMethods(const Report& report, std::ostream& out) const {
    if (report.evil_methods.empty()) return;
    const uint64_t base = report.session.begin_ns;
    out << fmt::format("\nevil methods: {} message{} of at least {}\n", report.evil_methods.size(),
                       report.evil_methods.size() == 1 ? "" : "s",
                       FormatDuration(report.evil_threshold_ns));
    int index = 1;
    for (const EvilMethodReport& e : report.evil_methods) {
      const Message& m = e.message;
      std::string what = m.name.empty() ? (m.msg_id ? fmt::format("message {}", *m.msg_id) : "message")
                                        : m.name;
      std::string cpu = m.cpu_ns ? fmt::format("{} cpu ({:.1f}%)", FormatDuration(m.cpu_ns),
                                               100.0 * m.cpu_ns / std::max<uint64_t>(m.cost_ns(), 1))
                                 : "cpu unknown";
      out << fmt::format("\n[{}] {} on thread {}: {} wall, {}, began {} s\n", index++, what, m.tid,
                         FormatDuration(m.cost_ns()), cpu, Relative(m.begin_ns, base));
      if (!e.has_beats) {
        out << "    no method beats (the profile maps no method.enter/method.exit)\n";
        continue;
      }
      out << fmt::format("    stackKey {}  {}{}\n", e.stack_key, e.stack_key_name,
                         e.matrix_compat ? "  (matrix-compat)" : "");
      if (e.nodes_before_trim > e.tree.size())
        out << fmt::format("    tree trimmed to {} of {} nodes (Matrix's rule)\n", e.tree.size(),
                           e.nodes_before_trim);
      if (e.beats_overwritten)
        out << fmt::format("    warning: {} beats were overwritten before they were read; the tree "
                           "is incomplete (raise --beat-buffer)\n", e.beats_overwritten);
      const double root = static_cast<double>(std::max<uint64_t>(e.stack_cost_ns, 1));
      for (const NamedCallNode& n : e.tree) {
        std::string label = n.node.depth == 0 ? "[message] " + what : n.name;
        if (n.node.count > 1) label += fmt::format("  x{}", n.node.count);
        if (n.node.unfinished) label += "  (unfinished)";
        if (n.node.lost_exit) label += "  (exit lost)";
        out << fmt::format("    {:>12} {:>6.1f}%  {}{}\n", FormatDuration(n.node.cost_ns),
                           100.0 * n.node.cost_ns / root, std::string(2 * n.node.depth, ' '), label);
      }
    }
  }

  void RenderStats(const Stats& stats, std::ostream& out) const {
    if (!stats.AnyNonZero()) {
      out << "\ndata quality: complete (no losses counted)\n";
      return;
    }
    out << "\ndata quality\n";
    for (int i = 0; i < kStatCount; ++i) {
      auto id = static_cast<StatId>(i);
      if (uint64_t v = stats.Get(id))
        out << fmt::format("  {:<10} {:<26} {:>8}  {}\n", SeverityName(StatSeverityOf(id)),
                           StatName(id), v, StatDescription(id));
    }
  }

  RenderOptions options_;
};

}  // namespace

std::unique_ptr<Renderer> MakeTextRenderer(RenderOptions options) {
  return std::make_unique<TextRenderer>(options);
}

}  // namespace looptrace
