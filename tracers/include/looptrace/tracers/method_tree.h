// Call trees from method beats (nanosecond timing), fixing Matrix's known flaws: no 5 ms
// clock, no whole-stack loss from one bad record, unmatched exits counted, node limit
// configurable. Matrix's exact algorithm lives in matrix_compat.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/stats.h"

namespace looptrace {

// Matrix's pseudo method for the message itself (METHOD_ID_DISPATCH).
inline constexpr uint64_t kDispatchMethodId = 0xFFFFE;

// One node of a call tree in pre-order; the message itself is the depth-0 root.
struct CallNode {
  uint64_t id = 0;
  uint32_t depth = 0;
  uint32_t count = 1;       // consecutive identical leaf calls merged (Matrix's count)
  uint64_t begin_ns = 0;    // first call's begin
  uint64_t cost_ns = 0;     // summed over merged calls
  bool unfinished = false;  // still running at the end of the slice (closed there)
  bool lost_exit = false;   // its exit never came (exception / longjmp): closed at its caller's exit
};

// A call-tree node with its display name.
struct NamedCallNode {
  CallNode node;
  std::string name;
};

struct CallTreeOptions {
  uint32_t max_depth = 256;      // deeper frames are counted, not kept
};

// Builds the pre-order tree of one message: root (kDispatchMethodId, depth 0, the whole
// message) and its methods at depth >= 1. Problems are counted in `stats`.
std::vector<CallNode> BuildCallTree(const MethodBeats& beats, const CallTreeOptions& options,
                                    Stats* stats);

// Matrix's trimming rule (matrix-reference.md 4.2) on nanosecond costs: remove from the end
// nodes costing under k * 5 ms for k = 1..60 until at most `target` remain, then keep the
// first `target`. Returns how many nodes were removed.
size_t TrimCallTree(std::vector<CallNode>* nodes, size_t target);

// Matrix's stackKey rule (4.3): the heaviest node by (depth+1)*cost among those costing at
// least 30 % of `stack_cost_ns` ("<id>|"), with the dispatch root removed when others qualify.
const CallNode* StackKeyNode(const std::vector<CallNode>& nodes, uint64_t stack_cost_ns);

}  // namespace looptrace
