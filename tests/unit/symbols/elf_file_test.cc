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

const Symbol* FindOne(const ElfFile& file, std::string_view name) {
  auto found = file.FindFunctions(name);
  EXPECT_EQ(found.size(), 1u) << name;
  return found.empty() ? nullptr : found.front();
}

struct ReadelfFunction {
  std::string name;
  std::string version;
  bool default_version = true;
  uint64_t address;
  uint64_t size;
  bool ifunc;
};

// Defined FUNC/IFUNC entries of .dynsym and .symtab as `readelf -sW` prints them.
std::vector<ReadelfFunction> ReadelfFunctions(const std::string& path) {
  std::vector<ReadelfFunction> out;
  for (const std::string& line : SplitLines(RunCommand("readelf -sW '" + path + "'"))) {
    std::vector<std::string> words = SplitWords(line);
    if (words.size() < 8 || words[0].back() != ':') continue;
    if (words[3] != "FUNC" && words[3] != "IFUNC") continue;
    if (words[6] == "UND") continue;
    std::string name = words[7];
    if (name.empty()) continue;
    ReadelfFunction f;
    const size_t at = name.find('@');
    if (at != std::string::npos) {
      f.default_version = name.compare(at, 2, "@@") == 0;
      f.version = name.substr(f.default_version ? at + 2 : at + 1);
      name.resize(at);
    }
    f.name = name;
    f.address = std::stoull(words[1], nullptr, 16);
    f.size = std::stoull(words[2], nullptr, 0);
    f.ifunc = words[3] == "IFUNC";
    out.push_back(f);
  }
  return out;
}

// Checks functions() against readelf: the same (name, address) set, sizes, ifunc flags,
// versions, and the sort order.
void ExpectSameFunctionsAsReadelf(const std::string& path) {
  SCOPED_TRACE(path);
  const ElfFile file = OpenOrDie(path);
  std::map<std::pair<std::string, uint64_t>, ReadelfFunction> expected;
  for (const ReadelfFunction& f : ReadelfFunctions(path)) {
    auto [it, inserted] = expected.emplace(std::make_pair(f.name, f.address), f);
    // Several versions of one name at one address: the default (@@) version wins.
    if (!inserted &&
        (it->second.version.empty() || (!it->second.default_version && f.default_version && !f.version.empty()))) {
      it->second.version = f.version;
      it->second.default_version = f.default_version;
    }
  }
  ASSERT_FALSE(expected.empty());
  std::set<std::pair<std::string, uint64_t>> actual;
  for (const Symbol& symbol : file.functions()) {
    EXPECT_TRUE(actual.emplace(symbol.name, symbol.address).second) << "duplicate " << symbol.name;
    auto it = expected.find({symbol.name, symbol.address});
    if (it == expected.end()) {
      ADD_FAILURE() << "unexpected function " << symbol.name;
      continue;
    }
    EXPECT_EQ(symbol.size, it->second.size) << symbol.name;
    EXPECT_EQ(symbol.is_ifunc, it->second.ifunc) << symbol.name;
    EXPECT_EQ(symbol.version, it->second.version) << symbol.name;
    EXPECT_EQ(symbol.is_default_version, it->second.default_version) << symbol.name;
  }
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 1; i < file.functions().size(); ++i) {
    EXPECT_LE(file.functions()[i - 1].address, file.functions()[i].address);
  }
}

TEST(ElfFile, FunctionsMatchReadelfForFixtures) {
  for (const char* name : {"cpp_symbols_pie", "cpp_symbols_nopie", "probe_shapes_pie", "probe_shapes_nopie",
                           "libltfixture.so", "libltfixture_stripped.so", "lib_user"}) {
    ExpectSameFunctionsAsReadelf(FixturePath(name));
  }
}

TEST(ElfFile, FunctionsMatchReadelfForLibc) { ExpectSameFunctionsAsReadelf(kLibc); }

TEST(ElfFile, DemangledNamesMatchNm) {
  const std::string path = FixturePath("cpp_symbols_pie");
  const ElfFile file = OpenOrDie(path);
  // `nm -C` prints "address type demangled name with spaces".
  std::multimap<uint64_t, std::string> nm;
  for (const std::string& line : SplitLines(RunCommand("nm -C --defined-only '" + path + "'"))) {
    if (line.size() < 20 || line[16] != ' ' || line[18] != ' ') continue;
    nm.emplace(std::stoull(line.substr(0, 16), nullptr, 16), line.substr(19));
  }
  size_t mangled = 0;
  for (const Symbol& symbol : file.functions()) {
    if (symbol.demangled == symbol.name) continue;
    ++mangled;
    auto [begin, end] = nm.equal_range(symbol.address);
    bool found = false;
    for (auto it = begin; it != end; ++it) found = found || it->second == symbol.demangled;
    EXPECT_TRUE(found) << symbol.name << " -> " << symbol.demangled;
  }
  EXPECT_GE(mangled, 7u);
}

TEST(ElfFile, BasicProperties) {
  const ElfFile pie = OpenOrDie(FixturePath("probe_shapes_pie"));
  const ElfFile nopie = OpenOrDie(FixturePath("probe_shapes_nopie"));
  const ElfFile lib = OpenOrDie(FixturePath("libltfixture.so"));
  EXPECT_TRUE(pie.is_pie_or_shared());
  EXPECT_FALSE(nopie.is_pie_or_shared());
  EXPECT_TRUE(lib.is_pie_or_shared());
  EXPECT_EQ(pie.path(), FixturePath("probe_shapes_pie"));
  EXPECT_EQ(lib.dynamic().soname, "libltfixture.so.1");
  EXPECT_EQ(pie.malformed_entries(), 0u);
  EXPECT_NE(pie.elf(), nullptr);
}

TEST(ElfFile, BuildIdMatchesReadelf) {
  for (const std::string& path :
       {FixturePath("probe_shapes_pie"), FixturePath("libltfixture_stripped.so"), std::string(kLibc)}) {
    const ElfFile file = OpenOrDie(path);
    const std::string notes = RunCommand("readelf -n '" + path + "'");
    const size_t at = notes.find("Build ID: ");
    ASSERT_NE(at, std::string::npos) << path;
    const std::string expected = SplitWords(notes.substr(at + 10))[0];
    EXPECT_EQ(file.build_id(), expected) << path;
    EXPECT_EQ(file.build_id().size(), 40u);
  }
}

TEST(ElfFile, FindFunctionsByRawDemangledAndQualifiedName) {
  const ElfFile file = OpenOrDie(FixturePath("cpp_symbols_pie"));
  const Symbol* by_raw = FindOne(file, "_ZNK17looptrace_fixture8Renderer12ComputeFrameEi");
  const Symbol* by_demangled = FindOne(file, "looptrace_fixture::Renderer::ComputeFrame(int) const");
  const Symbol* by_qualified = FindOne(file, "looptrace_fixture::Renderer::ComputeFrame");
  ASSERT_NE(by_raw, nullptr);
  EXPECT_EQ(by_raw, by_demangled);
  EXPECT_EQ(by_raw, by_qualified);
  EXPECT_EQ(by_raw->demangled, "looptrace_fixture::Renderer::ComputeFrame(int) const");

  // Overloads share the parameter-less name; sorted by address.
  auto overloads = file.FindFunctions("looptrace_fixture::Overloaded");
  ASSERT_EQ(overloads.size(), 2u);
  EXPECT_LT(overloads[0]->address, overloads[1]->address);
  EXPECT_EQ(file.FindFunctions("looptrace_fixture::Overloaded(double)").size(), 1u);

  const Symbol* c_function = FindOne(file, "lt_plain_c_function");
  ASSERT_NE(c_function, nullptr);
  EXPECT_EQ(c_function->demangled, "lt_plain_c_function");

  EXPECT_NE(FindOne(file, "looptrace_fixture::(anonymous namespace)::HiddenHelper"), nullptr);
  EXPECT_NE(FindOne(file, "looptrace_fixture::Twice<int>"), nullptr);
  EXPECT_TRUE(file.FindFunctions("ComputeFrame").empty());  // exact means exact
  EXPECT_TRUE(file.FindFunctions("no_such_function").empty());
}

TEST(ElfFile, FindFunctionsByGlob) {
  const ElfFile file = OpenOrDie(FixturePath("cpp_symbols_nopie"));
  auto all = file.FindFunctions("looptrace_fixture::*");
  EXPECT_GE(all.size(), 7u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1], all[i]);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LE(all[i - 1]->address, all[i]->address);

  auto twice = file.FindFunctions("*Twice<*");
  EXPECT_EQ(twice.size(), 2u);
  EXPECT_EQ(file.FindFunctions("lt_plain_?_function").size(), 1u);
  EXPECT_EQ(file.FindFunctions("lt_plain_[abc]_function").size(), 1u);
  EXPECT_EQ(file.FindFunctions("_ZN17looptrace_fixture10Overloaded*").size(), 2u);
  EXPECT_TRUE(file.FindFunctions("zzz*").empty());
}

TEST(ElfFile, VersionedSymbols) {
  for (const char* name : {"libltfixture.so", "libltfixture_stripped.so"}) {
    SCOPED_TRACE(name);
    const ElfFile file = OpenOrDie(FixturePath(name));
    auto versioned = file.FindFunctions("lt_lib_versioned");
    ASSERT_EQ(versioned.size(), 2u);
    std::set<std::string> versions = {versioned[0]->version, versioned[1]->version};
    EXPECT_EQ(versions, (std::set<std::string>{"LTFIX_1.0", "LTFIX_2.0"}));
    const Symbol* old_api = FindOne(file, "lt_lib_old_api");
    ASSERT_NE(old_api, nullptr);
    EXPECT_EQ(old_api->version, "LTFIX_1.0");
    const Symbol* new_api = FindOne(file, "lt_lib_new_api");
    ASSERT_NE(new_api, nullptr);
    EXPECT_EQ(new_api->version, "LTFIX_2.0");
    EXPECT_EQ(new_api->binding, STB_GLOBAL);
  }
}

TEST(ElfFile, Ifuncs) {
  const ElfFile file = OpenOrDie(FixturePath("probe_shapes_pie"));
  const Symbol* ifunc = FindOne(file, "lt_ifunc");
  ASSERT_NE(ifunc, nullptr);
  EXPECT_TRUE(ifunc->is_ifunc);
  const Symbol* resolver = FindOne(file, "lt_ifunc_resolver");
  ASSERT_NE(resolver, nullptr);
  EXPECT_FALSE(resolver->is_ifunc);
  EXPECT_EQ(ifunc->address, resolver->address);  // an IFUNC symbol points at its resolver

  const ElfFile lib = OpenOrDie(FixturePath("libltfixture.so"));
  const Symbol* lib_ifunc = FindOne(lib, "lt_lib_ifunc");
  ASSERT_NE(lib_ifunc, nullptr);
  EXPECT_TRUE(lib_ifunc->is_ifunc);
  EXPECT_EQ(lib_ifunc->version, "LTFIX_2.0");
}

TEST(ElfFile, FileOffsetsPointAtTheFunctionBytes) {
  for (const char* name : {"probe_shapes_pie", "probe_shapes_nopie", "libltfixture.so"}) {
    SCOPED_TRACE(name);
    const std::string path = FixturePath(name);
    const ElfFile file = OpenOrDie(path);
    const std::string contents = ReadFile(path);
    for (const Symbol& symbol : file.functions()) {
      ASSERT_GT(symbol.file_offset, 0u) << symbol.name;
      auto offset = file.AddressToFileOffset(symbol.address);
      ASSERT_TRUE(offset.has_value()) << offset.error().message;
      EXPECT_EQ(*offset, symbol.file_offset);
      auto bytes = file.ReadAtAddress(symbol.address, 8);
      ASSERT_TRUE(bytes.has_value()) << bytes.error().message;
      ASSERT_EQ(bytes->size(), 8u);
      ASSERT_LE(symbol.file_offset + 8, contents.size());
      EXPECT_EQ(std::memcmp(bytes->data(), contents.data() + symbol.file_offset, 8), 0) << symbol.name;
    }
  }
}

TEST(ElfFile, FileOffsetMatchesObjdump) {
  // objdump -F prints "(File Offset: 0x...)" for each symbol.
  const std::string path = FixturePath("probe_shapes_nopie");
  const ElfFile file = OpenOrDie(path);
  const Symbol* symbol = FindOne(file, "lt_push_rbp");
  ASSERT_NE(symbol, nullptr);
  const std::string out = RunCommand("objdump -d -F --no-show-raw-insn '" + path + "'");
  const size_t at = out.find("<lt_push_rbp> (File Offset: 0x");
  ASSERT_NE(at, std::string::npos);
  const uint64_t expected = std::stoull(out.substr(at + 30), nullptr, 16);
  EXPECT_EQ(symbol->file_offset, expected);
  EXPECT_NE(symbol->file_offset, symbol->address);  // non-PIE: 0x401000-based addresses
}

TEST(ElfFile, ClassifiesFixtureEntryInstructions) {
  struct Case {
    const char* function;
    ProbeCost cost;
    const char* mnemonic;
  };
  const Case cases[] = {
      {"lt_nop5_entry", ProbeCost::kEmulated, "nop5"},
      {"lt_nop1_entry", ProbeCost::kEmulated, "nop"},
      {"lt_push_r12_entry", ProbeCost::kEmulated, "push %r12"},
      {"lt_push_rbp", ProbeCost::kEmulated, "push %rbp"},
      {"lt_endbr_entry", ProbeCost::kSingleStep, "endbr64"},
      {"lt_mov_entry", ProbeCost::kSingleStep, "mov (single-step)"},
      {"lt_mov_leaf", ProbeCost::kSingleStep, "mov (single-step)"},
  };
  for (const char* name : {"probe_shapes_pie", "probe_shapes_nopie"}) {
    const ElfFile file = OpenOrDie(FixturePath(name));
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(name) + ":" + c.function);
      const Symbol* symbol = FindOne(file, c.function);
      ASSERT_NE(symbol, nullptr);
      auto bytes = file.ReadAtAddress(symbol->address, 16);
      ASSERT_TRUE(bytes.has_value());
      const InstructionInfo info = ClassifyProbeInstruction(*bytes);
      EXPECT_EQ(info.cost, c.cost);
      EXPECT_EQ(info.mnemonic, c.mnemonic);
    }
  }
}

TEST(ElfFile, FindFunctionByAddress) {
  const ElfFile file = OpenOrDie(FixturePath("probe_shapes_pie"));
  const Symbol* nop5 = FindOne(file, "lt_nop5_entry");
  ASSERT_NE(nop5, nullptr);
  ASSERT_GT(nop5->size, 2u);
  EXPECT_EQ(file.FindFunctionByAddress(nop5->address), nop5);
  EXPECT_EQ(file.FindFunctionByAddress(nop5->address + 1), nop5);
  EXPECT_EQ(file.FindFunctionByAddress(nop5->address + nop5->size - 1), nop5);
  EXPECT_NE(file.FindFunctionByAddress(nop5->address + nop5->size), nop5);
  EXPECT_EQ(file.FindFunctionByAddress(0), nullptr);
  EXPECT_EQ(file.FindFunctionByAddress(~0ull), nullptr);

  // Every function is found at its start and its last byte.
  for (const Symbol& symbol : file.functions()) {
    const Symbol* found = file.FindFunctionByAddress(symbol.address);
    ASSERT_NE(found, nullptr) << symbol.name;
    EXPECT_EQ(found->address, symbol.address) << symbol.name;
    if (symbol.size > 0) {
      const Symbol* last = file.FindFunctionByAddress(symbol.address + symbol.size - 1);
      ASSERT_NE(last, nullptr);
      EXPECT_EQ(last->address, symbol.address) << symbol.name;
    }
  }
}

TEST(ElfFile, FindFunctionByAddressPrefersGlobalAliases) {
  const ElfFile file = OpenOrDie(FixturePath("libltfixture.so"));
  const Symbol* versioned_v1 = FindOne(file, "lt_lib_versioned_v1");
  ASSERT_NE(versioned_v1, nullptr);
  const Symbol* found = file.FindFunctionByAddress(versioned_v1->address + 1);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "lt_lib_versioned");  // global, ahead of the local alias
}

TEST(ElfFile, FindFunctionByAddressInLibc) {
  const ElfFile file = OpenOrDie(kLibc);
  const Symbol* malloc_symbol = nullptr;
  for (const Symbol* s : file.FindFunctions("malloc")) malloc_symbol = s;
  ASSERT_NE(malloc_symbol, nullptr);
  EXPECT_EQ(malloc_symbol->version, "GLIBC_2.2.5");
  const Symbol* found = file.FindFunctionByAddress(malloc_symbol->address + 4);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->address, malloc_symbol->address);
}

TEST(ElfFile, ClosestNames) {
  const ElfFile file = OpenOrDie(FixturePath("probe_shapes_pie"));
  auto names = file.ClosestNames("lt_push_rpb", 3);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "lt_push_rbp");
  EXPECT_LE(names.size(), 3u);

  names = file.ClosestNames("LT_NOP5_ENTRY", 1);
  EXPECT_THAT(names, ElementsAre("lt_nop5_entry"));

  // Substrings rank ahead of edit distance; ties by length then name.
  names = file.ClosestNames("entry", 10);
  ASSERT_GE(names.size(), 5u);
  EXPECT_EQ(names[0], "lt_mov_entry");
  EXPECT_EQ(names[1], "lt_nop1_entry");
  EXPECT_EQ(names[2], "lt_nop5_entry");

  EXPECT_TRUE(file.ClosestNames("completely_unrelated_thing", 5).empty());
  EXPECT_TRUE(file.ClosestNames("lt_push_rbp", 0).empty());
  EXPECT_EQ(file.ClosestNames("lt_push_rpb", 3), file.ClosestNames("lt_push_rpb", 3));
}

TEST(ElfFile, ClosestNamesUsesDemangledNames) {
  const ElfFile file = OpenOrDie(FixturePath("cpp_symbols_pie"));
  auto names = file.ClosestNames("ComputeFrame", 2);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "looptrace_fixture::Renderer::ComputeFrame");
  names = file.ClosestNames("looptrace_fixture::Overloadd", 5);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "looptrace_fixture::Overloaded");
  EXPECT_EQ(std::count(names.begin(), names.end(), "looptrace_fixture::Overloaded"), 1);
  EXPECT_EQ(file.FindFunctions(names[0]).size(), 2u);  // suggestions are findable
}

}  // namespace
}  // namespace looptrace::symbols
