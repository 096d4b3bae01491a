// Call trees as reports carry them: the nodes of a span's method tree in pre-order, each
// with its display name. Built by the tracers (tracers/method_tree.h); the renderers only
// read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace looptrace {

// Matrix's pseudo method for the message itself (METHOD_ID_DISPATCH).
inline constexpr uint64_t kDispatchMethodId = 0xFFFFE;

// How a method beat names its method (from the profile's method.enter arguments).
enum class MethodIdKind : uint8_t {
  kId,       // an integer id (Matrix AppMethodBeat.i(id)); named by a methodMapping.txt
  kAddress,  // a function address (-finstrument-functions); named from ELF symbols
  kString,   // name (and class) string pointers (runtime USDT probes)
  kProbe,    // no argument: the probe point itself is the method (uprobe per function)
};
std::string_view MethodIdKindName(MethodIdKind kind);
std::optional<MethodIdKind> MethodIdKindFromName(std::string_view name);

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

}  // namespace looptrace
