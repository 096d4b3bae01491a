// How sampled call trees look in the text and JSON reports (shared by their renderers).
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "looptrace/report/sampled_call_tree.h"

namespace looptrace {

// "997 Hz", or the mean rate and the asked one where --cpu-budget lowered the rate.
std::string SampleRateText(const SampledCallTree& tree);

// The tree under a header line, every line starting with `indent`; `root_label` names the
// span ("[message] evil.jank").
void RenderSampledTree(const SampledCallTree& tree, const std::string& root_label, const std::string& indent,
                       std::ostream& out);

// The pre-order array (the same node keys as "tree", plus samples, on_cpu_ns, off_cpu_ns and
// off_cpu_by_reason), for the "sampled_tree" key.
nlohmann::json SampledTreeJson(const SampledCallTree& tree);
// Everything else about it, for the "sampled" key.
nlohmann::json SampledInfoJson(const SampledCallTree& tree);
// Adds both keys to a report line when the tree exists.
void AddSampledJson(const SampledCallTree& tree, nlohmann::json* record);

}  // namespace looptrace
