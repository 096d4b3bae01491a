#include "looptrace/symbols/probe_cost.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../fuzz_corpus.h"

namespace looptrace::symbols {
namespace {

InstructionInfo Classify(std::vector<uint8_t> bytes) { return ClassifyProbeInstruction(bytes); }

void ExpectInstruction(std::vector<uint8_t> bytes, ProbeCost cost, const std::string& mnemonic, size_t length) {
  SCOPED_TRACE(::testing::PrintToString(bytes));
  const InstructionInfo info = ClassifyProbeInstruction(bytes);
  EXPECT_EQ(info.cost, cost) << ProbeCostName(info.cost);
  EXPECT_EQ(info.mnemonic, mnemonic);
  EXPECT_EQ(info.length, length);
}

TEST(ProbeCost, Names) {
  EXPECT_EQ(ProbeCostName(ProbeCost::kEmulated), "emulated");
  EXPECT_EQ(ProbeCostName(ProbeCost::kSingleStep), "single-step");
  EXPECT_EQ(ProbeCostName(ProbeCost::kUnknown), "unknown");
}

TEST(ProbeCost, NopsAreEmulated) {
  ExpectInstruction({0x90, 0x48}, ProbeCost::kEmulated, "nop", 1);
  ExpectInstruction({0x66, 0x90}, ProbeCost::kEmulated, "nop2", 2);
  ExpectInstruction({0x0f, 0x1f, 0x00}, ProbeCost::kEmulated, "nop3", 3);
  ExpectInstruction({0x0f, 0x1f, 0x40, 0x00}, ProbeCost::kEmulated, "nop4", 4);
  ExpectInstruction({0x0f, 0x1f, 0x44, 0x00, 0x00, 0x55}, ProbeCost::kEmulated, "nop5", 5);
  ExpectInstruction({0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, ProbeCost::kEmulated, "nop6", 6);
  ExpectInstruction({0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00}, ProbeCost::kEmulated, "nop7", 7);
  ExpectInstruction({0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, ProbeCost::kEmulated, "nop8", 8);
  ExpectInstruction({0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, ProbeCost::kEmulated, "nop10", 10);
  ExpectInstruction({0xf3, 0x90}, ProbeCost::kEmulated, "pause", 2);
}

TEST(ProbeCost, HintNopWithNonZeroRegIsNotANop) {
  // 0f 1f /1 is a reserved hint, not the documented multi-byte nop.
  EXPECT_EQ(Classify({0x0f, 0x1f, 0x48, 0x00}).cost, ProbeCost::kSingleStep);
  // 41 90 is xchg %eax,%r8d.
  ExpectInstruction({0x41, 0x90}, ProbeCost::kSingleStep, "xchg (single-step)", 2);
}

TEST(ProbeCost, PushOfAGeneralRegisterIsEmulated) {
  ExpectInstruction({0x55, 0x48, 0x89, 0xe5}, ProbeCost::kEmulated, "push %rbp", 1);
  ExpectInstruction({0x50}, ProbeCost::kEmulated, "push %rax", 1);
  ExpectInstruction({0x53}, ProbeCost::kEmulated, "push %rbx", 1);
  ExpectInstruction({0x57}, ProbeCost::kEmulated, "push %rdi", 1);
  ExpectInstruction({0x41, 0x54}, ProbeCost::kEmulated, "push %r12", 2);
  ExpectInstruction({0x41, 0x57}, ProbeCost::kEmulated, "push %r15", 2);
  ExpectInstruction({0x41, 0x50}, ProbeCost::kEmulated, "push %r8", 2);
}

TEST(ProbeCost, OtherPushesAreSingleStepped) {
  ExpectInstruction({0x66, 0x55}, ProbeCost::kSingleStep, "push (single-step)", 2);
  ExpectInstruction({0x48, 0x55}, ProbeCost::kSingleStep, "push (single-step)", 2);
  ExpectInstruction({0x6a, 0x01}, ProbeCost::kSingleStep, "push (single-step)", 2);
  ExpectInstruction({0x68, 1, 2, 3, 4}, ProbeCost::kSingleStep, "push (single-step)", 5);
  ExpectInstruction({0xff, 0x35, 0, 0, 0, 0}, ProbeCost::kSingleStep, "push (single-step)", 6);
}

TEST(ProbeCost, RelativeBranchesAreEmulated) {
  ExpectInstruction({0xe8, 0x10, 0x20, 0x30, 0x40}, ProbeCost::kEmulated, "call rel32", 5);
  ExpectInstruction({0xe9, 0x10, 0x20, 0x30, 0x40}, ProbeCost::kEmulated, "jmp rel32", 5);
  ExpectInstruction({0xeb, 0x05}, ProbeCost::kEmulated, "jmp rel8", 2);
  ExpectInstruction({0x74, 0x05}, ProbeCost::kEmulated, "je rel8", 2);
  ExpectInstruction({0x70, 0x05}, ProbeCost::kEmulated, "jo rel8", 2);
  ExpectInstruction({0x7f, 0x05}, ProbeCost::kEmulated, "jg rel8", 2);
  ExpectInstruction({0x0f, 0x85, 1, 2, 3, 4}, ProbeCost::kEmulated, "jne rel32", 6);
  ExpectInstruction({0x0f, 0x8c, 1, 2, 3, 4}, ProbeCost::kEmulated, "jl rel32", 6);
  ExpectInstruction({0xf2, 0xe9, 1, 2, 3, 4}, ProbeCost::kEmulated, "jmp rel32", 6);  // bnd jmp
}

TEST(ProbeCost, SixteenBitBranchesCannotBeProbed) {
  EXPECT_EQ(Classify({0x66, 0xe8, 1, 2}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x66, 0x0f, 0x84, 1, 2}).cost, ProbeCost::kUnknown);
}

TEST(ProbeCost, Endbr64IsSingleStepped) {
  ExpectInstruction({0xf3, 0x0f, 0x1e, 0xfa, 0x55}, ProbeCost::kSingleStep, "endbr64", 4);
}

TEST(ProbeCost, CommonFunctionStartsAreSingleStepped) {
  ExpectInstruction({0x48, 0x89, 0xf8}, ProbeCost::kSingleStep, "mov (single-step)", 3);  // mov %rdi,%rax
  ExpectInstruction({0x48, 0x89, 0xe5}, ProbeCost::kSingleStep, "mov (single-step)", 3);
  ExpectInstruction({0x8b, 0x07}, ProbeCost::kSingleStep, "mov (single-step)", 2);
  ExpectInstruction({0x48, 0x8b, 0x05, 1, 2, 3, 4}, ProbeCost::kSingleStep, "mov (single-step)",
                    7);  // rip-relative
  ExpectInstruction({0x48, 0x8b, 0x44, 0x24, 0x08}, ProbeCost::kSingleStep, "mov (single-step)",
                    5);  // SIB + disp8
  ExpectInstruction({0xb8, 1, 0, 0, 0}, ProbeCost::kSingleStep, "mov (single-step)", 5);
  ExpectInstruction({0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8}, ProbeCost::kSingleStep, "mov (single-step)", 10);  // movabs
  ExpectInstruction({0xc7, 0x45, 0xfc, 0, 0, 0, 0}, ProbeCost::kSingleStep, "mov (single-step)", 7);
  ExpectInstruction({0x48, 0x83, 0xec, 0x18}, ProbeCost::kSingleStep, "sub (single-step)", 4);
  ExpectInstruction({0x48, 0x81, 0xec, 0, 1, 0, 0}, ProbeCost::kSingleStep, "sub (single-step)", 7);
  ExpectInstruction({0x31, 0xc0}, ProbeCost::kSingleStep, "xor (single-step)", 2);
  ExpectInstruction({0x8d, 0x04, 0x37}, ProbeCost::kSingleStep, "lea (single-step)", 3);
  ExpectInstruction({0x48, 0x85, 0xff}, ProbeCost::kSingleStep, "test (single-step)", 3);
  ExpectInstruction({0xc3}, ProbeCost::kSingleStep, "ret (single-step)", 1);
  ExpectInstruction({0x48, 0x83, 0x3d, 1, 2, 3, 4, 0}, ProbeCost::kSingleStep, "cmp (single-step)", 8);
  ExpectInstruction({0xff, 0x25, 1, 2, 3, 4}, ProbeCost::kSingleStep, "jmp (single-step)", 6);
  ExpectInstruction({0xff, 0xd0}, ProbeCost::kSingleStep, "call (single-step)", 2);
  ExpectInstruction({0x0f, 0xb6, 0x07}, ProbeCost::kSingleStep, "movzx (single-step)", 3);
}

TEST(ProbeCost, UnrecognizedOpcodesAreSingleSteppedAndUnnamed) {
  const InstructionInfo info = Classify({0xd9, 0xee});  // fldz
  EXPECT_EQ(info.cost, ProbeCost::kSingleStep);
  EXPECT_EQ(info.mnemonic, "unknown");
  EXPECT_EQ(info.length, 0u);
}

TEST(ProbeCost, EmptyOrTruncatedCodeIsUnknown) {
  ExpectInstruction({}, ProbeCost::kUnknown, "unknown", 0);
  EXPECT_EQ(Classify({0x0f}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x0f, 0x1f}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x0f, 0x1f, 0x44, 0x00}).cost, ProbeCost::kUnknown);  // nop5 cut short
  EXPECT_EQ(Classify({0xe8, 1, 2}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x41}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x66, 0x66}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x48, 0x8b}).cost, ProbeCost::kUnknown);
  EXPECT_EQ(Classify({0x48, 0x8b, 0x44, 0x24}).cost, ProbeCost::kUnknown);
}

// In the probe_cost fuzz corpus (tests/fuzz/corpus/probe_cost/regress_20_byte_je), made by
// hand while fixing the harness and caught by its 15-byte check:
// 14 prefixes + je rel32 was classified as an emulated 20-byte branch. Nothing longer
// than 15 bytes is an instruction (the CPU raises #UD, the kernel refuses the probe).
TEST(ProbeCost, FuzzInstructionsLongerThan15BytesAreUnknown) {
  const std::string input = looptrace::test_util::FuzzInput("probe_cost", "regress_20_byte_je");
  ASSERT_EQ(input.size(), 20u);
  const std::vector<uint8_t> code(input.begin(), input.end());
  const InstructionInfo info = ClassifyProbeInstruction(code);
  EXPECT_EQ(info.cost, ProbeCost::kUnknown);
  EXPECT_EQ(info.mnemonic, "unknown");
  EXPECT_EQ(info.length, 0u);
  // Up to 15 bytes it is still an instruction: 9 prefixes + je rel32.
  std::vector<uint8_t> fifteen(9, 0x2e);
  fifteen.insert(fifteen.end(), {0x0f, 0x84, 0, 0, 0, 0});
  ExpectInstruction(fifteen, ProbeCost::kEmulated, "je rel32", 15);
}

}  // namespace
}  // namespace looptrace::symbols
