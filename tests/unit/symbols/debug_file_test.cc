#include "looptrace/symbols/debug_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "looptrace/symbols/elf_file.h"
#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using test_util::FixturePath;
using test_util::ReadFile;
using test_util::TempDir;
using test_util::WriteFile;
using ::testing::HasSubstr;

constexpr char kBase[] = "symtest_o2_nofp_pie";

std::string Variant(const std::string& relative) { return FixturePath(std::string("debug/") + kBase + "/" + relative); }

TEST(DebugFileTest, ReadsDebuglinkAndItsCrcMatchesTheDebugFile) {
  auto stripped = ElfFile::Open(Variant(std::string("debuglink/") + kBase));
  ASSERT_TRUE(stripped) << stripped.error().message;
  ASSERT_TRUE(stripped->debuglink().has_value());
  EXPECT_EQ(stripped->debuglink()->name, std::string(kBase) + ".debug");
  EXPECT_FALSE(stripped->has_symtab());
  EXPECT_FALSE(stripped->has_debug_info());
  auto crc = DebuglinkCrc32(Variant(std::string("debuglink/") + kBase + ".debug"));
  ASSERT_TRUE(crc);
  EXPECT_EQ(*crc, stripped->debuglink()->crc);

  auto original = ElfFile::Open(FixturePath(kBase));
  ASSERT_TRUE(original);
  EXPECT_TRUE(original->has_symtab());
  EXPECT_TRUE(original->has_debug_info());
  EXPECT_FALSE(original->debuglink().has_value());
  auto id = ReadBuildId(Variant(std::string(kBase) + ".debug"));
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, original->build_id());
  EXPECT_EQ(stripped->build_id(), original->build_id());
}

TEST(DebugFileTest, FindsDebugFilesInEveryLayout) {
  DebugSearchOptions none;
  none.debug_directories.clear();
  const std::string link = Variant(std::string("debuglink/") + kBase);
  auto elf = ElfFile::Open(link);
  ASSERT_TRUE(elf);
  DebugFileSearch found = FindDebugFile(*elf, link, "", none);
  EXPECT_EQ(found.path, Variant(std::string("debuglink/") + kBase + ".debug"));
  EXPECT_FALSE(found.via_build_id);

  const std::string dot = Variant(std::string("dotdebug/") + kBase);
  elf = ElfFile::Open(dot);
  ASSERT_TRUE(elf);
  found = FindDebugFile(*elf, dot, "", none);
  EXPECT_EQ(found.path, Variant(std::string("dotdebug/.debug/") + kBase + ".debug"));

  const std::string by_id = Variant(std::string("buildid/") + kBase);
  elf = ElfFile::Open(by_id);
  ASSERT_TRUE(elf);
  EXPECT_EQ(FindDebugFile(*elf, by_id, "", none).path, "");
  DebugSearchOptions with_root;
  with_root.debug_directories = {Variant("root")};
  found = FindDebugFile(*elf, by_id, "", with_root);
  EXPECT_EQ(found.path, BuildIdDebugPath(Variant("root"), elf->build_id()));
  EXPECT_TRUE(found.via_build_id);

  // The debug-directory mirror of the file's directory: <root>/<dir>/<name>.
  TempDir dir;
  const std::string mirror = dir.path() + std::filesystem::path(link).parent_path().string() + "/" + kBase + ".debug";
  std::filesystem::create_directories(std::filesystem::path(mirror).parent_path());
  std::filesystem::copy_file(Variant(std::string(kBase) + ".debug"), mirror);
  const std::string moved = dir.File("elsewhere_binary");
  std::filesystem::copy_file(link, moved);
  elf = ElfFile::Open(moved);
  ASSERT_TRUE(elf);
  DebugSearchOptions mirror_root;
  mirror_root.debug_directories = {dir.path()};
  mirror_root.use_build_id = false;
  // Seen at `link`'s path inside the process: the mirror under the debug directory matches.
  found = FindDebugFile(*elf, link, "/nonexistent-root", mirror_root);
  EXPECT_EQ(found.path, mirror);
}

TEST(DebugFileTest, BuildIdPaths) {
  EXPECT_EQ(BuildIdDebugPath("/usr/lib/debug", "abcdef0123"), "/usr/lib/debug/.build-id/ab/cdef0123.debug");
  EXPECT_EQ(BuildIdDebugPath("/d/", "ab1"), "/d/.build-id/ab/1.debug");
  EXPECT_EQ(BuildIdDebugPath("/d", "a"), "");
}

TEST(MiniDebugInfoTest, NamesLocalFunctionsOfAStrippedBinary) {
  auto mini = ElfFile::Open(Variant(std::string(kBase) + "_mini"));
  ASSERT_TRUE(mini) << mini.error().message;
  EXPECT_GT(mini->minidebuginfo_functions(), 5u);
  EXPECT_EQ(mini->minidebuginfo_error(), "");
  EXPECT_EQ(mini->FindFunctions("st_level_c").size(), 1u);
  auto stripped = ElfFile::Open(Variant(std::string("buildid/") + kBase));
  ASSERT_TRUE(stripped);
  EXPECT_TRUE(stripped->FindFunctions("st_level_c").empty());
}

TEST(MiniDebugInfoTest, CorruptXzDegradesToDynsym) {
  TempDir dir;
  std::string contents = ReadFile(Variant(std::string(kBase) + "_mini"));
  // Corrupt the xz stream magic ("\xFD" "7zXZ") inside .gnu_debugdata.
  const size_t magic =
      contents.find(std::string("\xFD"
                                "7zXZ",
                                5));
  ASSERT_NE(magic, std::string::npos);
  contents[magic + 1] = 'Q';
  const std::string path = dir.File("corrupt_mini");
  WriteFile(path, contents);
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_EQ(elf->minidebuginfo_functions(), 0u);
  EXPECT_THAT(elf->minidebuginfo_error(), HasSubstr(".gnu_debugdata"));
}

TEST(XzTest, DecompressesAndRejectsBadInput) {
  const std::string text(10000, 'x');
  const std::string compressed = test_util::RunCommand("printf '%10000s' | tr ' ' x | xz -c");
  ASSERT_FALSE(compressed.empty());
  auto out = DecompressXz(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size(), 1 << 20);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(std::string(out->begin(), out->end()), text);
  auto limited = DecompressXz(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size(), 100);
  ASSERT_FALSE(limited);
  EXPECT_THAT(limited.error().message, HasSubstr("beyond"));
  auto truncated = DecompressXz(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size() / 2, 1 << 20);
  EXPECT_FALSE(truncated);
  const uint8_t junk[] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_FALSE(DecompressXz(junk, sizeof(junk), 1 << 20));
}

}  // namespace
}  // namespace looptrace::symbols
