#include "sampled_render.h"

#include "looptrace/util/text_safety.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "looptrace/report/render.h"

namespace looptrace {
namespace {

using nlohmann::json;

std::string Reasons(const SampledNode& n) {
  if (n.off_cpu_by_reason.empty() || n.off_cpu_ns == 0) return "";
  if (n.off_cpu_by_reason.size() == 1) return fmt::format("  [off CPU: {}]", n.off_cpu_by_reason.front().first);
  std::string text;
  for (const auto& [reason, ns] : n.off_cpu_by_reason)
    text += fmt::format("{}{} {:.0f}%", text.empty() ? "" : ", ", reason, 100.0 * ns / n.off_cpu_ns);
  return "  [off CPU: " + text + "]";
}

}  // namespace

std::string SampleRateText(const SampledCallTree& tree) {
  if (!tree.nominal_sample_hz || tree.sample_hz >= tree.nominal_sample_hz) return fmt::format("{} Hz", tree.sample_hz);
  return fmt::format("{} Hz on average, lowered from {} Hz by --cpu-budget", tree.sample_hz, tree.nominal_sample_hz);
}

void RenderSampledTree(const SampledCallTree& tree, const std::string& root_label, const std::string& indent,
                       std::ostream& out) {
  if (tree.empty()) return;
  out << fmt::format(
      "{}sampled call tree: {} stack sample{} ({} on CPU at {}, {} at switch-outs{}); on CPU {}, "
      "off CPU {}\n",
      indent, tree.samples_on_cpu + tree.samples_off_cpu, tree.samples_on_cpu + tree.samples_off_cpu == 1 ? "" : "s",
      tree.samples_on_cpu, SampleRateText(tree), tree.samples_off_cpu, tree.dwarf ? ", DWARF-unwound" : "",
      FormatDuration(tree.on_cpu_ns), FormatDuration(tree.off_cpu_ns));
  if (!tree.common_frames.empty()) {
    const size_t shown = std::min<size_t>(tree.common_frames.size(), 4);
    std::string path = tree.common_frames.size() > shown ? "... > " : "";
    for (size_t i = tree.common_frames.size() - shown; i < tree.common_frames.size(); ++i)
      path += tree.common_frames[i] + " > ";
    out << fmt::format("{}every stack ran under: {}\n", indent, path.substr(0, path.size() - 3));
  }
  if (tree.unsampled_on_cpu_ns)
    out << fmt::format("{}{} on CPU without a sample (bursts shorter than the sample period)\n", indent,
                       FormatDuration(tree.unsampled_on_cpu_ns));
  if (!tree.walk_stops.empty()) {
    // The fix first, on a short line of its own: which modules keep no frame pointers. Then
    // the reasons, the most frequent first, a few of them (the folded stacks have them all).
    constexpr std::string_view kNoFramePointers = " keeps no frame pointers (--dwarf-unwind unwinds it)";
    constexpr size_t kReasonsShown = 4;
    uint64_t total = 0, fixable = 0;
    std::vector<std::string> modules;
    for (const auto& [reason, n] : tree.walk_stops) {
      total += n;
      if (const size_t at = reason.find(kNoFramePointers); at != std::string::npos) {
        fixable += n;
        modules.push_back(EscapeForTerminal(reason.substr(0, at)));
      }
    }
    if (fixable && !tree.dwarf)
      out << fmt::format("{}hint: --dwarf-unwind completes {} of {} incomplete stack{} ({} keep{} no frame pointers)\n",
                         indent, fixable, total, total == 1 ? "" : "s",
                         modules.size() <= 3
                             ? fmt::format("{}", fmt::join(modules, ", "))
                             : fmt::format("{}, {} and {} more", modules[0], modules[1], modules.size() - 2),
                         modules.size() == 1 ? "s" : "");
    std::vector<std::pair<std::string, uint64_t>> stops = tree.walk_stops;
    std::stable_sort(stops.begin(), stops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string reasons;
    for (size_t i = 0; i < stops.size() && i < kReasonsShown; ++i)
      reasons +=
          fmt::format("{}{} {}", reasons.empty() ? "" : ", ", EscapeForTerminal(stops[i].first), stops[i].second);
    if (stops.size() > kReasonsShown) reasons += fmt::format(", {} other reasons", stops.size() - kReasonsShown);
    out << fmt::format("{}incomplete stacks: {} ({})\n", indent, total, reasons);
  }
  if (!tree.stack_key.empty())
    out << fmt::format("{}stackKey {}  {}  (sampled)\n", indent, EscapeForTerminal(tree.stack_key),
                       EscapeForTerminal(tree.stack_key_name));
  if (tree.nodes_before_trim > tree.nodes.size())
    out << fmt::format("{}tree trimmed to {} of {} nodes (Matrix's rule; --sampled-max-nodes)\n", indent,
                       tree.nodes.size(), tree.nodes_before_trim);
  const double root = static_cast<double>(std::max<uint64_t>(tree.span_ns, 1));
  out << fmt::format("{}{:>12} {:>6}  {:>10} {:>10} {:>7}  {}\n", indent, "time", "%", "on CPU", "off CPU", "samples",
                     "frame");
  for (size_t i = 0; i < tree.nodes.size(); ++i) {
    const SampledNode& n = tree.nodes[i];
    const bool leaf = i + 1 == tree.nodes.size() || tree.nodes[i + 1].node.depth <= n.node.depth;
    std::string label = n.node.depth == 0 ? root_label : EscapeForTerminal(n.name);  // names from the target's files
    if (leaf && n.node.depth > 0) label += Reasons(n);
    out << fmt::format("{}{:>12} {:>5.1f}%  {:>10} {:>10} {:>7}  {}{}\n", indent, FormatDuration(n.node.cost_ns),
                       100.0 * n.node.cost_ns / root, FormatDuration(n.on_cpu_ns), FormatDuration(n.off_cpu_ns),
                       n.samples, std::string(2 * n.node.depth, ' '), label);
  }
}

json SampledTreeJson(const SampledCallTree& tree) {
  json out = json::array();
  const double root = static_cast<double>(std::max<uint64_t>(tree.span_ns, 1));
  for (const SampledNode& n : tree.nodes) {
    json reasons = json::object();
    for (const auto& [reason, ns] : n.off_cpu_by_reason) reasons[reason] = ns;
    out.push_back({{"depth", n.node.depth},
                   {"id", n.node.id},
                   {"name", n.name},
                   {"count", n.node.count},
                   {"cost_ns", n.node.cost_ns},
                   {"percent", std::round(1000.0 * n.node.cost_ns / root) / 10.0},
                   {"samples", n.samples},
                   {"on_cpu_ns", n.on_cpu_ns},
                   {"off_cpu_ns", n.off_cpu_ns},
                   {"off_cpu_by_reason", reasons}});
  }
  return out;
}

json SampledInfoJson(const SampledCallTree& tree) {
  json stops = json::object();
  for (const auto& [reason, n] : tree.walk_stops) stops[reason] = n;
  return json{{"sample_hz", tree.sample_hz},
              {"nominal_sample_hz", tree.nominal_sample_hz},
              {"dwarf", tree.dwarf},
              {"samples_on_cpu", tree.samples_on_cpu},
              {"samples_off_cpu", tree.samples_off_cpu},
              {"on_cpu_ns", tree.on_cpu_ns},
              {"off_cpu_ns", tree.off_cpu_ns},
              {"unsampled_on_cpu_ns", tree.unsampled_on_cpu_ns},
              {"common_frames", tree.common_frames},
              {"stackKey", tree.stack_key},
              {"stack_key_name", tree.stack_key_name},
              {"nodes_before_trim", tree.nodes_before_trim},
              {"walk_stops", stops}};
}

void AddSampledJson(const SampledCallTree& tree, json* record) {
  if (tree.empty()) return;
  (*record)["sampled_tree"] = SampledTreeJson(tree);
  (*record)["sampled"] = SampledInfoJson(tree);
}

}  // namespace looptrace
