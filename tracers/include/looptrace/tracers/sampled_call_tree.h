// Sampled call trees: the stack samples of a span (on-CPU samples, and switch-outs weighted
// by the time off CPU) aggregated into the pre-order tree shape method-beat trees have
// (method_tree.h), so every report, renderer and the HTML page draw both the same way.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/report/sampled_call_tree.h"
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
