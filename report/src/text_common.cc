#include "text_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "looptrace/report/render.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {

std::string Esc(std::string_view text) { return EscapeForTerminal(text); }

std::string ThreadLabel(const Report& report, uint32_t tid) {
  auto it = report.thread_names.find(tid);
  return it == report.thread_names.end() ? std::to_string(tid) : fmt::format("{} \"{}\"", tid, Esc(it->second));
}

std::string Relative(uint64_t ts, uint64_t base) {
  if (ts < base) return fmt::format("-{:.6f}", (base - ts) / 1e9);
  return fmt::format("+{:.6f}", (ts - base) / 1e9);
}

std::string MessageLabel(const Message& m) {
  std::string label = m.name.empty() ? "message" : "message \"" + Esc(m.name) + "\"";
  if (m.msg_id) label += fmt::format(" (id {})", *m.msg_id);
  return label;
}

void RenderCallTree(const std::vector<NamedCallNode>& tree, const std::string& root_label, const std::string& indent,
                    std::ostream& out) {
  uint64_t root = 1;
  for (const auto& n : tree) root = std::max(root, n.node.cost_ns);
  for (const NamedCallNode& n : tree) {
    std::string label = n.node.depth == 0 ? "[message] " + Esc(root_label) : Esc(n.name);
    if (n.node.count > 1) label += fmt::format("  x{}", n.node.count);
    if (n.node.unfinished) label += "  (running)";
    if (n.node.lost_exit) label += "  (exit lost)";
    out << fmt::format("{}{:>12} {:>6.1f}%  {}{}\n", indent, FormatDuration(n.node.cost_ns),
                       100.0 * n.node.cost_ns / root, std::string(2 * n.node.depth, ' '), label);
  }
}

void RenderCauses(const std::vector<StallCause>& causes, uint64_t base, std::string_view indent, std::ostream& out) {
  if (causes.empty()) return;
  std::map<std::string, std::pair<uint64_t, size_t>> totals;  // kind -> (time, count)
  for (const auto& [kind, ns] : TotalByKind(causes)) totals[kind].first = ns;
  for (const StallCause& c : causes) ++totals[c.kind].second;
  std::string summary;
  for (const auto& [kind, t] : totals)
    summary += fmt::format("{}{} {} ({} {}{})", summary.empty() ? "" : ", ",
                           kind == "gc" ? "garbage collection" : "monitor contention", FormatDuration(t.first),
                           t.second, kind == "gc" ? "run" : "wait", t.second == 1 ? "" : "s");
  out << fmt::format("{}runtime stalls: {}\n", indent, summary);
  // The longest five of each kind, in time order.
  std::map<std::string, std::vector<const StallCause*>> by_kind;
  for (const StallCause& c : causes) by_kind[c.kind].push_back(&c);
  std::vector<const StallCause*> shown;
  for (auto& [kind, list] : by_kind) {
    std::stable_sort(list.begin(), list.end(),
                     [](const StallCause* a, const StallCause* b) { return a->cost_ns() > b->cost_ns(); });
    shown.insert(shown.end(), list.begin(), list.begin() + std::min<size_t>(list.size(), 5));
  }
  std::stable_sort(shown.begin(), shown.end(),
                   [](const StallCause* a, const StallCause* b) { return a->begin_ns < b->begin_ns; });
  for (const StallCause* cause : shown) {
    const StallCause& c = *cause;
    std::string what = c.detail;
    if (c.kind == "gc") what += fmt::format("{}on tid {}", what.empty() ? "" : ", ", c.tid);
    if (c.kind == "monitor") {
      if (what.empty()) what = fmt::format("monitor {:#x}", c.monitor);
      if (c.holder_tid)
        what += fmt::format(", held by tid {}{}", c.holder_tid,
                            c.holder_name.empty() ? "" : fmt::format(" \"{}\"", c.holder_name));
      else if (!c.open)
        what += ", holder not seen";
    }
    out << fmt::format("{}  {:<8} {:>12}  from {} s  {}{}\n", indent, c.kind, FormatDuration(c.cost_ns()),
                       Relative(c.begin_ns, base), what, c.open ? " (still running)" : "");
  }
  if (shown.size() < causes.size())
    out << fmt::format("{}  ... {} shorter ones (JSON lists all)\n", indent, causes.size() - shown.size());
}

}  // namespace looptrace
