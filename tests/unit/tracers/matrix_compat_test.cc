#include "looptrace/tracers/matrix_compat.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace looptrace::matrix {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr int kD = kMethodIdDispatch;

// "iD@1000 i1@1000 o1@1020 0" -> records (design doc 9.2 notation; "0" is an empty slot).
std::vector<int64_t> Records(const std::string& spec) {
  std::vector<int64_t> out;
  std::istringstream in(spec);
  std::string token;
  while (in >> token) {
    if (token == "0") {
      out.push_back(0);
      continue;
    }
    const bool enter = token[0] == 'i';
    const size_t at = token.find('@');
    const std::string id_text = token.substr(1, at - 1);
    const int id = id_text == "D" ? kD : std::stoi(id_text);
    out.push_back(EncodeRecord(enter, id, std::stoll(token.substr(at + 1))));
  }
  return out;
}

// "0,D,1,11236 / 1,1,1,11236" -> {"0,1048574,1,11236", "1,1,1,11236"}.
std::vector<std::string> Lines(const std::string& spec) {
  std::vector<std::string> out;
  std::istringstream in(spec);
  std::string token;
  while (in >> token) {
    if (token == "/") continue;
    const size_t d = token.find(",D,");
    if (d != std::string::npos) token.replace(d, 3, "," + std::to_string(kD) + ",");
    out.push_back(token);
  }
  return out;
}

std::vector<std::string> ToLines(const std::vector<MethodItem>& stack) {
  std::vector<std::string> out;
  for (const MethodItem& item : stack) out.push_back(item.ToString());
  return out;
}

std::vector<std::string> Analyse(const std::string& records, bool strict, int64_t end_time = 0, int64_t diff_time = 0) {
  const std::vector<int64_t> buffer = Records(records);
  return ToLines(StructuredDataToStack(buffer, strict, end_time, diff_time));
}

MethodItem Item(int id, int duration, int depth, int count = 1) { return MethodItem{id, duration, depth, count}; }

std::vector<int> Ids(const std::vector<MethodItem>& stack) {
  std::vector<int> ids;
  for (const MethodItem& item : stack) ids.push_back(item.method_id);
  return ids;
}

// ---- 2.1 record encoding ------------------------------------------------------------------

TEST(MatrixRecord, EncodesTheDocumentedExamples) {
  EXPECT_EQ(static_cast<uint64_t>(EncodeRecord(true, 1, 1000)), 0x80000800000003E8u);
  EXPECT_EQ(static_cast<uint64_t>(EncodeRecord(false, 1, 1000)), 0x00000800000003E8u);
  EXPECT_EQ(static_cast<uint64_t>(EncodeRecord(true, kD, 0)), 0xFFFFF00000000000u);
  EXPECT_EQ(static_cast<uint64_t>(EncodeRecord(false, kD, 12236)), 0x7FFFF00000002FCCu);
  EXPECT_LT(EncodeRecord(true, 1, 1000), 0);  // enter records are negative longs
}

TEST(MatrixRecord, DecodesFields) {
  const int64_t enter = static_cast<int64_t>(0xFFFFF00000000000u);
  EXPECT_TRUE(IsEnter(enter));
  EXPECT_EQ(MethodId(enter), 1048574);
  EXPECT_EQ(TimeMs(enter), 0);
  const int64_t exit = 0x7FFFF00000002FCC;
  EXPECT_FALSE(IsEnter(exit));
  EXPECT_EQ(MethodId(exit), 1048574);
  EXPECT_EQ(TimeMs(exit), 12236);
  const int64_t max_id = EncodeRecord(false, kMethodIdMax, kRecordTimeMask);
  EXPECT_EQ(MethodId(max_id), 0xFFFFF);
  EXPECT_EQ(TimeMs(max_id), 0x7FFFFFFFFFF);
}

TEST(MatrixRecord, TimeIsMaskedTo43Bits) {
  const int64_t record = EncodeRecord(false, 7, (int64_t{1} << 43) + 5);
  EXPECT_EQ(TimeMs(record), 5);
  EXPECT_EQ(MethodId(record), 7);
  EXPECT_FALSE(IsEnter(record));
}

TEST(MatrixConstants, MatchMatrix) {
  EXPECT_EQ(kMethodIdMax, 1048575);
  EXPECT_EQ(kMethodIdDispatch, 1048574);
  EXPECT_EQ(kTargetEvilMethodStack, 30);
  EXPECT_EQ(kFilterStackMaxCount, 60);
  EXPECT_EQ(kTimeUpdateCycleMs, 5);
  EXPECT_EQ(kDefaultAnrMs, 5000);
}

// ---- MethodItem ---------------------------------------------------------------------------

TEST(MatrixMethodItem, ToStringIsDepthIdCountCost) {
  EXPECT_EQ(Item(243, 1000, 1).ToString(), "1,243,1,1000");
  EXPECT_EQ(Item(20, 30, 2, 3).ToString(), "2,20,3,30");
  EXPECT_EQ(Item(kD, -50, 0).ToString(), "0,1048574,1,-50");
}

TEST(MatrixMethodItem, PrintUsesDepthDots) {
  EXPECT_EQ(Item(5, 30, 2, 3).Print(), "..5 3 30");
  EXPECT_EQ(Item(kD, 1006, 0).Print(), "1048574 1 1006");
  EXPECT_EQ(Item(9, 1, -1).Print(), "9 1 1");  // Java's loop prints no dot for depth < 0
}

// ---- 9.2 vectors: structuredDataToStack ---------------------------------------------------

constexpr char kV1[] =
    "iD@1000 i1@1000 i2@1000 i3@1000 i4@1000 o4@1020 i5@1020 o5@1040 i6@1040 o6@1060 o3@1160 "
    "i7@1160 o7@1180 o2@1380 i8@1380 i9@1400 o9@1420 i10@1420 o10@1426 i11@1426 o11@1436 o8@1436 "
    "i12@1436 o12@11436 o1@12236 oD@12236";

TEST(MatrixVectors, V1SampleScenarioFullMessage) {
  const std::vector<MethodItem> stack = StructuredDataToStack(Records(kV1), true, 99999);
  EXPECT_EQ(ToLines(stack), Lines("0,D,1,11236 / 1,1,1,11236 / 2,2,1,380 / 3,3,1,160 / 4,4,1,20 / 4,5,1,20 / "
                                  "4,6,1,20 / 3,7,1,20 / 2,8,1,56 / 3,9,1,20 / 3,10,1,6 / 3,11,1,10 / "
                                  "2,12,1,10000"));
  std::vector<MethodItem> trimmed = stack;
  TrimStack(trimmed, kTargetEvilMethodStack);
  EXPECT_EQ(trimmed, stack);  // 13 items: no trim
  int64_t max_duration = -1;
  StackToString(stack, &max_duration);
  EXPECT_EQ(max_duration, 11236);
  const int64_t stack_cost = std::max<int64_t>(11236, max_duration);
  EXPECT_EQ(StackKeyLimit(stack_cost), 3370);
  EXPECT_EQ(GetTreeKey(stack, stack_cost), "12|");
}

TEST(MatrixVectors, V2AnrSnapshotClosesOpenFramesAtEndTime) {
  const std::string records =
      "iD@1000 i1@1000 i2@1000 i3@1000 i4@1000 o4@1020 i5@1020 o5@1040 i6@1040 o6@1060 o3@1160 "
      "i7@1160 o7@1180 o2@1380 i8@1380 i9@1400 o9@1420 i10@1420 o10@1426 i11@1426 o11@1436 "
      "o8@1436 i12@1436";
  const std::vector<MethodItem> stack = StructuredDataToStack(Records(records), true, 6000);
  EXPECT_EQ(ToLines(stack), Lines("0,D,1,5000 / 1,1,1,5000 / 2,2,1,380 / 3,3,1,160 / 4,4,1,20 / 4,5,1,20 / "
                                  "4,6,1,20 / 3,7,1,20 / 2,8,1,56 / 3,9,1,20 / 3,10,1,6 / 3,11,1,10 / "
                                  "2,12,1,4564"));
  int64_t max_duration = -1;
  StackToString(stack, &max_duration);
  EXPECT_EQ(max_duration, 5000);
  EXPECT_EQ(GetTreeKey(stack, std::max<int64_t>(5000, max_duration)), "12|");
}

TEST(MatrixVectors, V3ConsecutiveLeafCallsMerge) {
  EXPECT_EQ(Analyse("iD@0 i20@0 o20@10 i20@10 o20@25 i20@25 o20@30 oD@30", true), Lines("0,D,1,30 / 1,20,3,30"));
}

TEST(MatrixVectors, V3bNonLeafSiblingsDoNotMerge) {
  EXPECT_EQ(Analyse("iD@0 i1@0 i2@0 o2@5 o1@10 i1@10 i2@10 o2@20 o1@20 oD@20", true),
            Lines("0,D,1,20 / 1,1,1,10 / 2,2,1,5 / 1,1,1,10 / 2,2,1,10"));
}

TEST(MatrixVectors, V4FramesWithoutExitVanish) {
  EXPECT_EQ(Analyse("iD@0 i1@0 i2@0 i3@10 o1@50 oD@60", true), Lines("0,D,1,60 / 1,1,1,50"));
}

TEST(MatrixVectors, V5StrayExitIsIgnored) {
  EXPECT_EQ(Analyse("iD@0 o9@5 i1@5 o1@40 oD@50", true), Lines("0,D,1,50 / 1,1,1,35"));
}

TEST(MatrixVectors, V6StrictNeedsDispatchEnter) {
  EXPECT_THAT(Analyse("i1@0 o1@900", true, 5000), IsEmpty());
  EXPECT_EQ(Analyse("i1@0 o1@900", false), Lines("0,1,1,900"));
}

TEST(MatrixVectors, V7NonStrictNestedLastItemDropsEverything) {
  EXPECT_THAT(Analyse("i1@0 i2@0 o2@10", false), IsEmpty());
}

TEST(MatrixVectors, V7NonStrictOpenFramesAreDropped) {
  EXPECT_EQ(Analyse("i1@0 i2@5 o2@30 o1@40 i3@40 o3@100 i4@100 i5@100", false),
            Lines("0,1,1,40 / 1,2,1,25 / 0,3,1,60"));
}

TEST(MatrixVectors, V8NegativeDurationDropsTheSlice) {
  EXPECT_THAT(Analyse("iD@100 i1@100 o1@90 oD@120", true), IsEmpty());
}

TEST(MatrixVectors, V9DefaultAnrMergeQuirk) {
  EXPECT_EQ(Analyse("iD@0 i1@0 i2@0 o2@100 i2@100 o2@5100 o1@5100 oD@5100", true),
            Lines("0,D,1,5100 / 1,1,1,5100 / 2,2,2,200"));
}

// ---- structuredDataToStack: further edge cases -------------------------------------------

TEST(MatrixStructuredData, EmptyAndAllZeroBuffers) {
  EXPECT_THAT(StructuredDataToStack({}, true, 100), IsEmpty());
  EXPECT_THAT(StructuredDataToStack({}, false, 100), IsEmpty());
  const std::vector<int64_t> zeros(16, 0);
  EXPECT_THAT(StructuredDataToStack(zeros, true, 100), IsEmpty());
  EXPECT_THAT(StructuredDataToStack(zeros, false, 100), IsEmpty());
}

TEST(MatrixStructuredData, ZeroSlotsAreSkipped) {
  EXPECT_EQ(Analyse("0 iD@0 0 i20@0 o20@10 0 0 i20@10 o20@25 i20@25 o20@30 0 oD@30 0", true),
            Lines("0,D,1,30 / 1,20,3,30"));
}

TEST(MatrixStructuredData, StrictSkipsRecordsBeforeTheDispatchEnter) {
  // o7 has nothing to pop either way; i5/o5 are skipped ("never begin"), and a DISPATCH exit
  // does not begin the slice.
  EXPECT_EQ(Analyse("oD@0 i5@0 o5@10 o7@15 iD@20 i1@20 o1@30 oD@40", true), Lines("0,D,1,20 / 1,1,1,10"));
  // The same buffer in non-strict mode keeps 5 as a second root (call order restored).
  EXPECT_EQ(Analyse("i5@0 o5@10 iD@20 i1@20 o1@30 oD@40", false), Lines("0,5,1,10 / 0,D,1,20 / 1,1,1,10"));
}

TEST(MatrixStructuredData, StrictOpenFramesUseEndTimeAndDiffTime) {
  // Enter times are relative to AppMethodBeat's class init; endTime is absolute uptime.
  EXPECT_EQ(Analyse("iD@100 i1@150", true, /*end_time=*/1300, /*diff_time=*/1000), Lines("0,D,1,200 / 1,1,1,150"));
  // An end time before the enter gives a negative duration, which is kept (no check there).
  EXPECT_EQ(Analyse("iD@100", true, 50), Lines("0,D,1,-50"));
}

TEST(MatrixStructuredData, StrictOpenFramesMergeWithTheLastCompletedSibling) {
  // 2 completes, then a second 2 is still open: closed at endTime and merged (same id and
  // depth, consecutive).
  EXPECT_EQ(Analyse("iD@0 i1@0 i2@0 o2@10 i2@10", true, 40), Lines("0,D,1,40 / 1,1,1,40 / 2,2,2,40"));
}

TEST(MatrixStructuredData, StrayExitInsideTheMessageKeepsDepths) {
  // o9 pops everything down to DISPATCH, finds no 9 and restores the frames.
  EXPECT_EQ(Analyse("iD@0 i1@0 o9@5 i2@5 o2@10 o1@20 oD@20", true), Lines("0,D,1,20 / 1,1,1,20 / 2,2,1,5"));
}

TEST(MatrixStructuredData, StrayExitWithoutDispatchConsumesTheWholeStack) {
  // Non-strict, no DISPATCH at the bottom: all frames are popped, the bottom frame (1@0) is
  // timed against the exit and the item takes the exit's id (9) at depth 0.
  EXPECT_EQ(Analyse("i1@0 i2@5 o9@20", false), Lines("0,9,1,20"));
  // The later exit of 1 then finds an empty stack and is ignored.
  EXPECT_EQ(Analyse("i1@0 i2@5 o9@20 o1@30", false), Lines("0,9,1,20"));
}

TEST(MatrixStructuredData, SiblingWithoutFatherIsDroppedFromTheTree) {
  // 2 never exits (exception), so 3 (depth 2) completes right under DISPATCH. stackToTree
  // then sees D(0), 3(2), 1(1): walking up from 3 for 1 reaches D, whose father is null,
  // so 1 is dropped although it completed normally.
  EXPECT_EQ(Analyse("iD@0 i1@0 o1@10 i2@10 i3@10 o3@20 oD@30", true), Lines("0,D,1,30 / 2,3,1,10"));
  // The dropped node still becomes lastNode: its father is the node before it (3), so a
  // following same-depth sibling (4, completed earlier) is attached under 3.
  EXPECT_EQ(Analyse("iD@0 i4@0 o4@5 i1@5 o1@10 i2@10 i3@10 o3@20 oD@30", true), Lines("0,D,1,30 / 2,3,1,10 / 1,4,1,5"));
}

TEST(MatrixStructuredData, DepthZeroItemsNeverMerge) {
  EXPECT_EQ(Analyse("i1@0 o1@10 i1@10 o1@30", false), Lines("0,1,1,10 / 0,1,1,20"));
}

TEST(MatrixStructuredData, DefaultAnrMergeQuirkOnlyForExactly5000) {
  EXPECT_EQ(Analyse("iD@0 i1@0 i2@0 o2@100 i2@100 o2@5101 o1@5101 oD@5101", true),
            Lines("0,D,1,5101 / 1,1,1,5101 / 2,2,2,5101"));
  // A first call of exactly 5000 ms is kept as is (nothing to merge with).
  EXPECT_EQ(Analyse("iD@0 i1@0 i2@0 o2@5000 i2@5000 o2@5010 o1@5010 oD@5010", true),
            Lines("0,D,1,5010 / 1,1,1,5010 / 2,2,2,5010"));
}

TEST(MatrixStructuredData, SecondDispatchEnterResetsDepth) {
  // A new DISPATCH enter sets depth back to 1 while the old frames stay on the stack; the
  // inner message completes at depth 0 and the outer frames at negative depths, so the
  // head of the result (the outer DISPATCH, depth -2) fails the depth-0 check.
  EXPECT_THAT(Analyse("iD@0 i1@0 iD@5 oD@6 o1@7 oD@8", true), IsEmpty());
  // Two complete messages back to back are two roots.
  EXPECT_EQ(Analyse("iD@0 i1@0 o1@5 oD@5 iD@5 i2@5 o2@9 oD@9", true), Lines("0,D,1,5 / 1,1,1,5 / 0,D,1,4 / 1,2,1,4"));
}

TEST(MatrixStructuredData, DeepChainsDoNotOverflowTheStack) {
  constexpr int kDepth = 200000;
  std::vector<int64_t> buffer;
  buffer.push_back(EncodeRecord(true, kD, 0));
  for (int i = 1; i <= kDepth; ++i) buffer.push_back(EncodeRecord(true, i % 1000 + 1, i));
  for (int i = kDepth; i >= 1; --i) buffer.push_back(EncodeRecord(false, i % 1000 + 1, 2 * kDepth - i));
  buffer.push_back(EncodeRecord(false, kD, 2 * kDepth));
  const std::vector<MethodItem> stack = StructuredDataToStack(buffer, true, 0);
  ASSERT_EQ(stack.size(), static_cast<size_t>(kDepth + 1));
  EXPECT_EQ(stack[0].ToString(), "0,1048574,1,400000");
  EXPECT_EQ(stack[1].ToString(), "1,2,1,399998");
  EXPECT_EQ(stack.back().ToString(), "200000,1,1,0");
}

TEST(MatrixStructuredData, ManyStrayExitsAreCheap) {
  std::vector<int64_t> buffer;
  buffer.push_back(EncodeRecord(true, kD, 0));
  for (int i = 1; i <= 5000; ++i) buffer.push_back(EncodeRecord(true, i, 0));
  for (int i = 0; i < 200000; ++i) buffer.push_back(EncodeRecord(false, 9999, 1));
  buffer.push_back(EncodeRecord(false, 1, 7));
  buffer.push_back(EncodeRecord(false, kD, 8));
  const std::vector<MethodItem> stack = StructuredDataToStack(buffer, true, 0);
  EXPECT_EQ(ToLines(stack), Lines("0,D,1,8 / 1,1,1,7"));
}

// ---- Differential test against a line-by-line transcription of the Java code -------------
//
// Uses linked lists and tree nodes like TraceDataUtils (no shortcuts), so it checks the
// O(1) stray-exit handling and the index-based tree of the implementation.
namespace oracle {

struct TreeNode {
  MethodItem* item;
  TreeNode* father;
  std::list<TreeNode*> children;
  int depth() const { return item == nullptr ? 0 : item->depth; }
  void add(TreeNode* node) { children.push_front(node); }
};

void AddMethodItem(std::list<MethodItem>& result, MethodItem item) {
  MethodItem* last = result.empty() ? nullptr : &result.front();
  if (last != nullptr && last->method_id == item.method_id && last->depth == item.depth && item.depth != 0) {
    item.duration_ms = item.duration_ms == 5000 ? last->duration_ms : item.duration_ms;
    last->count++;
    last->duration_ms += item.duration_ms;
  } else {
    result.push_front(item);
  }
}

void TreeToStack(TreeNode* root, std::vector<MethodItem>& list) {
  for (TreeNode* node : root->children) {
    list.push_back(*node->item);
    if (!node->children.empty()) TreeToStack(node, list);
  }
}

std::vector<MethodItem> StructuredDataToStack(const std::vector<int64_t>& buffer, bool is_strict, int64_t end_time) {
  std::list<MethodItem> result;
  int depth = 0;
  std::list<int64_t> raw_data;
  bool is_begin = !is_strict;
  for (int64_t true_id : buffer) {
    if (true_id == 0) continue;
    if (is_strict) {
      if (IsEnter(true_id) && MethodId(true_id) == kD) is_begin = true;
      if (!is_begin) continue;
    }
    if (IsEnter(true_id)) {
      if (MethodId(true_id) == kD) depth = 0;
      depth++;
      raw_data.push_front(true_id);
    } else {
      const int out_method_id = MethodId(true_id);
      if (raw_data.empty()) continue;
      int64_t in = raw_data.front();
      raw_data.pop_front();
      depth--;
      int in_method_id;
      std::list<int64_t> tmp{in};
      while ((in_method_id = MethodId(in)) != out_method_id && !raw_data.empty()) {
        in = raw_data.front();
        raw_data.pop_front();
        depth--;
        tmp.push_back(in);
      }
      if (in_method_id != out_method_id && in_method_id == kD) {
        raw_data.insert(raw_data.end(), tmp.begin(), tmp.end());
        depth += static_cast<int>(raw_data.size());
        continue;
      }
      const int64_t during = TimeMs(true_id) - TimeMs(in);
      if (during < 0) return {};
      AddMethodItem(result, MethodItem{out_method_id, static_cast<int>(during), depth, 1});
    }
  }
  while (!raw_data.empty() && is_strict) {
    const int64_t true_id = raw_data.front();
    raw_data.pop_front();
    AddMethodItem(result, MethodItem{MethodId(true_id), static_cast<int>(end_time - TimeMs(true_id)),
                                     static_cast<int>(raw_data.size()), 1});
  }
  std::vector<std::unique_ptr<TreeNode>> owned;
  TreeNode root{nullptr, nullptr, {}};
  TreeNode* last_node = nullptr;
  for (MethodItem& item : result) {
    owned.push_back(std::make_unique<TreeNode>(TreeNode{&item, last_node, {}}));
    TreeNode* node = owned.back().get();
    if (last_node == nullptr && node->depth() != 0) return {};
    const int d = node->depth();
    if (last_node == nullptr || d == 0) {
      root.add(node);
    } else if (last_node->depth() >= d) {
      while (last_node != nullptr && last_node->depth() > d) last_node = last_node->father;
      if (last_node != nullptr && last_node->father != nullptr) {
        node->father = last_node->father;
        last_node->father->add(node);
      }
    } else {
      last_node->add(node);
    }
    last_node = node;
  }
  std::vector<MethodItem> out;
  TreeToStack(&root, out);
  return out;
}

}  // namespace oracle

TEST(MatrixStructuredData, MatchesLiteralJavaTranscriptionOnRandomBuffers) {
  std::mt19937 rng(12345);
  int non_empty = 0;
  for (int round = 0; round < 4000; ++round) {
    const int length = std::uniform_int_distribution<int>(0, 40)(rng);
    std::vector<int64_t> buffer;
    std::vector<int> open;  // shadow stack of the generator, to produce matching exits
    int64_t time = 0;
    for (int i = 0; i < length; ++i) {
      const int kind = std::uniform_int_distribution<int>(0, 99)(rng);
      if (kind < 3) {
        buffer.push_back(0);
        continue;
      }
      // Mostly increasing time, rarely going back (negative durations).
      const int step = std::uniform_int_distribution<int>(0, 99)(rng);
      time += step < 2 ? -3 : step % 7;
      if (time < 0) time = 0;
      const int pick = std::uniform_int_distribution<int>(0, 5)(rng);
      int id = pick == 0 ? kD : pick;
      const bool enter = kind < 55;
      if (enter) {
        open.push_back(id);
      } else if (!open.empty() && kind < 90) {
        // Usually exit the innermost open frame, sometimes one further down (exception).
        if (kind > 85 && open.size() > 1) open.pop_back();
        id = open.back();
        open.pop_back();
      }
      buffer.push_back(EncodeRecord(enter, id, time));
    }
    const bool strict = (round % 2) == 0;
    const int64_t end_time = time + std::uniform_int_distribution<int>(-5, 50)(rng);
    const std::vector<MethodItem> expected = oracle::StructuredDataToStack(buffer, strict, end_time);
    const std::vector<MethodItem> actual = StructuredDataToStack(buffer, strict, end_time);
    ASSERT_EQ(ToLines(actual), ToLines(expected)) << "round " << round;
    if (!expected.empty()) ++non_empty;
  }
  EXPECT_GT(non_empty, 1000);  // the generator really exercises non-trivial stacks
}

// ---- 9.2 vectors: trimStack ---------------------------------------------------------------

TEST(MatrixTrim, T1ShortItemsRemovedFromTheEndFirst) {
  std::vector<MethodItem> stack{Item(kD, 2000, 0)};
  for (int dur = 1; dur <= 34; ++dur) stack.push_back(Item(100 + dur, dur, 1));
  ASSERT_EQ(stack.size(), 35u);
  TrimStack(stack, kTargetEvilMethodStack);
  std::vector<int> expected{kD, 105, 106, 107, 108};
  for (int dur = 10; dur <= 34; ++dur) expected.push_back(100 + dur);
  EXPECT_THAT(Ids(stack), ElementsAreArray(expected));
  EXPECT_EQ(stack.size(), 30u);
}

TEST(MatrixTrim, T2FallbackKeepsTheFirst30) {
  std::vector<MethodItem> stack;
  for (int i = 1; i <= 40; ++i) stack.push_back(Item(i, 400 + i, i % 3));
  TrimStack(stack, kTargetEvilMethodStack);
  ASSERT_EQ(stack.size(), 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(stack[i], Item(i + 1, 401 + i, (i + 1) % 3));
}

TEST(MatrixTrim, T3LaterShortItemsGoFirst) {
  std::vector<MethodItem> stack{Item(kD, 100, 0)};
  for (int i = 0; i < 15; ++i) stack.push_back(Item(200 + i, 3, 1));
  for (int i = 0; i < 15; ++i) stack.push_back(Item(300 + i, 8, 1));
  stack.push_back(Item(400, 50, 1));  // X
  stack.push_back(Item(401, 4, 2));   // Y
  ASSERT_EQ(stack.size(), 33u);
  TrimStack(stack, kTargetEvilMethodStack);
  std::vector<int> expected{kD};
  for (int i = 0; i < 13; ++i) expected.push_back(200 + i);
  for (int i = 0; i < 15; ++i) expected.push_back(300 + i);
  expected.push_back(400);
  EXPECT_THAT(Ids(stack), ElementsAreArray(expected));
}

TEST(MatrixTrim, NoTrimAtOrBelowTarget) {
  std::vector<MethodItem> stack{Item(1, 0, 0), Item(2, 0, 1)};
  TrimStack(stack, 2);
  EXPECT_THAT(Ids(stack), ElementsAre(1, 2));
}

TEST(MatrixTrim, NegativeTargetClears) {
  std::vector<MethodItem> stack{Item(1, 100, 0)};
  TrimStack(stack, -1);
  EXPECT_THAT(stack, IsEmpty());
}

TEST(MatrixTrim, ThresholdGrowsBy5UpTo300) {
  // 31 items of 299 ms: removed on pass 60 (< 300), stopping at 30 right away.
  std::vector<MethodItem> stack;
  for (int i = 1; i <= 31; ++i) stack.push_back(Item(i, 299, 0));
  TrimStack(stack, 30);
  EXPECT_EQ(stack.size(), 30u);
  EXPECT_EQ(stack.back().method_id, 30);
  // 300 ms is never below a threshold: fallback cuts the tail instead.
  std::vector<MethodItem> big;
  for (int i = 1; i <= 31; ++i) big.push_back(Item(i, i == 1 ? 300 : 1000, 0));
  TrimStack(big, 30);
  EXPECT_EQ(big.size(), 30u);
  EXPECT_EQ(big.front().method_id, 1);
  EXPECT_EQ(big.back().method_id, 30);
}

TEST(MatrixTrim, FallbackAlwaysKeeps30WhateverTheTarget) {
  // The tracers' fallback hard-codes TARGET_EVIL_METHOD_STACK.
  std::vector<MethodItem> stack;
  for (int i = 1; i <= 50; ++i) stack.push_back(Item(i, 1000, 0));
  TrimStack(stack, 40);
  EXPECT_EQ(stack.size(), 30u);
  std::vector<MethodItem> small;
  for (int i = 1; i <= 50; ++i) small.push_back(Item(i, 1000, 0));
  TrimStack(small, 10);
  EXPECT_EQ(small.size(), 30u);
}

TEST(MatrixTrim, SurvivorDepthsAreNotChanged) {
  std::vector<MethodItem> stack{Item(kD, 100, 0), Item(1, 2, 1), Item(2, 50, 2)};
  TrimStack(stack, 2);
  EXPECT_THAT(stack, ElementsAre(Item(kD, 100, 0), Item(2, 50, 2)));
}

// ---- 9.2 vectors: getTreeKey --------------------------------------------------------------

TEST(MatrixTreeKey, K1TieKeepsStableOrder) {
  const std::vector<MethodItem> stack{Item(kD, 1000, 0), Item(1, 900, 1), Item(2, 600, 2), Item(3, 250, 2)};
  EXPECT_EQ(StackKeyLimit(1000), 300);
  EXPECT_EQ(GetTreeKey(stack, 1000), "1|");
  const std::vector<MethodItem> heavier_b{Item(kD, 1000, 0), Item(1, 900, 1), Item(2, 610, 2), Item(3, 250, 2)};
  EXPECT_EQ(GetTreeKey(heavier_b, 1000), "2|");
}

TEST(MatrixTreeKey, ManyTiesKeepStableOrder) {
  // Enough equal weights that an unstable sort would reorder them: D ties with everyone,
  // stays first, is removed, and the first of the depth-1 items wins.
  std::vector<MethodItem> stack{Item(kD, 1000, 0)};
  for (int i = 1; i <= 40; ++i) stack.push_back(Item(i, 500, 1));
  EXPECT_EQ(GetTreeKey(stack, 1000), "1|");
  std::vector<MethodItem> reversed{Item(kD, 1000, 0)};
  for (int i = 40; i >= 1; --i) reversed.push_back(Item(i, 500, 1));
  EXPECT_EQ(GetTreeKey(reversed, 1000), "40|");
}

TEST(MatrixTreeKey, K2SingleDispatchCandidateIsKept) {
  EXPECT_EQ(GetTreeKey({Item(kD, 1000, 0), Item(1, 100, 1)}, 1000), "1048574|");
}

TEST(MatrixTreeKey, K3NoCandidateFallsBackToTheFirstItem) {
  EXPECT_EQ(StackKeyLimit(12000), 3600);
  EXPECT_EQ(GetTreeKey({Item(7, 2000, 0), Item(8, 1500, 1)}, 12000), "7|");
}

TEST(MatrixTreeKey, K4EmptyStack) { EXPECT_EQ(GetTreeKey({}, 1000), ""); }

TEST(MatrixTreeKey, DispatchRemovedOnlyWhenFirstOfSeveral) {
  // D heaviest (weight 1000 > 2 * 400) but another candidate exists: D is skipped.
  EXPECT_EQ(GetTreeKey({Item(kD, 1000, 0), Item(1, 400, 1)}, 1000), "1|");
  // D not first: nothing removed.
  EXPECT_EQ(GetTreeKey({Item(kD, 1000, 0), Item(1, 900, 1)}, 1000), "1|");
}

TEST(MatrixTreeKey, LimitUsesFloatMultiplyAndTruncation) {
  EXPECT_EQ(StackKeyLimit(0), 0);
  EXPECT_EQ(StackKeyLimit(3), 0);  // 0.90000004f
  EXPECT_EQ(StackKeyLimit(7), 2);  // 2.1000001f
  EXPECT_EQ(StackKeyLimit(11236), 3370);
  EXPECT_EQ(StackKeyLimit(33333333), 10000000);   // double maths would give 9999999
  EXPECT_EQ(StackKeyLimit(100000000), 30000002);  // double maths would give 30000000
  EXPECT_EQ(StackKeyLimit(-10), -3);
  // With the float limit (10000000) the 9999999 ms item does not qualify, so the key falls
  // back to the first item; a double limit would have picked id 2.
  EXPECT_EQ(GetTreeKey({Item(1, 5000000, 0), Item(2, 9999999, 0)}, 33333333), "1|");
}

TEST(MatrixTreeKey, WeightIsAWrappingIntProduct) {
  // (2 + 1) * 1e9 overflows int and becomes negative, so the 6e8 item ranks first.
  EXPECT_EQ(GetTreeKey({Item(5, 10, 0), Item(1, 1000000000, 2), Item(2, 600000000, 0)}, 1000000000), "2|");
}

// ---- stackToString --------------------------------------------------------------------------

TEST(MatrixStackToString, ReportStringAndMaxDuration) {
  int64_t max_duration = -1;
  EXPECT_EQ(StackToString({Item(kD, 1006, 0), Item(243, 1000, 1)}, &max_duration), "0,1048574,1,1006\n1,243,1,1000\n");
  EXPECT_EQ(max_duration, 1006);
  EXPECT_EQ(StackToString({Item(1, 10, 0), Item(2, 30, 1, 3)}, &max_duration), "0,1,1,10\n1,2,3,30\n");
  EXPECT_EQ(max_duration, 30);
  EXPECT_EQ(StackToString({Item(1, 10, 0)}, nullptr), "0,1,1,10\n");
}

TEST(MatrixStackToString, EmptyAndNegative) {
  int64_t max_duration = -1;
  EXPECT_EQ(StackToString({}, &max_duration), "");
  EXPECT_EQ(max_duration, 0);
  EXPECT_EQ(StackToString({Item(kD, -50, 0)}, &max_duration), "0,1048574,1,-50\n");
  EXPECT_EQ(max_duration, 0);
}

TEST(MatrixStackToString, LogcatLines) {
  EXPECT_EQ(StackToLogcat({Item(kD, 1006, 0), Item(243, 1000, 1)}),
            "|*\t\tTraceStack:\n|*\t\t[id count cost]\n|*\t\t1048574 1 1006\n|*\t\t.243 1 1000\n");
}

}  // namespace
}  // namespace looptrace::matrix
