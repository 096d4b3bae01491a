// ElfFile: USDT notes against readelf, reads at addresses, and files that are missing,
// not ELF, truncated or corrupted (clean errors, never a crash).
#include "looptrace/symbols/elf_file.h"

#include <elf.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "../fuzz_corpus.h"
#include "looptrace/symbols/debug_file.h"
#include "looptrace/symbols/probe_cost.h"
#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using test_util::FixturePath;
using test_util::kLibc;
using test_util::OpenOrDie;
using test_util::ReadFile;
using test_util::RunCommand;
using test_util::SplitLines;
using test_util::SplitWords;
using test_util::TempDir;
using test_util::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

struct ReadelfFunction {
  std::string name;
  std::string version;
  bool default_version = true;
  uint64_t address;
  uint64_t size;
  bool ifunc;
};

// Defined FUNC/IFUNC entries of .dynsym and .symtab as `readelf -sW` prints them.

struct ReadelfProbe {
  std::string provider, name, arguments;
  uint64_t location = 0, base = 0, semaphore = 0;
};

std::vector<ReadelfProbe> ReadelfUsdt(const std::string& path) {
  std::vector<ReadelfProbe> probes;
  for (const std::string& raw : SplitLines(RunCommand("readelf -n '" + path + "'"))) {
    std::string_view line(raw);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.starts_with("Provider: ")) {
      probes.emplace_back();
      probes.back().provider = line.substr(10);
    } else if (probes.empty()) {
      continue;
    } else if (line.starts_with("Name: ")) {
      probes.back().name = line.substr(6);
    } else if (line.starts_with("Location: ")) {
      std::string text(line);
      std::sscanf(text.c_str(), "Location: %lx, Base: %lx, Semaphore: %lx", &probes.back().location,
                  &probes.back().base, &probes.back().semaphore);
    } else if (line.starts_with("Arguments:")) {
      std::string_view args = line.substr(10);
      if (args.starts_with(' ')) args.remove_prefix(1);
      probes.back().arguments = args;
    }
  }
  return probes;
}

TEST(ElfFile, UsdtProbesMatchReadelf) {
  for (const char* name : {"probe_shapes_pie", "probe_shapes_nopie", "libltfixture.so", "libltfixture_stripped.so"}) {
    SCOPED_TRACE(name);
    const std::string path = FixturePath(name);
    const ElfFile file = OpenOrDie(path);
    std::vector<ReadelfProbe> expected = ReadelfUsdt(path);
    ASSERT_FALSE(expected.empty());
    std::sort(expected.begin(), expected.end(), [](const ReadelfProbe& a, const ReadelfProbe& b) {
      return std::tie(a.location, a.provider, a.name) < std::tie(b.location, b.provider, b.name);
    });
    ASSERT_EQ(file.usdt_probes().size(), expected.size());
    const std::string contents = ReadFile(path);
    for (size_t i = 0; i < expected.size(); ++i) {
      const UsdtProbe& probe = file.usdt_probes()[i];
      EXPECT_EQ(probe.provider, expected[i].provider);
      EXPECT_EQ(probe.name, expected[i].name);
      EXPECT_EQ(probe.address, expected[i].location);  // not prelinked: no adjustment
      EXPECT_EQ(probe.semaphore_address, expected[i].semaphore);
      EXPECT_EQ(probe.arguments, expected[i].arguments);
      auto offset = file.AddressToFileOffset(probe.address);
      ASSERT_TRUE(offset.has_value());
      EXPECT_EQ(probe.file_offset, *offset);
      // The probe site is the nop sys/sdt.h emits.
      ASSERT_LT(probe.file_offset, contents.size());
      EXPECT_EQ(static_cast<uint8_t>(contents[probe.file_offset]), 0x90);
    }
  }
}

TEST(ElfFile, FindUsdt) {
  const ElfFile file = OpenOrDie(FixturePath("probe_shapes_pie"));
  auto tick = file.FindUsdt("looptrace_test", "tick");
  ASSERT_EQ(tick.size(), 1u);
  EXPECT_EQ(tick[0]->semaphore_address, 0u);
  EXPECT_EQ(tick[0]->semaphore_file_offset, 0u);
  EXPECT_FALSE(tick[0]->arguments.empty());

  auto twice = file.FindUsdt("looptrace_test", "twice");
  ASSERT_EQ(twice.size(), 2u);
  EXPECT_LT(twice[0]->address, twice[1]->address);

  auto guarded = file.FindUsdt("looptrace_test", "guarded");
  ASSERT_EQ(guarded.size(), 1u);
  EXPECT_NE(guarded[0]->semaphore_address, 0u);
  auto sema_offset = file.AddressToFileOffset(guarded[0]->semaphore_address);
  ASSERT_TRUE(sema_offset.has_value());
  EXPECT_EQ(guarded[0]->semaphore_file_offset, *sema_offset);
  EXPECT_NE(guarded[0]->semaphore_file_offset, guarded[0]->semaphore_address);  // PIE .data

  EXPECT_EQ(file.FindUsdt("", "tick").size(), 1u);
  EXPECT_EQ(file.FindUsdt("looptrace_test", "*").size(), 4u);
  EXPECT_TRUE(file.FindUsdt("looptrace_test", "nope").empty());
  EXPECT_TRUE(file.FindUsdt("other", "tick").empty());
}

TEST(ElfFile, AddressOutsideSegmentsIsAnError) {
  const ElfFile file = OpenOrDie(FixturePath("probe_shapes_nopie"));
  auto offset = file.AddressToFileOffset(0x10);
  ASSERT_FALSE(offset.has_value());
  EXPECT_THAT(offset.error().message, HasSubstr("0x10"));
  EXPECT_THAT(offset.error().message, HasSubstr("probe_shapes_nopie"));
  EXPECT_FALSE(file.ReadAtAddress(0x10, 4).has_value());
}

TEST(ElfFile, ReadAtAddressStopsAtTheEndOfTheSegmentContents) {
  const std::string path = FixturePath("probe_shapes_nopie");
  const ElfFile file = OpenOrDie(path);
  // The last byte of the executable segment: readelf -lW gives its vaddr and filesz.
  uint64_t end = 0;
  for (const std::string& line : SplitLines(RunCommand("readelf -lW '" + path + "'"))) {
    std::vector<std::string> words = SplitWords(line);
    // LOAD offset vaddr paddr filesz memsz flags... align; the flags are "R E".
    if (words.size() >= 8 && words[0] == "LOAD" &&
        std::find(words.begin() + 6, words.end() - 1, "E") != words.end() - 1) {
      end = std::stoull(words[2], nullptr, 16) + std::stoull(words[4], nullptr, 16);
    }
  }
  ASSERT_NE(end, 0u);
  auto bytes = file.ReadAtAddress(end - 2, 16);
  ASSERT_TRUE(bytes.has_value()) << bytes.error().message;
  EXPECT_EQ(bytes->size(), 2u);
  auto empty = file.ReadAtAddress(end - 2, 0);
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
}

TEST(ElfFile, MissingFileIsAnError) {
  auto file = ElfFile::Open("/nonexistent/dir/libnothing.so");
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().message, "cannot open /nonexistent/dir/libnothing.so: No such file or directory");
  EXPECT_EQ(file.error().code, ExitCode::kProfile);
}

TEST(ElfFile, NonElfFilesAreErrors) {
  TempDir dir;
  WriteFile(dir.File("text"), "#!/bin/sh\necho this is not an ELF file\n");
  WriteFile(dir.File("empty"), "");
  WriteFile(dir.File("magic_only"),
            "\x7f"
            "ELF");
  for (const char* name : {"text", "empty", "magic_only"}) {
    auto file = ElfFile::Open(dir.File(name));
    ASSERT_FALSE(file.has_value()) << name;
    EXPECT_THAT(file.error().message, HasSubstr(dir.File(name))) << name;
    EXPECT_THAT(file.error().message, HasSubstr("cannot")) << name;
  }
  auto text = ElfFile::Open(dir.File("text"));
  EXPECT_EQ(text.error().message, "cannot read " + dir.File("text") + ": not an ELF file");

  auto directory = ElfFile::Open(dir.path());
  ASSERT_FALSE(directory.has_value());
  EXPECT_THAT(directory.error().message, HasSubstr("not a regular file"));

  // A static archive is not an ELF file either.
  RunCommand("ar rc '" + dir.File("libx.a") + "' '" + dir.File("text") + "' 2>/dev/null");
  auto archive = ElfFile::Open(dir.File("libx.a"));
  ASSERT_FALSE(archive.has_value());
  EXPECT_THAT(archive.error().message, HasSubstr("archive"));
}

TEST(ElfFile, TruncatedFilesFailCleanly) {
  TempDir dir;
  const std::string contents = ReadFile(FixturePath("probe_shapes_pie"));
  ASSERT_GT(contents.size(), 4096u);
  const size_t cuts[] = {
      5, 16, 63, 64, 200, 1000, 4096, contents.size() / 2, contents.size() - 64, contents.size() - 1};
  for (size_t cut : cuts) {
    SCOPED_TRACE(cut);
    const std::string path = dir.File("truncated_" + std::to_string(cut));
    WriteFile(path, contents.substr(0, cut));
    auto file = ElfFile::Open(path);
    // The section header table is at the end of the file: every cut loses it.
    ASSERT_FALSE(file.has_value());
    EXPECT_THAT(file.error().message, HasSubstr(path));
  }
}

// Rewrites one field of the section header of `type` in a copy of a 64-bit ELF file.
std::string CorruptSection(const std::string& contents, uint32_t type, size_t field_offset, uint64_t value) {
  std::string out = contents;
  Elf64_Ehdr ehdr;
  std::memcpy(&ehdr, out.data(), sizeof(ehdr));
  for (size_t i = 0; i < ehdr.e_shnum; ++i) {
    const size_t at = ehdr.e_shoff + i * ehdr.e_shentsize;
    Elf64_Shdr shdr;
    std::memcpy(&shdr, out.data() + at, sizeof(shdr));
    if (shdr.sh_type == type) std::memcpy(out.data() + at + field_offset, &value, sizeof(value));
  }
  return out;
}

TEST(ElfFile, CorruptSectionsFailCleanly) {
  TempDir dir;
  const std::string contents = ReadFile(FixturePath("probe_shapes_pie"));
  const std::string symtab_far = dir.File("symtab_far");
  WriteFile(symtab_far, CorruptSection(contents, SHT_SYMTAB, offsetof(Elf64_Shdr, sh_offset), contents.size() * 4));
  auto far = ElfFile::Open(symtab_far);
  ASSERT_FALSE(far.has_value());
  EXPECT_THAT(far.error().message, HasSubstr(".symtab"));
  EXPECT_THAT(far.error().message, HasSubstr(symtab_far));

  const std::string symtab_huge = dir.File("symtab_huge");
  WriteFile(symtab_huge, CorruptSection(contents, SHT_SYMTAB, offsetof(Elf64_Shdr, sh_size), ~0ull / 2));
  EXPECT_FALSE(ElfFile::Open(symtab_huge).has_value());

  // A string table link out of range: names cannot be read, symbols are skipped and
  // counted, nothing crashes.
  const std::string bad_link = dir.File("bad_link");
  std::string linked = contents;
  {
    Elf64_Ehdr ehdr;
    std::memcpy(&ehdr, linked.data(), sizeof(ehdr));
    for (size_t i = 0; i < ehdr.e_shnum; ++i) {
      const size_t at = ehdr.e_shoff + i * ehdr.e_shentsize;
      Elf64_Shdr shdr;
      std::memcpy(&shdr, linked.data() + at, sizeof(shdr));
      if (shdr.sh_type == SHT_SYMTAB) {
        const uint32_t link = 9999;
        std::memcpy(linked.data() + at + offsetof(Elf64_Shdr, sh_link), &link, sizeof(link));
      }
    }
  }
  WriteFile(bad_link, linked);
  auto file = ElfFile::Open(bad_link);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  EXPECT_GT(file->malformed_entries(), 0u);
  EXPECT_TRUE(file->FindFunctions("lt_push_rbp").empty());  // only in .symtab
  EXPECT_FALSE(file->usdt_probes().empty());
}

TEST(ElfFile, RandomlyCorruptedFilesNeverCrash) {
  TempDir dir;
  const std::string path = dir.File("corrupt");
  for (const char* fixture : {"probe_shapes_pie", "libltfixture.so"}) {
    const std::string original = ReadFile(FixturePath(fixture));
    std::mt19937_64 rng(42);  // deterministic
    size_t opened = 0;
    for (int iteration = 0; iteration < 150; ++iteration) {
      std::string data = original;
      const int flips = 1 + static_cast<int>(rng() % 16);
      for (int i = 0; i < flips; ++i) {
        // Mostly the ELF/program headers at the front and the section headers at the end.
        size_t at;
        switch (rng() % 3) {
          case 0:
            at = rng() % 4096;
            break;
          case 1:
            at = data.size() - 1 - rng() % 3072;
            break;
          default:
            at = rng() % data.size();
            break;
        }
        data[at] = static_cast<char>(rng());
      }
      WriteFile(path, data);
      auto file = ElfFile::Open(path);
      if (!file) {
        EXPECT_THAT(file.error().message, HasSubstr(path));
        continue;
      }
      ++opened;
      for (const Symbol& symbol : file->functions()) {
        if (auto bytes = file->ReadAtAddress(symbol.address, 16)) ClassifyProbeInstruction(*bytes);
        file->FindFunctionByAddress(symbol.address + 1);
      }
      file->FindFunctions("main");
      file->FindFunctions("lt_*");
      file->ClosestNames("mian", 3);
    }
    EXPECT_GT(opened, 0u);
  }
}

TEST(ElfFile, MoveKeepsLookupsWorking) {
  ElfFile file = OpenOrDie(FixturePath("cpp_symbols_pie"));
  ElfFile moved(std::move(file));
  EXPECT_EQ(moved.FindFunctions("looptrace_fixture::Overloaded").size(), 2u);
  ElfFile assigned = OpenOrDie(FixturePath("probe_shapes_pie"));
  assigned = std::move(moved);
  EXPECT_EQ(assigned.FindFunctions("looptrace_fixture::Overloaded").size(), 2u);
  EXPECT_EQ(assigned.FindFunctions("lt_push_rbp").size(), 0u);
  auto bytes = assigned.ReadAtAddress(assigned.functions().front().address, 1);
  EXPECT_TRUE(bytes.has_value());
}

TEST(ElfFile, OpenIsCheapForLibc) {
  const auto start = std::chrono::steady_clock::now();
  const ElfFile file = OpenOrDie(kLibc);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GT(file.functions().size(), 2000u);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 500);
}

TEST(DynamicInfo, ReadsRunpathAndNeeded) {
  auto info = ReadDynamicInfo(FixturePath("lib_user"));
  ASSERT_TRUE(info.has_value()) << info.error().message;
  EXPECT_THAT(info->needed, ::testing::Contains("libltfixture.so.1"));
  EXPECT_THAT(info->needed, ::testing::Contains("libc.so.6"));
  EXPECT_THAT(info->runpath, HasSubstr("$ORIGIN"));
  const ElfFile file = OpenOrDie(FixturePath("lib_user"));
  EXPECT_EQ(file.dynamic().runpath, info->runpath);
  EXPECT_EQ(file.dynamic().needed, info->needed);

  auto missing = ReadDynamicInfo("/nonexistent");
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message, HasSubstr("/nonexistent"));
}

// Caught by the elf_file fuzz harness's cross-check of ElfFile against ReadDynamicInfo, on an
// input made by hand after reading both (libFuzzer had not produced one in 15 min): with
// two SHT_DYNAMIC sections (here .interp retyped), ElfFile read the last and
// ReadDynamicInfo the first, so `run`'s library search and the symbolizer saw different
// DT_NEEDED/RUNPATH. Both now take the one PT_DYNAMIC points at, as ld.so does.
TEST(ElfFileTest, FuzzTwoDynamicSectionsReadTheOneTheLoaderUses) {
  const std::string path = looptrace::test_util::FuzzCorpusPath("elf_file", "regress_two_dynamic_sections");
  ASSERT_EQ(ReadFile(path).size(), 16584u);
  ElfFile file = OpenOrDie(path);
  auto dynamic = ReadDynamicInfo(path);
  ASSERT_TRUE(dynamic) << dynamic.error().message;
  EXPECT_THAT(file.dynamic().needed, ElementsAre("libc.so.6"));
  EXPECT_THAT(dynamic->needed, ElementsAre("libc.so.6"));
}

// Caught the same way (the harness cross-checks ElfFile's build id against ReadBuildId):
// a build-id note whose owner is "GNU\0" padded to n_namesz 8. ElfFile took it as a build
// id, ReadBuildId (like elfutils, the kernel and perf) did not, so the file's own debug
// file would be rejected for a build-id mismatch. Owners now match exactly.
TEST(ElfFileTest, FuzzBuildIdNoteOwnerMustBeExactlyGnu) {
  const std::string path = looptrace::test_util::FuzzCorpusPath("elf_file", "regress_build_id_owner_namesz_8");
  ASSERT_EQ(ReadFile(path).size(), 13688u);
  ElfFile file = OpenOrDie(path);
  EXPECT_EQ(file.build_id(), "");
  auto build_id = ReadBuildId(path);
  ASSERT_TRUE(build_id) << build_id.error().message;
  EXPECT_EQ(*build_id, "");
  EXPECT_FALSE(file.FindUsdt("seed", "leaf").empty());  // other notes still read
}

// Found by libFuzzer (elf_file target, the same cross-check) after the fix above: a
// build-id note with n_namesz 3 ("GNU" without its NUL) was still a build id for ElfFile.
// A name must end with its NUL to own a note.
TEST(ElfFileTest, FuzzBuildIdNoteOwnerNeedsItsNul) {
  const std::string path = looptrace::test_util::FuzzCorpusPath("elf_file", "regress_build_id_owner_namesz_3");
  ASSERT_EQ(ReadFile(path).size(), 5930u);
  ElfFile file = OpenOrDie(path);
  EXPECT_EQ(file.build_id(), "");
  auto build_id = ReadBuildId(path);
  ASSERT_TRUE(build_id) << build_id.error().message;
  EXPECT_EQ(*build_id, "");
}

}  // namespace
}  // namespace looptrace::symbols
