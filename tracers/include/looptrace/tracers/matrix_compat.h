// Exact reproduction of Tencent Matrix TraceCanary's stack analysis ("--matrix-compat" mode).
//
// Mirrors AppMethodBeat's record encoding and TraceDataUtils (structuredDataToStack,
// trimStack with the tracers' filter, getTreeKey, stackToString) including their quirks, so
// that looptrace's reports can be compared line by line with Matrix's `stack` / `stackKey`
// fields. Reference: docs/matrix-algorithms.md sections 1 to 4. Java
// semantics (int vs long arithmetic, float maths, stable sorts, list head insertion) are
// reproduced deliberately; do not "fix" them here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace looptrace::matrix {

inline constexpr int kMethodIdMax = 0xFFFFF;               // AppMethodBeat.METHOD_ID_MAX
inline constexpr int kMethodIdDispatch = 0xFFFFE;          // METHOD_ID_DISPATCH = 1048574
inline constexpr int kTargetEvilMethodStack = 30;          // Constants.TARGET_EVIL_METHOD_STACK
inline constexpr int kFilterStackMaxCount = 60;            // Constants.FILTER_STACK_MAX_COUNT
inline constexpr int kTimeUpdateCycleMs = 5;               // Constants.TIME_UPDATE_CYCLE_MS
inline constexpr int64_t kDefaultAnrMs = 5000;             // Constants.DEFAULT_ANR
inline constexpr float kFilterStackKeyAllPercent = 0.3f;   // FILTER_STACK_KEY_ALL_PERCENT
inline constexpr int64_t kRecordTimeMask = 0x7FFFFFFFFFF;  // 43 bits of milliseconds

// AppMethodBeat record encoding: bit 63 = enter, bits 43..62 = method id, bits 0..42 = ms
// since AppMethodBeat's class init. Like AppMethodBeat.mergeData the id is shifted without
// masking: callers must keep ids in [0, kMethodIdMax) (i()/o() ignore ids >= METHOD_ID_MAX).
int64_t EncodeRecord(bool enter, int method_id, int64_t time_ms);
bool IsEnter(int64_t record);    // ((v >> 63) & 1) == 1
int MethodId(int64_t record);    // (int) ((v >> 43) & 0xFFFFF)
int64_t TimeMs(int64_t record);  // v & 0x7FFFFFFFFFF

// TC/items/MethodItem.java. All fields are Java ints (durations wrap like Java's).
struct MethodItem {
  int method_id = 0;
  int duration_ms = 0;  // Matrix's int durTime
  int depth = 0;
  int count = 1;

  std::string ToString() const;  // "depth,methodId,count,durTime"
  std::string Print() const;     // logcat form: depth dots then "methodId count durTime"
  bool operator==(const MethodItem&) const = default;
};

// TraceDataUtils.structuredDataToStack(buffer, result, isStrict, endTime) followed by its
// stackToTree/treeToStack: returns the call-order, pre-order list of completed methods.
// `end_time_ms` is the absolute uptime used (strict mode only) for frames still open at
// the end of the buffer, whose enter time is `TimeMs(record) + diff_time_ms`
// (AppMethodBeat.getDiffTime()). Slots equal to 0 are skipped.
std::vector<MethodItem> StructuredDataToStack(std::span<const int64_t> buffer, bool strict, int64_t end_time_ms,
                                              int64_t diff_time_ms = 0);

// TraceDataUtils.trimStack(stack, targetCount, filter) with the filter every Matrix tracer
// uses: isFilter = durTime < filterCount * 5, at most 60 passes (walking from the last item
// backwards), then fallback = keep the first min(size, kTargetEvilMethodStack) items. Note
// the fallback keeps 30 items whatever `target_count` is (the tracers hard-code
// TARGET_EVIL_METHOD_STACK there); the tracers always pass target_count = 30.
// A negative `target_count` clears the stack.
void TrimStack(std::vector<MethodItem>& stack, int target_count);

// (long) (stackCost * 0.3f): float multiply, truncation toward zero (Java f2l saturation).
int64_t StackKeyLimit(int64_t stack_cost);

// TraceDataUtils.getTreeKey(stack, long stackCost): "<methodId>|" of the heaviest qualifying
// item, or "" for an empty stack.
std::string GetTreeKey(const std::vector<MethodItem>& stack, int64_t stack_cost);

// TraceDataUtils.stackToString: the report `stack` string (ToString() + "\n" per item). When
// `max_duration_ms` is not null it receives the largest durTime (0 for an empty stack or
// when every duration is negative).
std::string StackToString(const std::vector<MethodItem>& stack, int64_t* max_duration_ms);

// The logcat lines stackToString appends: "|*\t\tTraceStack:\n|*\t\t[id count cost]\n" then
// "|*\t\t" + Print() + "\n" per item.
std::string StackToLogcat(const std::vector<MethodItem>& stack);

}  // namespace looptrace::matrix
