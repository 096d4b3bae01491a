#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "looptrace/report/render.h"
#include "looptrace/util/text_safety.h"
#include "matrix_render.h"

namespace looptrace {
namespace {

std::string Esc(std::string_view text) { return EscapeForTerminal(text); }
std::string Ms(int64_t ms) {
  return ms < 0 ? fmt::format("{} ms", ms) : FormatDuration(static_cast<uint64_t>(ms) * 1'000'000);
}

std::string CostLine(const MatrixCostSummary& c) {
  return fmt::format("p50 {}  p90 {}  p99 {}  max {}", Ms(c.p50_ms), Ms(c.p90_ms), Ms(c.p99_ms), Ms(c.max_ms));
}

std::string TallyText(const MatrixTally& tally) {
  std::string out;
  for (const auto& [value, count] : tally) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", Esc(value), count);
  return out;
}

// A Matrix tree: cost, share of the root, the method indented by depth; the root is the
// message (Matrix's dispatch pseudo method).
void RenderTree(const std::vector<NamedCallNode>& tree, const std::string& indent, std::ostream& out) {
  uint64_t root = 1;
  for (const auto& n : tree) root = std::max(root, n.node.cost_ns);
  for (const NamedCallNode& n : tree) {
    std::string label = n.name.empty()
                            ? (n.node.id == kDispatchMethodId ? "[message]" : fmt::format("method#{}", n.node.id))
                            : Esc(n.name);
    if (n.node.count > 1) label += fmt::format("  x{}", n.node.count);
    out << fmt::format("{}{:>12} {:>6.1f}%  {}{}\n", indent, FormatDuration(n.node.cost_ns),
                       100.0 * n.node.cost_ns / root, std::string(2 * n.node.depth, ' '), label);
  }
}

const char* CategoryTitle(const std::string& category) {
  if (category == "slow_method") return "slow methods (Trace_EvilMethod NORMAL) by stackKey";
  if (category == "anr") return "ANRs (ANR, SIGNAL_ANR) by stackKey or main-thread frame";
  if (category == "lag") return "lags (LAG, LAG_IDLE_HANDLER, LAG_TOUCH) by main-thread frame";
  if (category == "startup_stack") return "slow startups' stacks (Trace_EvilMethod STARTUP) by stackKey";
  if (category == "thread_priority") return "main-thread priority / timer slack changes by caller";
  return "other Trace_EvilMethod issues";
}

void RenderGroups(const MatrixIssuesReport& m, size_t top_n, std::ostream& out) {
  std::string category;
  size_t shown = 0, left = 0;
  auto end_category = [&] {
    if (left) out << fmt::format("  ... {} more signatures (-f json lists them all)\n", left);
    left = 0;
  };
  for (const MatrixIssueGroup& g : m.groups) {
    if (g.category != category) {
      end_category();
      category = g.category;
      shown = 0;
      out << fmt::format("\n{}:\n", CategoryTitle(category));
    }
    if (shown++ >= top_n) {
      ++left;
      continue;
    }
    out << fmt::format("  {}  {}  {} issue{}\n", g.name.empty() ? "(unnamed)" : Esc(g.name),
                       g.key.empty() ? "" : "[" + Esc(g.key) + "]", g.issues, g.issues == 1 ? "" : "s");
    if (g.cost.count) out << fmt::format("    cost: {}\n", CostLine(g.cost));
    if (g.details.size() > 1 || (g.details.size() == 1 && g.category != "slow_method"))
      out << fmt::format("    details: {}\n", TallyText(g.details));
    if (!g.scenes.empty()) out << fmt::format("    scenes: {}\n", TallyText(g.scenes));
    if (!g.app_versions.empty()) out << fmt::format("    app versions: {}\n", TallyText(g.app_versions));
    if (!g.devices.empty()) out << fmt::format("    devices: {}\n", TallyText(g.devices));
    if (!g.processes.empty()) out << fmt::format("    processes: {}\n", TallyText(g.processes));
    if (g.merged.size() > 1 && g.issues > 1) {
      out << "    merged tree (every issue's, costs summed):\n";
      RenderTree(g.merged, "    ", out);
    } else if (!g.representative.empty()) {
      out << fmt::format("    tree ({}):\n", Esc(g.representative_source));
      RenderTree(g.representative, "    ", out);
    }
    if (!g.representative_thread_stack.empty()) {
      out << fmt::format("    main thread ({}):\n", Esc(g.representative_source));
      for (const std::string& frame : g.representative_thread_stack) out << "      at " << Esc(frame) << '\n';
    }
  }
  end_category();
}

void RenderFps(const MatrixIssuesReport& m, size_t top_n, std::ostream& out) {
  if (m.fps_scenes.empty()) return;
  out << "\nFPS by scene (Trace_FPS; frames per drop level: BEST NORMAL MIDDLE HIGH FROZEN):\n";
  size_t shown = 0;
  for (const MatrixFpsScene& s : m.fps_scenes) {
    if (shown++ >= top_n) {
      out << fmt::format("  ... {} more scenes\n", m.fps_scenes.size() - top_n);
      break;
    }
    out << fmt::format("  {}: {} report{}, {} frames, fps {:.1f} (worst report {:.1f})\n",
                       s.scene.empty() ? "(no scene)" : Esc(s.scene), s.reports, s.reports == 1 ? "" : "s", s.frames,
                       s.mean_fps, s.worst_fps);
    std::string levels;
    for (size_t i = 0; i < kMatrixDropLevelCount; ++i) levels += fmt::format(" {:>8}", s.drop_level[i]);
    out << fmt::format("    frames by drop level:{}\n", levels);
    std::string sums;
    for (size_t i = 0; i < kMatrixDropLevelCount; ++i) sums += fmt::format(" {:>8.0f}", s.drop_sum[i]);
    out << fmt::format("    dropped frames:      {}\n", sums);
    if (!s.worst_devices.empty()) {
      std::string devices;
      for (const auto& [device, fps] : s.worst_devices)
        devices += fmt::format("{}{} {:.1f} fps", devices.empty() ? "" : ", ", Esc(device), fps);
      out << fmt::format("    worst devices: {}\n", devices);
    }
  }
}

void RenderStartup(const MatrixIssuesReport& m, std::ostream& out) {
  const MatrixStartupSummary& s = m.startup;
  if (!s.cold.count && !s.warm.count) return;
  out << "\nstartup (Trace_StartUp):\n";
  if (s.cold.count) {
    out << fmt::format("  cold starts: {}, startup_duration {}\n", s.cold.count, CostLine(s.cold));
    if (s.application_create.count)
      out << fmt::format("    application_create:    {}\n", CostLine(s.application_create));
    if (s.first_activity_create.count)
      out << fmt::format("    first_activity_create: {}\n", CostLine(s.first_activity_create));
    if (!s.scenes.empty()) out << fmt::format("    launched by: {}\n", TallyText(s.scenes));
  }
  if (s.warm.count) out << fmt::format("  warm starts: {}, startup_duration {}\n", s.warm.count, CostLine(s.warm));
}

void RenderIssue(const MatrixIssue& issue, std::ostream& out) {
  std::string head = Esc(issue.tag);
  if (!issue.detail.empty()) head += " " + Esc(issue.detail);
  if (issue.cost_ms) head += ", cost " + Ms(*issue.cost_ms);
  out << fmt::format("\n{} ({})\n", head, Esc(issue.source));
  std::string where;
  if (!issue.process.empty()) where += "process " + Esc(issue.process);
  if (!issue.scene.empty()) where += (where.empty() ? "" : ", ") + std::string("scene ") + Esc(issue.scene);
  if (!issue.machine.empty()) where += (where.empty() ? "" : ", ") + std::string("device level ") + Esc(issue.machine);
  if (!issue.device.empty()) where += (where.empty() ? "" : ", ") + std::string("device ") + Esc(issue.device);
  if (!issue.app_version.empty())
    where += (where.empty() ? "" : ", ") + std::string("version ") + Esc(issue.app_version);
  if (issue.time_ms) where += fmt::format("{}time {}", where.empty() ? "" : ", ", *issue.time_ms);
  if (!where.empty()) out << "  " << where << '\n';
  if (!issue.stack_key.empty())
    out << fmt::format("  stackKey {} = {}\n", Esc(issue.stack_key),
                       issue.stack_key_name.empty() ? "(not in the stack)" : Esc(issue.stack_key_name));
  if (!issue.tree.empty()) RenderTree(issue.tree, "  ", out);
  if (issue.tag == "Trace_EvilMethod" && issue.tree.empty() && issue.thread_stack.empty())
    out << "  no stack (Matrix 2.1.0 on API >= 24 writes none: its DISPATCH marker is missing)\n";
  if (!issue.thread_stack.empty()) {
    out << "  \"main\" (threadStack)\n";
    for (const std::string& frame : issue.thread_stack) out << "    at " << Esc(frame) << '\n';
  }
  if (issue.tag == "Trace_FPS") {
    out << fmt::format("  fps {}\n", issue.fps ? fmt::format("{:.2f}", *issue.fps) : "?");
    out << "  drop level      frames  dropped\n";
    for (size_t i = 0; i < kMatrixDropLevelCount; ++i)
      out << fmt::format("  {:<14} {:>7}  {:>7.0f}\n", std::string_view(kMatrixDropLevels[i]).substr(8),
                         issue.drop_level[i], issue.drop_sum[i]);
  }
  if (issue.tag == "Trace_StartUp") {
    auto ms = [](const std::optional<int64_t>& v) { return v ? Ms(*v) : std::string("?"); };
    out << fmt::format("  {} start: application_create {}, first_activity_create {}, startup_duration {}\n",
                       issue.warm.value_or(false) ? "warm" : "cold", ms(issue.application_create_ms),
                       ms(issue.first_activity_create_ms), ms(issue.startup_duration_ms));
    if (!issue.application_create_scene.empty())
      out << fmt::format("  application_create_scene {}\n", Esc(issue.application_create_scene));
  }
}

}  // namespace

void RenderMatrixText(const MatrixIssuesReport& m, size_t top_n, std::ostream& out) {
  std::string inputs;
  for (const std::string& input : m.inputs) inputs += (inputs.empty() ? "" : ", ") + Esc(input);
  out << fmt::format("looptrace report: Matrix issues, {} read from {}\n", m.issues,
                     inputs.empty() ? "nothing" : inputs);
  if (m.duplicates)
    out << fmt::format("{} duplicate issue{} (the same content again) counted once\n", m.duplicates,
                       m.duplicates == 1 ? "" : "s");
  std::string kinds;
  for (const auto& [category, count] : m.by_category)
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", category, count);
  if (!kinds.empty()) out << "issues: " << kinds << '\n';
  RenderGroups(m, top_n, out);
  RenderFps(m, top_n, out);
  RenderStartup(m, out);
  if (!m.listed.empty()) {
    out << fmt::format("\nissues one by one ({} of {}{}):\n", m.listed.size(), m.issues,
                       m.not_listed ? fmt::format("; --keep-issues {} keeps the first", m.keep_limit) : "");
    for (const MatrixIssue& issue : m.listed) RenderIssue(issue, out);
  }
  out << "\ndata quality:\n";
  if (m.warnings.empty()) out << "  every issue read whole\n";
  for (const MatrixWarning& w : m.warnings)
    out << fmt::format("  {:<28} {:>8}  {}\n    first: {}\n", w.name, w.count, MatrixWarningDescription(w.name),
                       Esc(w.first));
}

std::vector<FoldedStack> MatrixFolded(const MatrixIssuesReport& m, bool session) {
  std::map<std::vector<std::string>, uint64_t> stacks;
  auto add = [&](const std::string& label, const std::vector<NamedCallNode>& tree) {
    std::vector<std::string> path;
    for (size_t i = 0; i < tree.size(); ++i) {
      const NamedCallNode& n = tree[i];
      path.resize(std::min<size_t>(n.node.depth, path.size()));
      path.push_back(n.name.empty() ? label : n.name);
      uint64_t children = 0;
      for (size_t k = i + 1; k < tree.size() && tree[k].node.depth > n.node.depth; ++k)
        if (tree[k].node.depth == n.node.depth + 1) children += tree[k].node.cost_ns;
      const uint64_t self = n.node.cost_ns > children ? n.node.cost_ns - children : 0;
      if (!self) continue;
      std::vector<std::string> frames;
      if (!session || n.node.depth > 0 || !n.name.empty())
        for (const std::string& f : path)
          if (!f.empty()) frames.push_back(f);
      if (frames.empty()) frames.push_back("[message]");
      stacks[frames] += self;
    }
  };
  std::vector<FoldedStack> out;
  if (session) {
    for (const MatrixIssueGroup& g : m.groups) add("", g.merged);
  } else {
    for (const MatrixIssue& issue : m.listed) {
      if (issue.tree.empty()) continue;
      std::map<std::vector<std::string>, uint64_t> one;
      std::swap(one, stacks);
      add(fmt::format("[{} {} {}]", issue.detail.empty() ? issue.tag : issue.detail, issue.scene, issue.source),
          issue.tree);
      std::swap(one, stacks);
      for (auto& [frames, ns] : one) out.push_back({frames, ns});
    }
  }
  for (auto& [frames, ns] : stacks) out.push_back({frames, ns});
  return out;
}

}  // namespace looptrace
