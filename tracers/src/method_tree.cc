#include "looptrace/tracers/method_tree.h"

#include <algorithm>
#include <memory>

namespace looptrace {
namespace {

struct TreeNode {
  uint64_t id = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint32_t count = 1;
  uint64_t cost_ns = 0;
  bool unfinished = false;
  bool lost_exit = false;
  std::vector<std::unique_ptr<TreeNode>> children;
};

void Flatten(const TreeNode& node, uint32_t depth, std::vector<CallNode>* out) {
  out->push_back({node.id, depth, node.count, node.begin_ns, node.cost_ns, node.unfinished,
                  node.lost_exit});
  for (const auto& child : node.children) Flatten(*child, depth + 1, out);
}

// Consecutive identical leaves become one node with a count, as Matrix merges them.
void MergeLeafRuns(TreeNode* node) {
  auto& kids = node->children;
  std::vector<std::unique_ptr<TreeNode>> merged;
  for (auto& child : kids) {
    MergeLeafRuns(child.get());
    if (!merged.empty()) {
      TreeNode& last = *merged.back();
      if (last.id == child->id && last.children.empty() && child->children.empty() &&
          !last.unfinished && !child->unfinished) {
        last.count += child->count;
        last.cost_ns += child->cost_ns;
        continue;
      }
    }
    merged.push_back(std::move(child));
  }
  kids = std::move(merged);
}

}  // namespace

std::vector<CallNode> BuildCallTree(const MethodBeats& beats, const CallTreeOptions& options,
                                    Stats* stats) {
  TreeNode root;
  root.id = kDispatchMethodId;
  root.begin_ns = beats.begin_ns;
  root.end_ns = beats.end_ns;
  root.cost_ns = beats.end_ns > beats.begin_ns ? beats.end_ns - beats.begin_ns : 0;

  // Open frames; a null node is a frame deeper than max_depth (kept only for pairing).
  struct Frame {
    uint64_t id;
    TreeNode* node;
  };
  std::vector<Frame> stack;
  auto parent = [&]() -> TreeNode* {
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
      if (it->node) return it->node;
    return &root;
  };
  auto close = [&](TreeNode* node, uint64_t end_ns) {
    node->end_ns = std::max(end_ns, node->begin_ns);
    node->cost_ns = node->end_ns - node->begin_ns;
  };

  uint64_t last_ts = beats.begin_ns;
  for (const MethodBeat& beat : beats.beats) {
    if (beat.ts_ns < last_ts) stats->Add(StatId::events_out_of_order);
    last_ts = std::max(last_ts, beat.ts_ns);
    if (beat.enter) {
      if (stack.size() >= options.max_depth) {
        stats->Add(StatId::method_depth_exceeded);
        stack.push_back({beat.id, nullptr});
        continue;
      }
      auto node = std::make_unique<TreeNode>();
      node->id = beat.id;
      node->begin_ns = beat.ts_ns;
      TreeNode* raw = node.get();
      parent()->children.push_back(std::move(node));
      stack.push_back({beat.id, raw});
      continue;
    }
    // An exit closes the innermost open frame of the same method; frames above it never
    // got their exit (an exception or longjmp unwound them) and end here too.
    auto match = std::find_if(stack.rbegin(), stack.rend(),
                              [&](const Frame& f) { return f.id == beat.id; });
    if (match == stack.rend()) {
      stats->Add(StatId::unmatched_method_exit);
      continue;
    }
    size_t keep = stack.rend() - match - 1;
    for (size_t i = stack.size() - 1; i > keep; --i) {
      if (stack[i].node) {
        close(stack[i].node, beat.ts_ns);
        stack[i].node->lost_exit = true;
      }
      stats->Add(StatId::method_exit_missing);
    }
    if (stack[keep].node) close(stack[keep].node, beat.ts_ns);
    stack.resize(keep);
  }
  for (auto& frame : stack) {
    if (!frame.node) continue;
    close(frame.node, beats.end_ns);
    frame.node->unfinished = true;
  }
  MergeLeafRuns(&root);
  std::vector<CallNode> out;
  Flatten(root, 0, &out);
  return out;
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

}  // namespace looptrace
