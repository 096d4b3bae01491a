// Sampled call trees as reports carry them: the stack samples of a span aggregated into
// the pre-order shape of method-beat trees (call_tree.h), so every renderer and the HTML
// page draw both the same way. Built by the tracers (tracers/sampled_call_tree.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/report/call_tree.h"

namespace looptrace {

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
  uint32_t sample_hz = 0;            // the on-CPU samples' mean rate (lower where --cpu-budget lowered it)
  uint32_t nominal_sample_hz = 0;    // the rate the session asked for
  bool dwarf = false;
  std::string stack_key;  // Matrix's rule on the sampled tree ("<hash>|")
  std::string stack_key_name;
  std::vector<std::pair<std::string, uint64_t>> walk_stops;  // why walks ended early: reason, samples
  std::vector<FoldedStack> folded;                           // every distinct stack (untrimmed), heaviest first

  bool empty() const { return nodes.empty(); }
};

}  // namespace looptrace
