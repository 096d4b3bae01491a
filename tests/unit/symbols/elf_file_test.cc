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
using test_util::ReadFile;
using test_util::RunCommand;
using test_util::SplitLines;
using test_util::SplitWords;
using test_util::TempDir;
using test_util::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kLibc[] = "/lib/x86_64-linux-gnu/libc.so.6";

ElfFile OpenOrDie(const std::string& path) {
  auto file = ElfFile::Open(path);
  if (!file) {
    ADD_FAILURE() << file.error().message;
    std::abort();
  }
  return std::move(*file);
}

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
