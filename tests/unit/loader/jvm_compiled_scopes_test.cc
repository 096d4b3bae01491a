// The scopes of a JIT-compiled pc from an nmethod's debug info, written here the way
// HotSpot's DebugInformationRecorder writes it (CompressedWriteStream, JDK 17 and JDK 21+),
// and the line number tables the same ints make.
#include "loader/runtimes/jvm/compiled_scopes.h"

#include <gtest/gtest.h>

#include <vector>

#include "loader/runtimes/jvm/method_namer.h"

namespace looptrace::loader::jvm {
namespace {

// CompressedWriteStream::write_int (UNSIGNED5: lg_H 6, L 192, at most 5 bytes); from JDK 21
// every byte is one more (no byte is 0).
void WriteInt(std::vector<uint8_t>* out, uint32_t value, bool exclude_zero) {
  const uint32_t bias = exclude_zero ? 1 : 0, low = 192 - bias;
  uint32_t sum = value;
  for (int i = 0;; ++i) {
    if (sum < low || i == 4) {
      out->push_back(static_cast<uint8_t>(sum + bias));
      return;
    }
    sum -= low;
    out->push_back(static_cast<uint8_t>(low + (sum % 64) + bias));
    sum >>= 6;
  }
}

// One scope record (ScopeDesc::decode_body's header, then the locals, expressions and
// monitors offsets, none here); returns its decode offset.
int32_t WriteScope(std::vector<uint8_t>* data, int32_t sender, int32_t method_index, int bci, bool exclude_zero) {
  const auto at = static_cast<int32_t>(data->size());
  WriteInt(data, static_cast<uint32_t>(sender), exclude_zero);
  WriteInt(data, static_cast<uint32_t>(method_index), exclude_zero);
  WriteInt(data, static_cast<uint32_t>(bci + 1), exclude_zero);  // read_bci: the int - 1
  for (int i = 0; i < 3; ++i) WriteInt(data, 0, exclude_zero);
  return at;
}

constexpr uint64_t kOuter = 0x7f0000001000, kMiddle = 0x7f0000002000, kInner = 0x7f0000003000;

class CompiledScopesTest : public ::testing::TestWithParam<bool> {};

// An nmethod of `outer` with `middle` inlined at bci 300 and `inner` inlined into it at
// bci 7, inner at bci 1000: the pc's chain comes innermost first, each at its bytecode
// (multi-byte ints included: 300 and 1000 do not fit a byte).
TEST_P(CompiledScopesTest, AnInlinedChainComesInnermostFirstEachAtItsBytecode) {
  const bool exclude_zero = GetParam();
  std::vector<uint8_t> data(1, 0);  // offset 0 is the null scope; the recorder starts after it
  data.resize(250, 0);              // decode offsets beyond a byte too
  const std::vector<uint64_t> metadata = {kOuter, 0x7f0000009000, kMiddle, kInner};
  const int32_t outer = WriteScope(&data, 0, 1, 300, exclude_zero);
  const int32_t middle = WriteScope(&data, outer, 3, 7, exclude_zero);
  const int32_t inner = WriteScope(&data, middle, 4, 1000, exclude_zero);
  auto chain = DecodeScopes(data, inner, metadata, kOuter, exclude_zero);
  ASSERT_TRUE(chain);
  ASSERT_EQ(chain->size(), 3u);
  EXPECT_EQ((*chain)[0].method, kInner);
  EXPECT_EQ((*chain)[0].bci, 1000);
  EXPECT_EQ((*chain)[1].method, kMiddle);
  EXPECT_EQ((*chain)[1].bci, 7);
  EXPECT_EQ((*chain)[2].method, kOuter);
  EXPECT_EQ((*chain)[2].bci, 300);

  auto top = DecodeScopes(data, outer, metadata, kOuter, exclude_zero);
  ASSERT_TRUE(top);
  ASSERT_EQ(top->size(), 1u);
  EXPECT_EQ((*top)[0].bci, 300);
}

TEST_P(CompiledScopesTest, WhatDoesNotDecodeIsNoChainNeverAGuessedOne) {
  const bool exclude_zero = GetParam();
  std::vector<uint8_t> data(1, 0);
  const std::vector<uint64_t> metadata = {kOuter, kInner};
  const int32_t outer = WriteScope(&data, 0, 1, 3, exclude_zero);
  const int32_t inner = WriteScope(&data, outer, 2, 4, exclude_zero);
  // The null scope: the nmethod's own method, no bytecode.
  auto own = DecodeScopes(data, 0, metadata, kOuter, exclude_zero);
  ASSERT_TRUE(own);
  ASSERT_EQ(own->size(), 1u);
  EXPECT_EQ((*own)[0].method, kOuter);
  EXPECT_EQ((*own)[0].bci, -1);
  // Its outermost method is not the nmethod's: another format, or another nmethod's bytes.
  EXPECT_FALSE(DecodeScopes(data, inner, metadata, kMiddle, exclude_zero));
  // A metadata index past the table.
  EXPECT_FALSE(DecodeScopes(data, inner, std::vector<uint64_t>{kOuter}, kOuter, exclude_zero));
  // Cut short, or an offset outside the stream.
  EXPECT_FALSE(
      DecodeScopes(std::span(data).first(static_cast<size_t>(inner) + 1), inner, metadata, kOuter, exclude_zero));
  EXPECT_FALSE(DecodeScopes(data, static_cast<int32_t>(data.size()) + 5, metadata, kOuter, exclude_zero));
  // A chain that loops on itself ends at the bound.
  std::vector<uint8_t> loop(1, 0);
  const auto self = static_cast<int32_t>(loop.size());
  WriteScope(&loop, self, 1, 0, exclude_zero);
  EXPECT_FALSE(DecodeScopes(loop, self, metadata, kOuter, exclude_zero));
}

INSTANTIATE_TEST_SUITE_P(Jdk, CompiledScopesTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Jdk21" : "Jdk17"; });

// HotSpot's approximate lookup: a pc between records gets the next record's scope; a return
// address is a record of its own; past the last one there is none.
TEST(CompiledScopes, APcTakesTheScopeOfTheFirstRecordAtOrAfterIt) {
  const std::vector<PcDescEntry> descs = {{-1, 0}, {16, 11}, {40, 22}, {41, 33}, {90, 44}};
  EXPECT_EQ(ScopeAt(descs, 0), 11);
  EXPECT_EQ(ScopeAt(descs, 16), 11);
  EXPECT_EQ(ScopeAt(descs, 17), 22);
  EXPECT_EQ(ScopeAt(descs, 41), 33);
  EXPECT_EQ(ScopeAt(descs, 90), 44);
  EXPECT_FALSE(ScopeAt(descs, 91));
  EXPECT_FALSE(ScopeAt({}, 3));
}

// A line number table (CompressedLineNumberWriteStream): pairs in one byte each where the
// deltas fit (bci delta << 3 | line delta), else 0xff and two signed ints.
TEST(CompiledScopes, LineTablesDecodeWithTheSameInts) {
  for (bool exclude_zero : {false, true}) {
    std::vector<uint8_t> bytes = {static_cast<uint8_t>((0 << 3) | 5)};  // bci 0, line 5
    bytes.push_back(static_cast<uint8_t>((4 << 3) | 1));                // bci 4, line 6
    bytes.push_back(0xff);                                              // bci 404, line 106
    WriteInt(&bytes, 400 << 1, exclude_zero);                           // zigzag of +400
    WriteInt(&bytes, 100 << 1, exclude_zero);
    bytes.push_back(0xff);                         // bci 403, line 96
    WriteInt(&bytes, (1 << 1) - 1, exclude_zero);  // zigzag of -1
    WriteInt(&bytes, (10 << 1) - 1, exclude_zero);
    bytes.push_back(0);
    auto table = DecodeLineTable(bytes, exclude_zero);
    ASSERT_EQ(table.size(), 4u) << exclude_zero;
    EXPECT_EQ(table[2], std::make_pair(404, 106));
    EXPECT_EQ(table[3], std::make_pair(403, 96));
    EXPECT_EQ(LineOf(table, 3), 5);
    EXPECT_EQ(LineOf(table, 4), 6);
    EXPECT_EQ(LineOf(table, 500), 106);
  }
}

}  // namespace
}  // namespace looptrace::loader::jvm
