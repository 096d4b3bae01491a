// Whether a module keeps frame pointers, from its functions' first instructions.
#include "looptrace/symbols/frame_pointers.h"

#include <gtest/gtest.h>

#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

TEST(KeepsFramePointers, TellsFixturesBuiltWithAndWithoutThem) {
  for (const char* name : {"symtest_o2_fp_pie", "symtest_o0_fp_nopie", "symtest_cxx_o2_pie"}) {
    auto elf = ElfFile::Open(test_util::FixturePath(name));
    ASSERT_TRUE(elf) << elf.error().message;
    EXPECT_EQ(KeepsFramePointers(*elf), std::optional<bool>(true)) << name;
  }
  for (const char* name : {"symtest_o2_nofp_pie", "symtest_o2_nofp_nopie", "symtest_cxx_o2_nofp_nopie"}) {
    auto elf = ElfFile::Open(test_util::FixturePath(name));
    ASSERT_TRUE(elf) << elf.error().message;
    EXPECT_EQ(KeepsFramePointers(*elf), std::optional<bool>(false)) << name;
  }
}

TEST(KeepsFramePointers, LooptraceSampleTargetsToo) {
  auto fp = ElfFile::Open(std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app");
  auto nofp = ElfFile::Open(std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app-nofp");
  ASSERT_TRUE(fp && nofp);
  EXPECT_EQ(KeepsFramePointers(*fp), std::optional<bool>(true));
  EXPECT_EQ(KeepsFramePointers(*nofp), std::optional<bool>(false));
}

}  // namespace
}  // namespace looptrace::symbols
