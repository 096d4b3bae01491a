#include "looptrace/tracers/matrix_compat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <unordered_map>

namespace looptrace::matrix {
namespace {

// Java arithmetic helpers: two's-complement wrap-around instead of C++ undefined behaviour.
int32_t LongToInt(int64_t v) {  // Java (int) cast of a long: keeps the low 32 bits.
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}
int64_t LongAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t LongSub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int32_t IntAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
int32_t IntMul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// TraceDataUtils.addMethodItem. `result` is Matrix's LinkedList used as a stack: front() is
// the head (the most recently completed item).
void AddMethodItem(std::deque<MethodItem>& result, MethodItem item) {
  if (!result.empty()) {
    MethodItem& last = result.front();
    if (last.method_id == item.method_id && last.depth == item.depth && item.depth != 0) {
      // DEFAULT_ANR quirk: a duration of exactly 5000 ms is replaced by the previous one.
      const int merged = item.duration_ms == kDefaultAnrMs ? last.duration_ms : item.duration_ms;
      // MethodItem.mergeMore(long cost): count++; durTime += cost (int compound assignment).
      last.count = IntAdd(last.count, 1);
      last.duration_ms = LongToInt(static_cast<int64_t>(last.duration_ms) + merged);
      return;
    }
  }
  result.push_front(item);
}

// TraceDataUtils.stackToTree + treeToStack over `result` (head first). Returns the pre-order
// list; empty when the first node is not at depth 0 ("[stackToTree] begin error!").
std::vector<MethodItem> TreeOrder(const std::deque<MethodItem>& result) {
  constexpr size_t kNull = SIZE_MAX;
  struct Node {
    size_t item = 0;               // index into `result`
    size_t father = kNull;         // TreeNode.father. The tree root is never anyone's father.
    std::vector<size_t> children;  // insertion order; Matrix's list order is the reverse
  };
  const auto depth_of = [&](const Node& node) { return result[node.item].depth; };
  std::vector<Node> nodes;
  nodes.reserve(result.size());
  std::vector<size_t> root_children;  // same convention as Node::children
  size_t last = kNull;                // lastNode
  for (size_t i = 0; i < result.size(); ++i) {
    const int depth = result[i].depth;
    // new TreeNode(item, lastNode): the father starts as the previous node, even for
    // depth-0 nodes attached to the root (their father stays the previous node).
    const size_t index = nodes.size();
    nodes.push_back(Node{i, last, {}});
    if (last == kNull && depth != 0) return {};
    if (last == kNull || depth == 0) {
      root_children.push_back(index);
    } else if (depth_of(nodes[last]) >= depth) {
      size_t walk = last;
      // Matrix HEAD has no null check here (a NullPointerException is only reachable with
      // negative depths); like the null-safe variant of this loop, the node is then dropped.
      while (walk != kNull && depth_of(nodes[walk]) > depth) walk = nodes[walk].father;
      if (walk != kNull && nodes[walk].father != kNull) {
        const size_t father = nodes[walk].father;
        nodes[index].father = father;
        nodes[father].children.push_back(index);
      }
      // else: no father, the node is dropped from the tree (but still becomes lastNode).
    } else {
      nodes[last].children.push_back(index);
    }
    last = index;
  }

  // treeToStack: pre-order, children in list order (= reverse of insertion, since Matrix
  // inserts with addFirst). Iterative to survive very deep call chains.
  std::vector<MethodItem> out;
  out.reserve(result.size());
  std::vector<size_t> pending(root_children);  // DFS stack; the next node is at the back
  while (!pending.empty()) {
    const size_t index = pending.back();
    pending.pop_back();
    out.push_back(result[nodes[index].item]);
    pending.insert(pending.end(), nodes[index].children.begin(), nodes[index].children.end());
  }
  return out;
}

}  // namespace

int64_t EncodeRecord(bool enter, int method_id, int64_t time_ms) {
  uint64_t record = 0;
  if (enter) record |= uint64_t{1} << 63;
  record |= static_cast<uint64_t>(static_cast<int64_t>(method_id)) << 43;  // (long) id << 43
  record |= static_cast<uint64_t>(time_ms & kRecordTimeMask);
  return static_cast<int64_t>(record);
}

bool IsEnter(int64_t record) { return ((record >> 63) & 0x1) == 1; }

int MethodId(int64_t record) { return static_cast<int>((record >> 43) & 0xFFFFF); }

int64_t TimeMs(int64_t record) { return record & kRecordTimeMask; }

std::string MethodItem::ToString() const {
  return std::to_string(depth) + "," + std::to_string(method_id) + "," + std::to_string(count) + "," +
         std::to_string(duration_ms);
}

std::string MethodItem::Print() const {
  std::string out(depth > 0 ? static_cast<size_t>(depth) : 0, '.');
  out += std::to_string(method_id) + " " + std::to_string(count) + " " + std::to_string(duration_ms);
  return out;
}

std::vector<MethodItem> StructuredDataToStack(std::span<const int64_t> buffer, bool strict, int64_t end_time_ms,
                                              int64_t diff_time_ms) {
  std::deque<MethodItem> result;  // front = LinkedList head
  std::deque<int64_t> raw;        // rawData; front = top of the stack (push/pop at the head)
  // Number of frames per method id in `raw`. Lets an exit without a matching frame be
  // resolved without Matrix's pop-everything-then-restore round trip (same outcome, O(1)).
  std::unordered_map<int, int> open_frames;
  int depth = 0;
  bool begun = !strict;

  for (const int64_t record : buffer) {
    if (record == 0) continue;
    if (strict) {
      if (IsEnter(record) && MethodId(record) == kMethodIdDispatch) begun = true;
      if (!begun) continue;  // "never begin! pass this method"
    }
    if (IsEnter(record)) {
      const int id = MethodId(record);
      if (id == kMethodIdDispatch) depth = 0;
      ++depth;
      raw.push_front(record);
      ++open_frames[id];
      continue;
    }

    const int out_id = MethodId(record);
    if (raw.empty()) continue;  // "method[%s] not found in!"
    int64_t in = 0;
    if (open_frames[out_id] == 0) {
      // Matrix pops every frame looking for `out_id`. If the bottom frame is DISPATCH it
      // appends all of them back (rawData.addAll(tmp) on the now empty list restores the
      // same order) and adds rawData.size() back to depth: a no-op, the exit is dropped.
      if (MethodId(raw.back()) == kMethodIdDispatch) continue;
      // Otherwise the whole stack is consumed and the bottom frame is timed against this exit.
      in = raw.back();
      depth = IntAdd(depth, -static_cast<int32_t>(raw.size()));
      raw.clear();
      open_frames.clear();
    } else {
      // Pop until the matching frame; skipped frames (no exit record) are lost.
      do {
        in = raw.front();
        raw.pop_front();
        --open_frames[MethodId(in)];
        --depth;
      } while (MethodId(in) != out_id);
    }
    const int64_t during = TimeMs(record) - TimeMs(in);
    if (during < 0) return {};  // "trace during invalid": the whole slice is dropped
    // Note the item takes the exit's id and the depth after the pops.
    AddMethodItem(result, MethodItem{out_id, LongToInt(during), depth, 1});
  }

  // Strict mode: frames still open are closed at end_time_ms, innermost first; the depth is
  // the number of frames left under them.
  while (strict && !raw.empty()) {
    const int64_t record = raw.front();
    raw.pop_front();
    if (!IsEnter(record)) continue;  // "why has out Method" (unreachable: only enters are pushed)
    const int64_t in_time = LongAdd(TimeMs(record), diff_time_ms);
    AddMethodItem(result, MethodItem{MethodId(record), LongToInt(LongSub(end_time_ms, in_time)),
                                     static_cast<int>(raw.size()), 1});
  }
  return TreeOrder(result);
}

void TrimStack(std::vector<MethodItem>& stack, int target_count) {
  if (target_count < 0) {
    stack.clear();
    return;
  }
  const size_t target = static_cast<size_t>(target_count);
  std::vector<char> removed;
  for (int filter_count = 1; stack.size() > target; ++filter_count) {
    if (filter_count > kFilterStackMaxCount) break;
    // One pass from the last item backwards, removing durTime < filterCount * 5 and
    // stopping as soon as the size reaches the target. Marked first, compacted after.
    const int64_t threshold = static_cast<int64_t>(filter_count) * kTimeUpdateCycleMs;
    removed.assign(stack.size(), 0);
    size_t size = stack.size();
    bool reached = false;
    for (size_t i = stack.size(); i-- > 0;) {
      if (stack[i].duration_ms < threshold) {
        removed[i] = 1;
        if (--size <= target) {
          reached = true;
          break;
        }
      }
    }
    size_t kept = 0;
    for (size_t i = 0; i < stack.size(); ++i) {
      if (!removed[i]) stack[kept++] = stack[i];
    }
    stack.resize(kept);
    if (reached) return;
  }
  if (stack.size() > target) {
    // The tracers' fallback: keep the first min(size, TARGET_EVIL_METHOD_STACK) items.
    stack.resize(std::min(stack.size(), static_cast<size_t>(kTargetEvilMethodStack)));
  }
}

int64_t StackKeyLimit(int64_t stack_cost) {
  // Java: long * float -> float (round to nearest), then f2l (truncate, saturate, NaN -> 0).
  const float product = static_cast<float>(stack_cost) * kFilterStackKeyAllPercent;
  if (std::isnan(product)) return 0;
  if (product >= 9223372036854775808.0f) return std::numeric_limits<int64_t>::max();
  if (product <= -9223372036854775808.0f) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(product);
}

std::string GetTreeKey(const std::vector<MethodItem>& stack, int64_t stack_cost) {
  if (stack.empty()) return "";
  const int64_t limit = StackKeyLimit(stack_cost);
  std::vector<const MethodItem*> candidates;
  for (const MethodItem& item : stack) {
    if (item.duration_ms >= limit) candidates.push_back(&item);
  }
  // Collections.sort (stable) with Integer.compare((o2.depth + 1) * o2.durTime,
  // (o1.depth + 1) * o1.durTime): descending int (wrapping) weight.
  const auto weight = [](const MethodItem* item) { return IntMul(IntAdd(item->depth, 1), item->duration_ms); };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const MethodItem* a, const MethodItem* b) { return weight(a) > weight(b); });
  const MethodItem* key = nullptr;
  if (candidates.empty()) {
    key = &stack.front();
  } else if (candidates.size() > 1 && candidates.front()->method_id == kMethodIdDispatch) {
    key = candidates[1];
  } else {
    key = candidates.front();
  }
  return std::to_string(key->method_id) + "|";
}

std::string StackToString(const std::vector<MethodItem>& stack, int64_t* max_duration_ms) {
  std::string report;
  int64_t stack_cost = 0;
  for (const MethodItem& item : stack) {
    report += item.ToString();
    report += '\n';
    if (stack_cost < item.duration_ms) stack_cost = item.duration_ms;
  }
  if (max_duration_ms != nullptr) *max_duration_ms = stack_cost;
  return report;
}

std::string StackToLogcat(const std::vector<MethodItem>& stack) {
  std::string out = "|*\t\tTraceStack:\n|*\t\t[id count cost]\n";
  for (const MethodItem& item : stack) {
    out += "|*\t\t";
    out += item.Print();
    out += '\n';
  }
  return out;
}

}  // namespace looptrace::matrix
