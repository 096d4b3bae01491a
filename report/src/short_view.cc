#include "looptrace/report/short_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <type_traits>

namespace looptrace {
namespace {

// "1 more evil method" / "4 more evil methods".
std::string More(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} more {}", n, n == 1 ? one : many);
}

template <typename Node>
size_t TrimNodes(std::vector<Node>& tree, double share) {
  if (tree.size() <= 1) return 0;
  uint64_t root = 1;
  for (const Node& n : tree) root = std::max(root, n.node.cost_ns);
  const double floor = share * static_cast<double>(root);
  // A kept node whose children are being walked, and what was cut under it so far.
  struct Open {
    uint32_t depth = 0;
    Node rest;
    size_t cut = 0;
  };
  std::vector<Node> kept;
  std::vector<Open> open;
  size_t cut_total = 0;
  auto close_to = [&](uint32_t depth) {
    while (!open.empty() && open.back().depth >= depth) {
      Open& o = open.back();
      if (o.cut) {
        o.rest.node.depth = o.depth + 1;
        o.rest.name = fmt::format("{} smaller frame{}", o.cut, o.cut == 1 ? "" : "s");
        kept.push_back(std::move(o.rest));
      }
      open.pop_back();
    }
  };
  for (size_t i = 0; i < tree.size();) {
    const Node& n = tree[i];
    close_to(n.node.depth);
    size_t end = i + 1;
    while (end < tree.size() && tree[end].node.depth > n.node.depth) ++end;
    if (n.node.depth > 0 && !open.empty() && static_cast<double>(n.node.cost_ns) < floor) {
      Open& parent = open.back();
      parent.cut += end - i;
      parent.rest.node.cost_ns += n.node.cost_ns;
      parent.rest.node.begin_ns = parent.cut == end - i ? n.node.begin_ns : parent.rest.node.begin_ns;
      if constexpr (std::is_same_v<Node, SampledNode>) {
        parent.rest.samples += n.samples;
        parent.rest.on_cpu_ns += n.on_cpu_ns;
        parent.rest.off_cpu_ns += n.off_cpu_ns;
      }
      cut_total += end - i;
      i = end;
      continue;
    }
    kept.push_back(n);
    open.push_back(Open{n.node.depth, Node{}, 0});
    ++i;
  }
  close_to(0);
  tree = std::move(kept);
  return cut_total;
}

// The walk stops of a sampled tree, added to the session's; the tree keeps none (the
// session-wide hint and the data-quality table say it once).
void TakeWalkStops(SampledCallTree& tree, IncompleteStacks& incomplete) {
  constexpr std::string_view kNoFramePointers = " keeps no frame pointers (--dwarf-unwind unwinds it)";
  incomplete.dwarf |= tree.dwarf;
  for (const auto& [reason, n] : tree.walk_stops) {
    incomplete.total += n;
    auto same = std::find_if(incomplete.reasons.begin(), incomplete.reasons.end(),
                             [&](const auto& r) { return r.first == reason; });
    if (same == incomplete.reasons.end())
      incomplete.reasons.emplace_back(reason, n);
    else
      same->second += n;
    if (const size_t at = reason.find(kNoFramePointers); at != std::string::npos && !tree.dwarf) {
      incomplete.fixable += n;
      std::string module = reason.substr(0, at);
      if (std::find(incomplete.modules.begin(), incomplete.modules.end(), module) == incomplete.modules.end())
        incomplete.modules.push_back(std::move(module));
    }
  }
  tree.walk_stops.clear();
}

struct Cutter {
  const ShortViewLimits& limits;
  IncompleteStacks& incomplete;
  size_t nodes_cut = 0;

  void Tree(std::vector<NamedCallNode>& tree) { nodes_cut += TrimTree(tree, limits.min_node_share); }
  void Sampled(SampledCallTree& tree) {
    if (tree.empty()) return;
    TakeWalkStops(tree, incomplete);
    nodes_cut += TrimTree(tree.nodes, limits.min_node_share);
    tree.nodes_before_trim = tree.nodes.size();  // the "smaller frames" nodes say what went
    if (tree.common_frames.size() > limits.common_frames) {
      std::vector<std::string> inner(tree.common_frames.end() - static_cast<std::ptrdiff_t>(limits.common_frames),
                                     tree.common_frames.end());
      inner.insert(inner.begin(), "...");
      tree.common_frames = std::move(inner);
    }
  }
};

// Keeps the first `keep` items; returns how many went.
template <typename T>
size_t KeepFirst(std::vector<T>& items, size_t keep) {
  if (items.size() <= keep) return 0;
  const size_t cut = items.size() - keep;
  items.resize(keep);
  return cut;
}

bool SomethingWrong(const Stats& stats, const IncompleteStacks& incomplete) {
  if (incomplete.total || stats.Get(StatId::stack_walk_truncated)) return true;
  for (int i = 0; i < kStatCount; ++i) {
    const auto id = static_cast<StatId>(i);
    const StatSeverity severity = StatSeverityOf(id);
    if ((severity == StatSeverity::kDataLoss || severity == StatSeverity::kError) && stats.Get(id)) return true;
  }
  return false;
}

}  // namespace

size_t TrimTree(std::vector<NamedCallNode>& tree, double share) { return TrimNodes(tree, share); }
size_t TrimTree(std::vector<SampledNode>& tree, double share) { return TrimNodes(tree, share); }

ShortView MakeShortView(const Report& full, size_t top_n, const ShortViewLimits& limits) {
  ShortView view;
  view.report = full;
  Report& r = view.report;
  Cutter cut{limits, view.incomplete};
  std::vector<std::string>& cuts = view.cuts;

  MessagesReport& m = r.messages;
  const size_t names_full = std::min(m.by_name.size(), top_n);
  if (names_full > limits.names) {
    m.by_name.resize(limits.names);
    cuts.push_back(More(names_full - limits.names, "message name", "message names"));
  }
  if (size_t n = KeepFirst(m.unfinished, limits.span_lags))
    cuts.push_back(More(n, "unfinished message", "unfinished messages"));

  FramesReport& f = r.frames;
  const size_t worst_full = std::min(f.worst.size(), top_n);
  if (worst_full > limits.worst_frames)
    cuts.push_back(More(worst_full - limits.worst_frames, "worst frame", "worst frames"));
  if (f.worst.size() > limits.worst_frames) f.worst.resize(limits.worst_frames);
  for (size_t index : f.worst) {
    cut.Tree(f.frames[index].tree);
    cut.Sampled(f.frames[index].sampled);
  }

  // The slowest evil methods, in the report's order.
  view.evil_methods_total = r.evil_methods.size();
  if (r.evil_methods.size() > limits.trees) {
    std::vector<size_t> order(r.evil_methods.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return r.evil_methods[a].message.cost_ns() > r.evil_methods[b].message.cost_ns();
    });
    order.resize(limits.trees);
    std::sort(order.begin(), order.end());
    std::vector<EvilMethodReport> kept;
    for (size_t i : order) kept.push_back(std::move(r.evil_methods[i]));
    cuts.push_back(More(r.evil_methods.size() - kept.size(), "evil method", "evil methods"));
    r.evil_methods = std::move(kept);
  }
  for (EvilMethodReport& e : r.evil_methods) {
    cut.Tree(e.tree);
    e.nodes_before_trim = std::min(e.nodes_before_trim, e.tree.size());
    cut.Sampled(e.sampled);
  }

  // Stalls: the stalled thread alone (and the threads of a deadlock), its innermost frames.
  size_t dumps_cut = 0, frames_cut = 0;
  if (size_t n = KeepFirst(r.stalls, limits.stalls)) cuts.push_back(More(n, "stall snapshot", "stall snapshots"));
  for (StallReport& s : r.stalls) {
    cut.Tree(s.tree);
    s.snapshot.memory_kb.clear();
    KeepFirst(s.off_cpu, limits.off_cpu);
    std::vector<ThreadSnapshot> threads;
    for (ThreadSnapshot& t : s.snapshot.threads) {
      const bool in_cycle =
          std::find(s.deadlock_cycle.begin(), s.deadlock_cycle.end(), t.tid) != s.deadlock_cycle.end();
      if (t.tid != s.message.tid && !in_cycle) continue;
      t.kernel_stack.clear();
      frames_cut += KeepFirst(t.user_stack, limits.stack_frames);
      threads.push_back(std::move(t));
    }
    dumps_cut += s.snapshot.threads.size() - threads.size();
    s.snapshot.threads = std::move(threads);
  }
  if (dumps_cut)
    cuts.push_back(fmt::format("{} other thread{} in the stall dumps", dumps_cut, dumps_cut == 1 ? "" : "s"));
  if (frames_cut) cuts.push_back(More(frames_cut, "native frame", "native frames"));

  if (size_t n = KeepFirst(r.span_lags, limits.span_lags)) cuts.push_back(More(n, "span lag", "span lags"));
  for (SpanLagReport& l : r.span_lags) cut.Tree(l.tree);
  if (size_t n = KeepFirst(r.barrier_leaks, limits.span_lags)) cuts.push_back(More(n, "barrier leak", "barrier leaks"));

  StartupReport& s = r.startup;
  cut.Tree(s.tree);
  cut.Sampled(s.sampled);
  if (size_t n = KeepFirst(s.warm_starts, limits.span_lags)) cuts.push_back(More(n, "warm start", "warm starts"));
  for (WarmStart& w : s.warm_starts) {
    cut.Tree(w.tree);
    cut.Sampled(w.sampled);
  }
  // A session without messages: the busiest threads, their top methods and trimmed trees.
  std::vector<ThreadProfile>& profiled = r.session_profile.threads;
  if (size_t n = KeepFirst(profiled, limits.profile_threads))
    cuts.push_back(More(n, "profiled thread", "profiled threads"));
  size_t methods_cut = 0;
  for (ThreadProfile& t : profiled) {
    methods_cut += KeepFirst(t.top, limits.profile_methods);
    cut.Sampled(t.tree);
  }
  if (methods_cut) cuts.push_back(More(methods_cut, "top method", "top methods"));
  if (cut.nodes_cut) cuts.push_back(fmt::format("{} small tree node{}", cut.nodes_cut, cut.nodes_cut == 1 ? "" : "s"));

  // The evil methods and frames left out still had walk stops: the hint counts them too.
  for (const EvilMethodReport& e : full.evil_methods)
    if (std::none_of(r.evil_methods.begin(), r.evil_methods.end(), [&](const EvilMethodReport& kept) {
          return kept.message.begin_ns == e.message.begin_ns && kept.message.tid == e.message.tid;
        })) {
      SampledCallTree copy;
      copy.walk_stops = e.sampled.walk_stops;
      copy.dwarf = e.sampled.dwarf;
      TakeWalkStops(copy, view.incomplete);
    }

  view.quality_complete = !SomethingWrong(r.stats, view.incomplete);
  for (int i = 0; i < kStatCount; ++i)
    if (StatSeverityOf(static_cast<StatId>(i)) == StatSeverity::kCost && r.stats.Get(static_cast<StatId>(i))) {
      cuts.push_back("looptrace's cost by part");
      break;
    }
  return view;
}

}  // namespace looptrace
