#include "looptrace/tracers/sampled_call_tree.h"

#include <algorithm>
#include <map>
#include <memory>

namespace looptrace {

uint64_t FrameId(const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

std::string OffCpuFrame(const std::string& reason) { return "[off-cpu: " + (reason.empty() ? "other" : reason) + "]"; }

namespace {

struct TrieNode {
  std::string name;
  uint64_t first_ts = 0;
  uint64_t weight_ns = 0;
  uint64_t samples = 0;
  uint64_t on_cpu_ns = 0;
  uint64_t off_cpu_ns = 0;
  std::map<std::string, uint64_t> reasons;
  std::map<std::string, std::unique_ptr<TrieNode>> children;
};

void Flatten(const TrieNode& node, uint32_t depth, std::vector<CallNode>* calls, std::vector<SampledNode>* extras) {
  SampledNode out;
  out.node.id = FrameId(node.name);
  out.node.depth = depth;
  out.node.count = 1;
  out.node.begin_ns = node.first_ts;
  out.node.cost_ns = node.weight_ns;
  out.name = node.name;
  out.samples = node.samples;
  out.on_cpu_ns = node.on_cpu_ns;
  out.off_cpu_ns = node.off_cpu_ns;
  for (const auto& [reason, ns] : node.reasons) out.off_cpu_by_reason.emplace_back(reason, ns);
  std::stable_sort(out.off_cpu_by_reason.begin(), out.off_cpu_by_reason.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  CallNode call = out.node;
  call.id = extras->size();  // its index while Matrix's trim runs
  calls->push_back(call);
  extras->push_back(std::move(out));
  // Callees in the order they first appeared: for a loop's message, close to call order.
  std::vector<const TrieNode*> children;
  for (const auto& [name, child] : node.children) children.push_back(child.get());
  std::stable_sort(children.begin(), children.end(),
                   [](const TrieNode* a, const TrieNode* b) { return a->first_ts < b->first_ts; });
  for (const TrieNode* child : children) Flatten(*child, depth + 1, calls, extras);
}

}  // namespace

SampledCallTree BuildSampledTree(const std::vector<WeightedStack>& stacks, uint64_t span_ns, uint64_t on_cpu_ns,
                                 size_t max_nodes) {
  SampledCallTree tree;
  tree.span_ns = span_ns;
  tree.on_cpu_ns = on_cpu_ns;
  tree.off_cpu_ns = span_ns > on_cpu_ns ? span_ns - on_cpu_ns : 0;

  // The frames every complete stack shares, outermost first.
  const std::vector<std::string>* first = nullptr;
  size_t common = 0;
  for (const WeightedStack& s : stacks) {
    if (!s.stop.empty() || !s.frames || s.frames->empty()) continue;
    const auto& f = *s.frames;
    if (!first) {
      first = &f;
      common = f.size();
      continue;
    }
    size_t n = 0;
    while (n < common && n < f.size() && f[f.size() - 1 - n] == (*first)[first->size() - 1 - n]) ++n;
    common = n;
  }
  // All but the last shared frame go into common_frames; the last one roots the tree.
  const size_t strip = common > 0 ? common - 1 : 0;
  for (size_t i = 0; i < strip; ++i) tree.common_frames.push_back((*first)[first->size() - 1 - i]);

  TrieNode root;
  std::map<std::string, uint64_t> stops;
  std::map<std::vector<std::string>, uint64_t> folded;
  for (const WeightedStack& s : stacks) {
    if (s.on_cpu)
      ++tree.samples_on_cpu;
    else
      ++tree.samples_off_cpu;
    if (!s.stop.empty()) ++stops[s.stop];
    std::vector<std::string> path;  // outermost first
    const bool complete = s.stop.empty() && s.frames && !s.frames->empty();
    if (!s.frames || s.frames->empty()) {
      path.push_back("[no stack]");
    } else {
      if (!complete) path.push_back("[unknown callers]");
      const auto& f = *s.frames;
      for (size_t i = complete ? strip : 0; i < f.size(); ++i) path.push_back(f[f.size() - 1 - i]);
    }
    std::vector<std::string> full;
    if (s.frames) full.assign(s.frames->rbegin(), s.frames->rend());
    if (!complete && s.frames && !s.frames->empty()) full.insert(full.begin(), "[unknown callers]");
    if (full.empty()) full.push_back("[no stack]");
    if (!s.on_cpu) full.push_back(OffCpuFrame(s.reason));
    folded[full] += s.weight_ns;

    root.samples += 1;
    root.weight_ns += s.weight_ns;
    TrieNode* at = &root;
    for (const std::string& name : path) {
      auto& child = at->children[name];
      if (!child) {
        child = std::make_unique<TrieNode>();
        child->name = name;
        child->first_ts = s.ts_ns;
      }
      at = child.get();
      at->first_ts = std::min(at->first_ts, s.ts_ns);
      at->weight_ns += s.weight_ns;
      at->samples += 1;
      if (s.on_cpu) {
        at->on_cpu_ns += s.weight_ns;
      } else {
        at->off_cpu_ns += s.weight_ns;
        at->reasons[s.reason.empty() ? "other" : s.reason] += s.weight_ns;
      }
    }
  }
  if (stacks.empty()) return tree;

  tree.unsampled_on_cpu_ns = tree.samples_on_cpu == 0 ? on_cpu_ns : 0;

  std::vector<CallNode> calls;
  std::vector<SampledNode> extras;
  root.name = "";
  Flatten(root, 0, &calls, &extras);
  // The root is the span itself, whatever was sampled in it.
  calls[0].cost_ns = span_ns;
  extras[0].node.cost_ns = span_ns;
  extras[0].on_cpu_ns = on_cpu_ns;
  extras[0].off_cpu_ns = tree.off_cpu_ns;
  extras[0].node.id = kDispatchMethodId;
  tree.nodes_before_trim = calls.size();
  TrimCallTree(&calls, std::max<size_t>(max_nodes, 1));
  uint64_t max_cost = 0;
  for (const CallNode& c : calls) max_cost = std::max(max_cost, c.cost_ns);
  const CallNode* key = calls.size() > 1 ? StackKeyNode(calls, std::max(span_ns, max_cost)) : nullptr;
  for (const CallNode& c : calls) {
    tree.nodes.push_back(extras[c.id]);
    if (key == &c) {
      tree.stack_key = FormatStackKey(extras[c.id].node.id, MethodIdKind::kString);
      tree.stack_key_name = extras[c.id].name;
    }
  }
  for (const auto& [reason, n] : stops) tree.walk_stops.emplace_back(reason, n);
  std::stable_sort(tree.walk_stops.begin(), tree.walk_stops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (auto& [frames, weight] : folded) tree.folded.push_back({frames, weight});
  std::stable_sort(tree.folded.begin(), tree.folded.end(),
                   [](const FoldedStack& a, const FoldedStack& b) { return a.weight_ns > b.weight_ns; });
  return tree;
}

}  // namespace looptrace
