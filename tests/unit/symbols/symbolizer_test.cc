#include "looptrace/symbols/symbolizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "../fuzz_corpus.h"
#include "addr2line_util.h"
#include "looptrace/symbols/debug_file.h"
#include "looptrace/symbols/process_symbolizer.h"
#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using looptrace::test_util::FuzzCorpusPath;
using test_util::AsFrames;
using test_util::Describe;
using test_util::ExpectedFrame;
using test_util::FixturePath;
using test_util::ReadFile;
using test_util::RunCommand;
using test_util::TempDir;
using test_util::WriteFile;
using ::testing::HasSubstr;

constexpr size_t kAddressesPerFixture = 1000;
constexpr uint64_t kSeed = 20240607;

std::string DebugVariant(const std::string& base, const std::string& relative) {
  return FixturePath("debug/" + base + "/" + relative);
}

struct Addr2lineCase {
  std::string name;        // test name
  std::string file;        // what the Symbolizer reads
  std::string reference;   // what eu-addr2line reads (same addresses and DWARF)
  std::string debug_root;  // debug directory for the build-id tree ("" = none)
  bool expect_lines = true;
};

std::ostream& operator<<(std::ostream& os, const Addr2lineCase& c) { return os << c.name; }

std::vector<Addr2lineCase> Addr2lineCases() {
  std::vector<Addr2lineCase> cases;
  for (const char* opt : {"o0", "o2"}) {
    for (const char* fp : {"fp", "nofp"}) {
      for (const char* kind : {"pie", "nopie"}) {
        const std::string name = std::string("symtest_") + opt + "_" + fp + "_" + kind;
        cases.push_back({name, FixturePath(name), FixturePath(name), ""});
      }
    }
  }
  cases.push_back({"symtest_o2_gz_pie", FixturePath("symtest_o2_gz_pie"), FixturePath("symtest_o2_gz_pie"), ""});
  for (const char* name : {"symtest_cxx_o2_pie", "symtest_cxx_o2_nofp_nopie", "symtest_cxx_o0_pie"}) {
    cases.push_back({name, FixturePath(name), FixturePath(name), ""});
  }
  for (const char* base : {"symtest_o2_nofp_pie", "symtest_o0_fp_nopie", "symtest_cxx_o2_pie"}) {
    const std::string b = base;
    cases.push_back({b + "_debuglink", DebugVariant(b, "debuglink/" + b), FixturePath(b), ""});
    cases.push_back({b + "_dotdebug", DebugVariant(b, "dotdebug/" + b), FixturePath(b), ""});
    cases.push_back({b + "_buildid", DebugVariant(b, "buildid/" + b), FixturePath(b), DebugVariant(b, "root")});
    cases.push_back({b + "_zdebug", DebugVariant(b, b + "_zdebug"), DebugVariant(b, b + "_zdebug"), ""});
    cases.push_back(
        {b + "_minidebuginfo", DebugVariant(b, b + "_mini"), DebugVariant(b, b + "_mini"), "", /*expect_lines=*/false});
  }
  return cases;
}

class Addr2lineAgreementTest : public ::testing::TestWithParam<Addr2lineCase> {};

// For 1000 random addresses in .text, the function names, file:line:column and inline
// chains agree with eu-addr2line -f -i -C.
TEST_P(Addr2lineAgreementTest, MatchesEuAddr2line) {
  if (!test_util::HaveEuAddr2line()) GTEST_SKIP() << "eu-addr2line (elfutils) is not installed";
  const Addr2lineCase& c = GetParam();
  ModuleCacheOptions options;
  options.debug.debug_directories.clear();
  if (!c.debug_root.empty()) options.debug.debug_directories.push_back(c.debug_root);
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>(options));

  const std::vector<uint64_t> addresses = test_util::RandomTextAddresses(c.reference, kAddressesPerFixture, kSeed);
  ASSERT_EQ(addresses.size(), kAddressesPerFixture);
  const auto expected = test_util::EuAddr2line(c.reference, addresses);
  ASSERT_EQ(expected.size(), addresses.size());

  size_t agree = 0;
  size_t with_line = 0;
  size_t inlined = 0;
  size_t named = 0;
  std::vector<std::string> failures;
  for (size_t i = 0; i < addresses.size(); ++i) {
    auto result = symbolizer.SymbolizeModule(c.file, addresses[i]);
    const std::vector<ExpectedFrame> actual = AsFrames(*result);
    if (actual == expected[i]) {
      ++agree;
    } else if (failures.size() < 5) {
      char address[32];
      std::snprintf(address, sizeof(address), "0x%llx", static_cast<unsigned long long>(addresses[i]));
      failures.push_back(std::string(address) + " (" + std::string(DegradationName(result->degradation)) +
                         ")\n  expected:" + Describe(expected[i]) + "\n  actual:" + Describe(actual));
    }
    if (result->degradation == Degradation::kNone) ++with_line;
    if (result->frames.size() > 1) ++inlined;
    if (!result->frames.empty() && !result->frames.front().function.empty()) ++named;
  }
  EXPECT_EQ(agree, addresses.size()) << ::testing::PrintToString(failures);
  // Small fixtures: a good part of .text is crt code without DWARF (_start, frame_dummy...).
  if (c.expect_lines) {
    EXPECT_GT(with_line, addresses.size() * 3 / 4) << symbolizer.stats().ToString();
  } else {
    EXPECT_EQ(with_line, 0u);
  }
  EXPECT_GT(named, addresses.size() * 3 / 4) << symbolizer.stats().ToString();
  RecordProperty("agreement", std::to_string(agree) + "/" + std::to_string(addresses.size()));
  RecordProperty("inlined", std::to_string(inlined));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Addr2lineAgreementTest, ::testing::ValuesIn(Addr2lineCases()),
                         [](const auto& info) { return info.param.name; });

// ---- Processes, the module cache and bad input.

// A fixture started with "stop", stopped by its own SIGSTOP; killed by the destructor.
class StoppedProcess {
 public:
  explicit StoppedProcess(const std::string& path) {
    pid_ = fork();
    if (pid_ == 0) {
      execl(path.c_str(), path.c_str(), "stop", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    stopped_ = pid_ > 0 && waitpid(pid_, &status, WUNTRACED) == pid_ && WIFSTOPPED(status);
  }
  ~StoppedProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  StoppedProcess(const StoppedProcess&) = delete;
  StoppedProcess& operator=(const StoppedProcess&) = delete;
  pid_t pid() const { return pid_; }
  bool stopped() const { return stopped_; }

 private:
  pid_t pid_ = -1;
  bool stopped_ = false;
};

// The run-time address of `function` of the executable `path` in process `pid`.
uint64_t RuntimeAddress(int pid, const std::string& path, const std::string& function) {
  auto elf = ElfFile::Open(path);
  if (!elf) return 0;
  auto found = elf->FindFunctions(function);
  if (found.empty()) return 0;
  auto maps = ReadProcMaps(pid);
  if (!maps) return 0;
  const std::string name = std::filesystem::path(path).filename();
  for (const MapEntry& map : *maps) {
    if (!map.is_executable() || std::filesystem::path(map.path).filename() != name) continue;
    const uint64_t offset = found.front()->file_offset;
    if (offset >= map.offset && offset < map.offset + (map.end - map.start)) {
      return map.start + offset - map.offset;
    }
  }
  return 0;
}

TEST(SymbolizerTest, NamesAddressesOfAProcessWithLines) {
  const std::string path = FixturePath("symtest_o2_nofp_pie");
  StoppedProcess process(path);
  ASSERT_TRUE(process.stopped());
  const uint64_t address = RuntimeAddress(process.pid(), path, "st_leaf");
  ASSERT_NE(address, 0u);

  Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
  auto result = symbolizer.Symbolize(process.pid(), address + 4);
  EXPECT_EQ(result->degradation, Degradation::kNone) << DegradationName(result->degradation);
  EXPECT_EQ(result->function, "st_leaf");
  EXPECT_EQ(result->function_offset, 4u);
  EXPECT_EQ(std::filesystem::path(result->module).filename(), "symtest_o2_nofp_pie");
  ASSERT_FALSE(result->frames.empty());
  EXPECT_EQ(result->frames.back().function, "st_leaf");
  EXPECT_THAT(result->frames.front().file, HasSubstr("symtest_util.c"));
  EXPECT_GT(result->frames.front().line, 0u);
  EXPECT_FALSE(result->build_id.empty());

  // A second lookup is a cache hit; stack and unmapped addresses degrade with their cause.
  symbolizer.Symbolize(process.pid(), address + 4);
  EXPECT_EQ(symbolizer.stats().cache_hits, 1u);
  EXPECT_EQ(symbolizer.Symbolize(process.pid(), 16)->degradation, Degradation::kUnmapped);
  const std::vector<MapEntry>* maps = symbolizer.Maps(process.pid());
  ASSERT_NE(maps, nullptr);
  for (const MapEntry& map : *maps) {
    if (map.path == "[stack]") {
      EXPECT_EQ(symbolizer.Symbolize(process.pid(), map.start)->degradation, Degradation::kNotFileBacked);
    }
  }
  const SymbolizerStats stats = symbolizer.stats();
  EXPECT_EQ(stats.lookups, stats.by_degradation[0] + stats.by_degradation[1] + stats.by_degradation[2]);
  EXPECT_EQ(stats.dwarf_in_file, 1u);
  EXPECT_THAT(stats.ToString(), HasSubstr("unmapped=1"));
}

// One read per file: the planner, the runtimes and the frame namer share the ELF file (a
// large executable is read once per run) but not the module's name for it, and a file that
// could not be read is tried again at the next call, never remembered as missing.
TEST(SymbolizerTest, ElfFilesAreReadOncePerFileAndErrorsAreNotKept) {
  auto cache = std::make_shared<ModuleCache>();
  const std::string path = FixturePath("symtest_o2_nofp_pie");
  auto first = cache->Elf(path);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  auto second = cache->Elf(path);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->get(), second->get());
  // The module made for the file later shares it, under the symbolizer's own name for it.
  auto module = cache->Get(ModuleLocation{path, "/usr/bin/as-the-process-sees-it", ""});
  EXPECT_EQ(first->get(), module->elf());
  EXPECT_EQ(module->path(), "/usr/bin/as-the-process-sees-it");
  EXPECT_FALSE((*first)->functions().empty());

  TempDir dir;
  const std::string later = dir.path() + "/later";
  auto missing = cache->Elf(later);
  ASSERT_FALSE(missing.has_value());
  EXPECT_THAT(missing.error().message, HasSubstr(later));
  std::filesystem::copy_file(path, later);
  auto found = cache->Elf(later);
  ASSERT_TRUE(found.has_value()) << found.error().message;
  EXPECT_FALSE((*found)->functions().empty());
}

TEST(SymbolizerTest, ProcessSymbolizerKeepsItsApi) {
  const std::string path = FixturePath("symtest_o0_fp_nopie");
  StoppedProcess process(path);
  ASSERT_TRUE(process.stopped());
  const uint64_t address = RuntimeAddress(process.pid(), path, "st_level_c");
  ASSERT_NE(address, 0u);
  ProcessSymbolizer symbolizer(process.pid(), std::make_shared<ModuleCache>());
  symbolizer.ReadMaps();
  std::optional<SymbolizedAddress> named = symbolizer.Symbolize(address + 1);
  ASSERT_TRUE(named.has_value());
  EXPECT_EQ(named->function, "st_level_c");
  EXPECT_EQ(named->function_offset, 1u);
  EXPECT_EQ(named->module, path);
  EXPECT_FALSE(symbolizer.Symbolize(8).has_value());
  auto full = symbolizer.SymbolizeFull(address + 1);
  ASSERT_FALSE(full->frames.empty());
  EXPECT_THAT(full->frames.front().file, HasSubstr("symtest_util.c"));
}

TEST(SymbolizerTest, DeletedExecutableIsReadThroughMapFiles) {
  TempDir dir;
  const std::string copy = dir.File("deleted_fixture");
  std::filesystem::copy_file(FixturePath("symtest_o0_fp_pie"), copy);
  std::filesystem::permissions(copy, std::filesystem::perms::owner_all);
  StoppedProcess process(copy);
  ASSERT_TRUE(process.stopped());
  const uint64_t address = RuntimeAddress(process.pid(), copy, "st_leaf");
  ASSERT_NE(address, 0u);
  std::filesystem::remove(copy);
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
  auto result = symbolizer.Symbolize(process.pid(), address);
  EXPECT_EQ(result->function, "st_leaf") << DegradationName(result->degradation);
  EXPECT_EQ(result->module, copy);
}

TEST(ModuleCacheTest, SharesModulesByIdentityAndBuildId) {
  TempDir dir;
  const std::string a = dir.File("a");
  const std::string b = dir.File("b");
  std::filesystem::copy_file(FixturePath("symtest_o2_fp_pie"), a);
  std::filesystem::copy_file(FixturePath("symtest_o2_fp_pie"), b);
  auto cache = std::make_shared<ModuleCache>();
  auto first = cache->Get(a);
  EXPECT_EQ(cache->Get(a), first);
  EXPECT_EQ(cache->Get(b), first);  // another inode, same build id
  EXPECT_EQ(cache->size(), 1u);
  const SymbolizerStats stats = cache->stats();
  EXPECT_EQ(stats.modules_loaded, 1u);
  EXPECT_EQ(stats.modules_shared, 2u);

  // Two symbolizers (sessions) over one cache load the file once.
  Symbolizer one({}, cache);
  Symbolizer two({}, cache);
  EXPECT_EQ(one.SymbolizeModule(a, 0x1000)->module, a);
  EXPECT_EQ(two.SymbolizeModule(b, 0x1000)->module, a);
  EXPECT_EQ(cache->size(), 1u);
}

class SymbolizerDebugFileTest : public ::testing::Test {
 protected:
  static constexpr char kBase[] = "symtest_o2_nofp_pie";
  // A copy of the stripped binary with its debuglink, in a fresh directory.
  std::string StrippedWithDebuglink() {
    const std::string stripped = dir_.File(kBase);
    std::filesystem::copy_file(DebugVariant(kBase, std::string("debuglink/") + kBase), stripped);
    return stripped;
  }
  std::string DebugFileName() const { return dir_.File(std::string(kBase) + ".debug"); }
  std::string OriginalDebugFile() const { return DebugVariant(kBase, std::string(kBase) + ".debug"); }
  // An address in st_level_c (whose name is not in the stripped .dynsym).
  uint64_t Address() const {
    auto elf = ElfFile::Open(FixturePath(kBase));
    return elf->FindFunctions("st_level_c").front()->address + 2;
  }
  std::shared_ptr<const Symbolization> Lookup(const std::string& path, std::vector<std::string> roots = {}) {
    ModuleCacheOptions options;
    options.debug.debug_directories = std::move(roots);
    symbolizer_ = std::make_unique<Symbolizer>(SymbolizerOptions{}, std::make_shared<ModuleCache>(options));
    return symbolizer_->SymbolizeModule(path, Address());
  }
  TempDir dir_;
  std::unique_ptr<Symbolizer> symbolizer_;
};

TEST_F(SymbolizerDebugFileTest, DebuglinkWithMatchingCrcIsUsed) {
  const std::string stripped = StrippedWithDebuglink();
  std::filesystem::copy_file(OriginalDebugFile(), DebugFileName());
  auto result = Lookup(stripped);
  EXPECT_EQ(result->degradation, Degradation::kNone);
  EXPECT_EQ(result->function, "st_level_c");  // from the debug file's .symtab
  EXPECT_EQ(symbolizer_->stats().debug_file_found, 1u);
  EXPECT_EQ(symbolizer_->cache().Get(stripped)->debug_file(), DebugFileName());
}

TEST_F(SymbolizerDebugFileTest, CrcMismatchIsRejectedAndCounted) {
  const std::string stripped = StrippedWithDebuglink();
  std::string contents = ReadFile(OriginalDebugFile());
  contents.push_back('\0');  // same build id, other CRC
  WriteFile(DebugFileName(), contents);
  auto crc = DebuglinkCrc32(DebugFileName());
  ASSERT_TRUE(crc);
  auto result = Lookup(stripped);
  EXPECT_EQ(result->degradation, Degradation::kDebugCrcMismatch);
  EXPECT_EQ(result->module, stripped);
  EXPECT_EQ(symbolizer_->stats().debug_crc_mismatch, 1u);
  EXPECT_THAT(symbolizer_->stats().ToString(), HasSubstr("debug_crc_mismatch=1"));
}

TEST_F(SymbolizerDebugFileTest, BuildIdMismatchIsRejectedAndCounted) {
  // The build-id tree holds another program's debug file under this build id.
  const std::string stripped = dir_.File(kBase);
  std::filesystem::copy_file(DebugVariant(kBase, std::string("buildid/") + kBase), stripped);
  auto elf = ElfFile::Open(stripped);
  ASSERT_TRUE(elf);
  const std::string target = BuildIdDebugPath(dir_.File("root"), elf->build_id());
  std::filesystem::create_directories(std::filesystem::path(target).parent_path());
  std::filesystem::copy_file(DebugVariant("symtest_o0_fp_nopie", "symtest_o0_fp_nopie.debug"), target);
  auto result = Lookup(stripped, {dir_.File("root")});
  EXPECT_EQ(result->degradation, Degradation::kDebugBuildIdMismatch);
  EXPECT_EQ(symbolizer_->stats().debug_build_id_mismatch, 1u);
}

TEST_F(SymbolizerDebugFileTest, MissingDebugFileDegradesToSymbols) {
  const std::string stripped = StrippedWithDebuglink();
  auto result = Lookup(stripped);
  EXPECT_EQ(result->degradation, Degradation::kNoSymbols);  // an executable's .dynsym is empty
  EXPECT_EQ(result->module, stripped);
  EXPECT_GT(result->module_offset, 0u);
  EXPECT_EQ(result->elf_address, Address());
  EXPECT_TRUE(result->frames.empty());
  EXPECT_EQ(symbolizer_->stats().debug_file_missing, 1u);
}

// Without symbols, an address is named by where its function starts (.eh_frame), so samples
// of one function add up: the truth is the unstripped file's symbol table.
TEST_F(SymbolizerDebugFileTest, AnAddressWithoutSymbolKnowsWhereItsFunctionStarts) {
  const std::string stripped = StrippedWithDebuglink();
  auto original = ElfFile::Open(FixturePath(kBase));
  ASSERT_TRUE(original);
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
  size_t checked = 0;
  for (const Symbol& function : original->functions()) {
    if (function.size < 2) continue;
    SCOPED_TRACE(function.name);
    for (uint64_t address :
         {function.address, function.address + function.size / 2, function.address + function.size - 1}) {
      auto result = symbolizer.SymbolizeModule(stripped, address);
      EXPECT_TRUE(result->function.empty());
      ASSERT_TRUE(result->unnamed_function_address.has_value());
      EXPECT_EQ(*result->unnamed_function_address, function.address);
    }
    ++checked;
  }
  EXPECT_GE(checked, 5u);
  // Outside every function (the ELF header): no start is made up.
  EXPECT_FALSE(symbolizer.SymbolizeModule(stripped, 0x10)->unnamed_function_address.has_value());
}

TEST_F(SymbolizerDebugFileTest, UnreadableDebugFileIsCounted) {
  const std::string stripped = StrippedWithDebuglink();
  WriteFile(DebugFileName(), "not an ELF file at all");
  auto result = Lookup(stripped);
  EXPECT_EQ(result->degradation, Degradation::kDebugFileUnreadable);
  EXPECT_EQ(symbolizer_->stats().debug_file_unreadable, 1u);
}

TEST(SymbolizerBadInputTest, MissingModule) {
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
  auto result = symbolizer.SymbolizeModule("/nonexistent/libgone.so", 0x1234);
  EXPECT_EQ(result->degradation, Degradation::kModuleMissing);
  EXPECT_EQ(result->module, "/nonexistent/libgone.so");
  EXPECT_EQ(symbolizer.stats().module_missing, 1u);
}

TEST(SymbolizerBadInputTest, TruncatedAndCorruptFilesNeverCrash) {
  TempDir dir;
  const std::string original = ReadFile(FixturePath("symtest_o2_fp_pie"));
  ASSERT_GT(original.size(), 4096u);
  const auto addresses = test_util::RandomTextAddresses(FixturePath("symtest_o2_fp_pie"), 50, 7);
  std::mt19937 rng(1234);
  size_t variants = 0;
  SymbolizerStats stats;
  auto check = [&](const std::string& contents) {
    const std::string path = dir.File("variant" + std::to_string(variants++));
    WriteFile(path, contents);
    Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
    for (uint64_t address : addresses) {
      auto result = symbolizer.SymbolizeModule(path, address);
      EXPECT_EQ(result->module, path);
    }
    stats.module_corrupt += symbolizer.stats().module_corrupt;
    stats.lookups += symbolizer.stats().lookups;
  };
  for (size_t length : {size_t{0}, size_t{3}, size_t{64}, size_t{100}, original.size() / 4, original.size() / 2,
                        original.size() - 100}) {
    check(original.substr(0, length));
  }
  for (int i = 0; i < 40; ++i) {
    std::string corrupt = original;
    for (int j = 0; j < 20; ++j) corrupt[rng() % corrupt.size()] = static_cast<char>(rng());
    check(corrupt);
  }
  // Corrupt headers specifically: section header offset, count and string table index.
  for (size_t offset : {size_t{0x28}, size_t{0x3c}, size_t{0x3e}, size_t{0x20}, size_t{0x36}}) {
    std::string corrupt = original;
    corrupt[offset] = '\xff';
    corrupt[offset + 1] = '\x7f';
    check(corrupt);
  }
  EXPECT_GT(stats.module_corrupt, 0u);
  EXPECT_EQ(stats.lookups, variants * addresses.size());
}

TEST(SymbolizerBadInputTest, CorruptDwarfIsCountedNotFatal) {
  TempDir dir;
  const std::string path = dir.File("corrupt_dwarf");
  std::filesystem::copy_file(FixturePath("symtest_o2_fp_pie"), path);
  // Overwrite .debug_info and .debug_line contents with garbage.
  std::string contents = ReadFile(path);
  for (const char* section : {".debug_info", ".debug_line", ".debug_abbrev"}) {
    for (const std::string& line : test_util::SplitLines(RunCommand("readelf -SW '" + path + "'"))) {
      auto words = test_util::SplitWords(line);
      for (size_t i = 0; i + 4 < words.size(); ++i) {
        if (words[i] != section) continue;
        const size_t offset = std::stoull(words[i + 3], nullptr, 16);
        const size_t size = std::stoull(words[i + 4], nullptr, 16);
        for (size_t k = 0; k < size && offset + k < contents.size(); ++k) {
          contents[offset + k] = static_cast<char>(0xA5 ^ k);
        }
      }
    }
  }
  WriteFile(path, contents);
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
  size_t named = 0;
  for (uint64_t address : test_util::RandomTextAddresses(path, 200, 3)) {
    auto result = symbolizer.SymbolizeModule(path, address);
    EXPECT_NE(result->degradation, Degradation::kNone);
    if (!result->function.empty()) ++named;
  }
  EXPECT_GT(named, 100u);  // the symbol table still names functions
  const SymbolizerStats stats = symbolizer.stats();
  EXPECT_GT(stats.corrupt_dwarf + stats.by_degradation[static_cast<size_t>(Degradation::kCorruptDwarf)] +
                stats.by_degradation[static_cast<size_t>(Degradation::kNoLineInfo)],
            0u)
      << stats.ToString();
}

TEST(SymbolizerBadInputTest, HugeSymbolTableSizeIsRejected) {
  TempDir dir;
  const std::string path = dir.File("huge_symtab");
  std::filesystem::copy_file(FixturePath("symtest_o2_fp_pie"), path);
  std::string contents = ReadFile(path);
  // Find .symtab's section header and claim 2^40 bytes.
  const uint64_t shoff = *reinterpret_cast<const uint64_t*>(contents.data() + 0x28);
  const uint16_t shnum = *reinterpret_cast<const uint16_t*>(contents.data() + 0x3c);
  bool patched = false;
  for (uint16_t i = 0; i < shnum; ++i) {
    char* header = contents.data() + shoff + i * 64;
    if (*reinterpret_cast<const uint32_t*>(header + 4) == 2 /* SHT_SYMTAB */) {
      const uint64_t huge = uint64_t{1} << 40;
      std::memcpy(header + 32, &huge, sizeof(huge));
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  WriteFile(path, contents);
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>());
  auto result = symbolizer.SymbolizeModule(path, 0x1100);
  EXPECT_EQ(result->degradation, Degradation::kModuleCorrupt);
  EXPECT_FALSE(symbolizer.cache().Get(path)->load_error().empty());
}

// An input of the symbolizer fuzz corpus, written by hand (assembly) while reviewing the
// DWARF index during fuzzing: 4000 lexical blocks of one unit all use the same list of
// 1000 ranges, so a 37 KiB file asked the index for 4 million ranges (minutes and
// gigabytes under the fuzzer's sanitizers). Index work is now bounded by the size of the
// DWARF; a unit beyond it is corrupt DWARF, named from the symbol table.
TEST(SymbolizerBadInputTest, FuzzSharedRangeListsAreCorruptDwarf) {
  const std::string path = FuzzCorpusPath("symbolizer", "regress_shared_rangelists.elf");
  ASSERT_EQ(ReadFile(path).size(), 37072u);
  ModuleCacheOptions options;
  options.debug.debug_directories.clear();
  Symbolizer symbolizer({}, std::make_shared<ModuleCache>(options));
  auto result = symbolizer.SymbolizeModule(path, 0x18);
  EXPECT_EQ(result->degradation, Degradation::kCorruptDwarf);
  EXPECT_EQ(result->function, "f");
  ASSERT_EQ(result->frames.size(), 1u);
  EXPECT_EQ(result->frames[0].function, "f");
  EXPECT_EQ(symbolizer.stats().by_degradation[static_cast<size_t>(Degradation::kCorruptDwarf)], 1u);
}

}  // namespace
}  // namespace looptrace::symbols
