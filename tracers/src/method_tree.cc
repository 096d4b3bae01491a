#include "looptrace/tracers/method_tree.h"

#include <fmt/format.h>

#include <algorithm>

namespace looptrace {
namespace {

// Nodes live in one arena and link by index: no allocation per call, so a one-million-
// beat slice builds in a few milliseconds.
struct ArenaNode {
  uint64_t id = 0;
  uint64_t begin_ns = 0;
  uint64_t cost_ns = 0;
  uint32_t count = 1;
  int32_t first_child = -1;
  int32_t last_child = -1;
  int32_t prev_sibling = -1;
  int32_t next_sibling = -1;
  int32_t parent = -1;
  bool closed = false;
  bool unfinished = false;
  bool lost_exit = false;
};

class TreeBuilder {
 public:
  explicit TreeBuilder(const MethodBeats& beats) {
    nodes_.reserve(beats.beats.size() / 2 + 1);
    ArenaNode root;
    root.id = kDispatchMethodId;
    root.begin_ns = beats.begin_ns;
    root.cost_ns = beats.end_ns > beats.begin_ns ? beats.end_ns - beats.begin_ns : 0;
    nodes_.push_back(root);
  }

  int32_t Enter(int32_t parent, uint64_t id, uint64_t ts) {
    int32_t index = static_cast<int32_t>(nodes_.size());
    ArenaNode node;
    node.id = id;
    node.begin_ns = ts;
    node.parent = parent;
    ArenaNode& p = nodes_[parent];
    if (p.last_child >= 0) {
      nodes_[p.last_child].next_sibling = index;
      node.prev_sibling = p.last_child;
    } else {
      p.first_child = index;
    }
    p.last_child = index;
    nodes_.push_back(node);
    return index;
  }

  void Close(int32_t index, uint64_t end_ns) {
    ArenaNode& n = nodes_[index];
    n.cost_ns = end_ns > n.begin_ns ? end_ns - n.begin_ns : 0;
    n.closed = true;
  }

  // A leaf that ends right after an identical leaf sibling joins it (Matrix's count).
  void MergeIntoPreviousSibling(int32_t index) {
    ArenaNode& n = nodes_[index];
    if (n.first_child >= 0 || n.unfinished || n.lost_exit || n.prev_sibling < 0) return;
    ArenaNode& prev = nodes_[n.prev_sibling];
    if (prev.id != n.id || prev.first_child >= 0 || prev.unfinished || prev.lost_exit) return;
    prev.count += n.count;
    prev.cost_ns += n.cost_ns;
    prev.next_sibling = -1;
    nodes_[n.parent].last_child = n.prev_sibling;
    if (index == static_cast<int32_t>(nodes_.size()) - 1) nodes_.pop_back();
  }

  ArenaNode& node(int32_t index) { return nodes_[index]; }

  std::vector<CallNode> Flatten() const {
    std::vector<CallNode> out;
    out.reserve(nodes_.size());
    std::vector<std::pair<int32_t, uint32_t>> todo = {{0, 0}};
    while (!todo.empty()) {
      auto [index, depth] = todo.back();
      todo.pop_back();
      const ArenaNode& n = nodes_[index];
      out.push_back({n.id, depth, n.count, n.begin_ns, n.cost_ns, n.unfinished, n.lost_exit});
      // Children are pushed last-first so they pop in call order.
      for (int32_t child = n.last_child; child >= 0; child = nodes_[child].prev_sibling)
        todo.push_back({child, depth + 1});
    }
    return out;
  }

 private:
  std::vector<ArenaNode> nodes_;
};

}  // namespace

std::vector<CallNode> BuildCallTree(const MethodBeats& beats, const CallTreeOptions& options, Stats* stats) {
  TreeBuilder tree(beats);
  // Open frames; index -1 is a frame deeper than max_depth (kept only for pairing).
  struct Frame {
    uint64_t id;
    int32_t index;
  };
  std::vector<Frame> stack;
  int32_t parent = 0;  // innermost open frame that has a node (0 = the root)
  auto refresh_parent = [&] {
    parent = 0;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
      if (it->index >= 0) {
        parent = it->index;
        break;
      }
  };

  uint64_t last_ts = beats.begin_ns;
  uint64_t out_of_order = 0, depth_exceeded = 0, unmatched = 0, missing = 0;
  for (const MethodBeat& beat : beats.beats) {
    if (beat.ts_ns < last_ts) ++out_of_order;
    last_ts = std::max(last_ts, beat.ts_ns);
    if (beat.enter) {
      if (stack.size() >= options.max_depth) {
        ++depth_exceeded;
        stack.push_back({beat.id, -1});
        continue;
      }
      int32_t index = tree.Enter(parent, beat.id, beat.ts_ns);
      stack.push_back({beat.id, index});
      parent = index;
      continue;
    }
    // An exit closes the innermost open frame of the same method; frames above it never
    // got their exit (an exception or longjmp unwound them) and end here too.
    size_t match = stack.size();
    while (match > 0 && stack[match - 1].id != beat.id) --match;
    if (match == 0) {
      ++unmatched;
      continue;
    }
    --match;
    for (size_t i = stack.size() - 1; i > match; --i) {
      if (stack[i].index >= 0) {
        tree.Close(stack[i].index, beat.ts_ns);
        tree.node(stack[i].index).lost_exit = true;
      }
      ++missing;
    }
    const int32_t closed = stack[match].index;
    stack.resize(match);
    if (closed >= 0) {
      tree.Close(closed, beat.ts_ns);
      tree.MergeIntoPreviousSibling(closed);
    }
    refresh_parent();
  }
  for (auto& frame : stack) {
    if (frame.index < 0) continue;
    tree.Close(frame.index, beats.end_ns);
    tree.node(frame.index).unfinished = true;
  }
  if (out_of_order) stats->Add(StatId::events_out_of_order, out_of_order);
  if (depth_exceeded) stats->Add(StatId::method_depth_exceeded, depth_exceeded);
  if (unmatched) stats->Add(StatId::unmatched_method_exit, unmatched);
  if (missing) stats->Add(StatId::method_exit_missing, missing);
  return tree.Flatten();
}

size_t TrimCallTree(std::vector<CallNode>* nodes, size_t target) {
  constexpr uint64_t kStepNs = 5'000'000;  // Matrix's TIME_UPDATE_CYCLE_MS
  constexpr int kMaxPasses = 60;           // FILTER_STACK_MAX_COUNT
  const size_t before = nodes->size();
  for (int pass = 1; pass <= kMaxPasses && nodes->size() > target; ++pass) {
    // Walk from the end: later, deeper, cheaper nodes go first (Matrix's order).
    for (size_t i = nodes->size(); i-- > 1 && nodes->size() > target;) {
      if ((*nodes)[i].cost_ns < pass * kStepNs) nodes->erase(nodes->begin() + i);
    }
  }
  if (nodes->size() > target) nodes->resize(target);
  return before - nodes->size();
}

const CallNode* StackKeyNode(const std::vector<CallNode>& nodes, uint64_t stack_cost_ns) {
  if (nodes.empty()) return nullptr;
  const uint64_t limit = stack_cost_ns * 3 / 10;
  std::vector<const CallNode*> candidates;
  for (const auto& n : nodes)
    if (n.cost_ns >= limit) candidates.push_back(&n);
  std::stable_sort(candidates.begin(), candidates.end(), [](const CallNode* a, const CallNode* b) {
    return (a->depth + 1) * static_cast<long double>(a->cost_ns) >
           (b->depth + 1) * static_cast<long double>(b->cost_ns);
  });
  if (candidates.empty()) return &nodes.front();
  if (candidates.size() > 1 && candidates.front()->depth == 0) candidates.erase(candidates.begin());
  return candidates.front();
}

std::string NameMethod(const MethodNamer* namer, const MethodBeats* beats, uint64_t id, Stats* stats) {
  if (id == kDispatchMethodId) return "";
  if (beats) {
    if (auto it = beats->names.find(id); it != beats->names.end()) return it->second;
  }
  MethodIdKind kind = beats ? beats->kind : MethodIdKind::kId;
  if (namer) {
    if (auto name = namer->Name(kind, id)) return *name;
  }
  stats->Add(StatId::method_names_unknown);
  return kind == MethodIdKind::kId ? fmt::format("method#{}", id) : fmt::format("{:#x}", id);
}

std::string FormatStackKey(uint64_t id, MethodIdKind kind) {
  return kind == MethodIdKind::kId || id == kDispatchMethodId ? fmt::format("{}|", id) : fmt::format("{:#x}|", id);
}

NamedCallTree BuildNamedCallTree(const MethodBeats& beats, size_t max_nodes, uint64_t min_stack_cost_ns,
                                 const MethodNamer* namer, Stats* stats, const CallTreeOptions& options) {
  NamedCallTree tree;
  auto nodes = BuildCallTree(beats, options, stats);
  tree.nodes_before_trim = nodes.size();
  TrimCallTree(&nodes, std::max<size_t>(max_nodes, 1));
  uint64_t max_cost = 0;
  for (const auto& n : nodes) max_cost = std::max(max_cost, n.cost_ns);
  tree.stack_cost_ns = std::max(min_stack_cost_ns, max_cost);
  tree.nodes.reserve(nodes.size());
  for (const auto& n : nodes) tree.nodes.push_back({n, NameMethod(namer, &beats, n.id, stats)});
  // Only the span itself (no method ran): no key, rather than the dispatch sentinel.
  if (const CallNode* key = nodes.size() > 1 ? StackKeyNode(nodes, tree.stack_cost_ns) : nullptr) {
    tree.stack_key = FormatStackKey(key->id, beats.kind);
    tree.stack_key_name = tree.nodes[static_cast<size_t>(key - nodes.data())].name;
  }
  return tree;
}

}  // namespace looptrace
