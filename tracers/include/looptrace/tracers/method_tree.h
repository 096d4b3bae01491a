// Call trees from method beats (nanosecond timing), fixing Matrix's known flaws: no 5 ms
// clock, no whole-stack loss from one bad record, unmatched exits counted, node limit
// configurable. Matrix's exact algorithm lives in matrix_compat.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/report/call_tree.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"

namespace looptrace {

struct CallTreeOptions {
  uint32_t max_depth = 256;  // deeper frames are counted, not kept
};

// Builds the pre-order tree of one message: root (kDispatchMethodId, depth 0, the whole
// message) and its methods at depth >= 1. Problems are counted in `stats`.
std::vector<CallNode> BuildCallTree(const MethodBeats& beats, const CallTreeOptions& options, Stats* stats);

// Matrix's trimming rule (docs/matrix-algorithms.md section 3) on nanosecond costs: remove from the end
// nodes costing under k * 5 ms for k = 1..60 until at most `target` remain, then keep the
// first `target`. Returns how many nodes were removed.
size_t TrimCallTree(std::vector<CallNode>* nodes, size_t target);

// Names methods in reports (e.g. from a Matrix methodMapping.txt); implemented outside
// tracers/ and injected.
class MethodNamer {
 public:
  virtual ~MethodNamer() = default;
  virtual std::optional<std::string> Name(MethodIdKind kind, uint64_t id) const = 0;
};

// A method's display name: the loader's names in `beats`, then `namer`, else "method#ID" or
// a hex address (counted in method_names_unknown). The dispatch root has no name ("").
std::string NameMethod(const MethodNamer* namer, const MethodBeats* beats, uint64_t id, Stats* stats);

// Matrix's stackKey rule (docs/matrix-algorithms.md section 4): the heaviest node by (depth+1)*cost among those costing
// at least 30 % of `stack_cost_ns` ("<id>|"), with the dispatch root removed when others qualify.
const CallNode* StackKeyNode(const std::vector<CallNode>& nodes, uint64_t stack_cost_ns);

// "<id>|" (decimal for method ids and the dispatch root, hex for addresses and strings).
std::string FormatStackKey(uint64_t id, MethodIdKind kind);

// The one call-tree step every report shares: build from the beats, trim to `max_nodes`
// (Matrix's rule), find the stackKey against `min_stack_cost_ns` (the span's cost; the
// costliest node if larger), and name every node.
struct NamedCallTree {
  std::vector<NamedCallNode> nodes;  // pre-order, trimmed; nodes[0] is the span itself
  size_t nodes_before_trim = 0;
  uint64_t stack_cost_ns = 0;  // max(min_stack_cost_ns, costliest node)
  std::string stack_key;       // "" when there is no node
  std::string stack_key_name;
};
NamedCallTree BuildNamedCallTree(const MethodBeats& beats, size_t max_nodes, uint64_t min_stack_cost_ns,
                                 const MethodNamer* namer, Stats* stats, const CallTreeOptions& options = {});

}  // namespace looptrace
