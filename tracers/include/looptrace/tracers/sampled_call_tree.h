// Sampled call trees: the stack samples of a span (on-CPU samples, and switch-outs weighted
// by the time off CPU) aggregated into the pre-order tree shape method-beat trees have
// (method_tree.h), so every report, renderer and the HTML page draw both the same way.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/tracers/method_tree.h"

namespace looptrace {

// One stack sample with the time it stands for.
struct WeightedStack {
  const std::vector<std::string>* frames = nullptr;  // innermost first
  uint64_t ts_ns = 0;                                // order of first appearance
  uint64_t weight_ns = 0;
  bool on_cpu = true;
  std::string reason;  // off-CPU: lock | io | sleep | poll | preempted | other
  std::string stop;    // why the walk ended early ("" = complete)
};

// A node of a sampled tree: `node.cost_ns` is the time attributed to the frame and its
// callees, `node.count` stays 1 (calls are not counted by sampling).
struct SampledNode {
  CallNode node;
  std::string name;
  uint64_t samples = 0;
  uint64_t on_cpu_ns = 0;
  uint64_t off_cpu_ns = 0;
  std::vector<std::pair<std::string, uint64_t>> off_cpu_by_reason;  // largest first
};

// One stack with its weight, outermost frame first (the format FlameGraph reads).
struct FoldedStack {
  std::vector<std::string> frames;  // outermost first
  uint64_t weight_ns = 0;
};

struct SampledCallTree {
  std::vector<SampledNode> nodes;  // pre-order, trimmed; nodes[0] is the span; empty: no tree
  size_t nodes_before_trim = 0;
  // Frames every complete stack shared, outermost first, down to (not including) the
  // frame at depth 1: where the span ran, collapsed into its root.
  std::vector<std::string> common_frames;
  uint64_t span_ns = 0;
  uint64_t samples_on_cpu = 0;
  uint64_t samples_off_cpu = 0;
  uint64_t on_cpu_ns = 0;  // the span's time on CPU (switches), sampled or not
  uint64_t off_cpu_ns = 0;
  uint64_t unsampled_on_cpu_ns = 0;  // on-CPU time without any sample (left in the root)
  uint32_t sample_hz = 0;
  bool dwarf = false;
  std::string stack_key;  // Matrix's rule on the sampled tree ("<hash>|")
  std::string stack_key_name;
  std::vector<std::pair<std::string, uint64_t>> walk_stops;  // why walks ended early: reason, samples
  std::vector<FoldedStack> folded;                           // every distinct stack (untrimmed), heaviest first

  bool empty() const { return nodes.empty(); }
};

// The id a sampled frame gets in trees and stackKeys: FNV-1a of its name (stable across runs).
uint64_t FrameId(const std::string& name);

// Builds the tree of a span of `span_ns` whose samples are `stacks`: on-CPU samples share
// `on_cpu_ns` (the span's time on CPU, from its switches) equally, off-CPU samples carry
// their own weight. Stacks whose walk was complete are stripped of the frames they all
// share (kept in common_frames) except the last; incomplete ones hang under
// "[unknown callers]". Trimmed to `max_nodes` by Matrix's rule.
SampledCallTree BuildSampledTree(const std::vector<WeightedStack>& stacks, uint64_t span_ns, uint64_t on_cpu_ns,
                                 size_t max_nodes);

// The pseudo frame a folded off-CPU stack ends with: "[off-cpu: lock]".
std::string OffCpuFrame(const std::string& reason);

}  // namespace looptrace
