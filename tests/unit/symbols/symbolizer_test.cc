#include "looptrace/symbols/symbolizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "addr2line_util.h"
#include "looptrace/symbols/debug_file.h"
#include "looptrace/symbols/process_symbolizer.h"
#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using ::testing::HasSubstr;
using test_util::AsFrames;
using test_util::Describe;
using test_util::ExpectedFrame;
using test_util::FixturePath;
using test_util::ReadFile;
using test_util::RunCommand;
using test_util::TempDir;
using test_util::WriteFile;

constexpr size_t kAddressesPerFixture = 1000;
constexpr uint64_t kSeed = 20240607;

std::string DebugVariant(const std::string& base, const std::string& relative) {
  return FixturePath("debug/" + base + "/" + relative);
}

struct Addr2lineCase {
  std::string name;       // test name
  std::string file;       // what the Symbolizer reads
  std::string reference;  // what eu-addr2line reads (same addresses and DWARF)
  std::string debug_root; // debug directory for the build-id tree ("" = none)
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
  cases.push_back({"symtest_o2_gz_pie", FixturePath("symtest_o2_gz_pie"),
                   FixturePath("symtest_o2_gz_pie"), ""});
  for (const char* name : {"symtest_cxx_o2_pie", "symtest_cxx_o2_nofp_nopie", "symtest_cxx_o0_pie"}) {
    cases.push_back({name, FixturePath(name), FixturePath(name), ""});
  }
  for (const char* base : {"symtest_o2_nofp_pie", "symtest_o0_fp_nopie", "symtest_cxx_o2_pie"}) {
    const std::string b = base;
    cases.push_back({b + "_debuglink", DebugVariant(b, "debuglink/" + b), FixturePath(b), ""});
    cases.push_back({b + "_dotdebug", DebugVariant(b, "dotdebug/" + b), FixturePath(b), ""});
    cases.push_back({b + "_buildid", DebugVariant(b, "buildid/" + b), FixturePath(b),
                     DebugVariant(b, "root")});
    cases.push_back({b + "_zdebug", DebugVariant(b, b + "_zdebug"), DebugVariant(b, b + "_zdebug"), ""});
    cases.push_back({b + "_minidebuginfo", DebugVariant(b, b + "_mini"), DebugVariant(b, b + "_mini"),
                     "", /*expect_lines=*/false});
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

  const std::vector<uint64_t> addresses =
      test_util::RandomTextAddresses(c.reference, kAddressesPerFixture, kSeed);
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
      std::snprintf(address, sizeof(address), "0x%llx",
                    static_cast<unsigned long long>(addresses[i]));
      failures.push_back(std::string(address) + " (" +
                         std::string(DegradationName(result->degradation)) + ")\n  expected:" +
                         Describe(expected[i]) + "\n  actual:" + Describe(actual));
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

}  // namespace
}  // namespace looptrace::symbols
