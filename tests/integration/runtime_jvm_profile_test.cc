// A JVM started with no flags has no messages (no method probes to bound them), yet its
// default report must say where its Java threads spend their time: `record -p` samples the
// VM's Java threads and, with no message to hang the samples on, the report shows each
// thread's top methods and sampled tree. The program (tests/runtimes/java/JvmProfile.java)
// burns its main thread's CPU in two methods in a ratio it measures itself.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

class JvmProfileTest : public JvmTest {
 protected:
  JvmProfileTest() : JvmTest({"JvmProfile"}) {}
};

// The "self total method" lines of the text report's section of each thread, by thread name.
using Shares = std::map<std::string, std::pair<double, double>>;
std::map<std::string, Shares> MethodShares(const std::string& text) {
  std::map<std::string, Shares> out;
  std::istringstream in(text);
  static const std::regex kThread(R"re(^  thread \d+ "([^"]*)": )re");
  static const std::regex kMethod(R"re(^    +([0-9.]+)% +([0-9.]+)%  (\S+))re");
  Shares* current = nullptr;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kThread)) {
      current = &out[m[1]];
    } else if (current && std::regex_search(line, m, kMethod)) {
      current->emplace(m[3], std::pair{std::stod(m[1]), std::stod(m[2])});
    }
  }
  return out;
}

// The share of the first method whose name starts with `prefix` (nothing when none).
std::optional<std::pair<double, double>> ShareOf(const Shares& shares, std::string_view prefix) {
  for (const auto& [method, share] : shares)
    if (method.starts_with(prefix)) return share;
  return std::nullopt;
}

TEST_F(JvmProfileTest, DefaultReportOfAJvmWithoutFlagsShowsWhereItsJavaThreadsRan) {
  if (IsSkipped()) return;
  const std::string ready = dir_ / "ready", truth_file = dir_ / "truth.json";
  Process target(JavaCommand(Jdk17(), {}, "JvmProfile", {ready, truth_file}));
  WaitForFile(ready, 60000);
  ASSERT_TRUE(std::filesystem::exists(ready)) << "JvmProfile did not get ready";
  auto r = RunCommand({Looptrace(), "record", "-p", std::to_string(target.pid()), "-d", "4", "--save",
                       dir_ / "rec.jsonl", "-o", dir_ / "out.txt"},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream truth_in(truth_file);
  const json truth = json::parse(truth_in);
  std::ifstream text_in(dir_ / "out.txt");
  const std::string text((std::istreambuf_iterator<char>(text_in)), std::istreambuf_iterator<char>());

  // No messages, but the Java main thread's profile (the thread whose section names heavy()),
  // its two methods in the program's ratio.
  EXPECT_NE(text.find("where the threads ran"), std::string::npos) << text;
  const auto by_thread = MethodShares(text);
  std::string main_thread;
  for (const auto& [name, shares] : by_thread)
    if (ShareOf(shares, "JvmProfile.heavy")) main_thread = name;
  ASSERT_FALSE(main_thread.empty()) << text;
  // Named by its java.lang.Thread (the kernel's name is the launcher's, "java").
  EXPECT_EQ(main_thread, "main") << text;
  const Shares& shares = by_thread.at(main_thread);
  const auto heavy = ShareOf(shares, "JvmProfile.heavy"), light = ShareOf(shares, "JvmProfile.light");
  ASSERT_TRUE(heavy && light) << text;
  const double heavy_truth = 100 * truth["heavy"].get<double>(), light_truth = 100 * truth["light"].get<double>();
  EXPECT_NEAR(heavy->second, heavy_truth, 10) << text;
  EXPECT_NEAR(light->second, light_truth, 10) << text;
  // The burning is in the methods themselves: self is most of total.
  EXPECT_GE(heavy->first, heavy->second - 10) << text;
  EXPECT_NE(text.find("[thread] thread"), std::string::npos) << "no sampled tree\n" << text;

  // The same recording, replayed: JSON has the thread's profile, folded output its stacks.
  auto as_json = RunCommand({Looptrace(), "report", dir_ / "rec.jsonl", "-f", "json"}, 60);
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  int profiles = 0;
  bool heavy_first = false;
  std::istringstream lines(as_json.out);
  for (std::string line; std::getline(lines, line);) {
    const json record = json::parse(line);
    if (record["type"] != "thread_profile") continue;
    ++profiles;
    EXPECT_FALSE(record.value("sampled_tree", json::array()).empty());
    if (!record["top"].empty() && record["top"][0]["name"].get<std::string>().starts_with("JvmProfile.heavy"))
      heavy_first = true;
  }
  EXPECT_GE(profiles, 1);
  EXPECT_TRUE(heavy_first) << as_json.out.substr(0, 4000);
  auto folded = RunCommand({Looptrace(), "report", dir_ / "rec.jsonl", "-f", "folded"}, 60);
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_NE(folded.out.find("JvmProfile.heavy"), std::string::npos) << folded.out.substr(0, 4000);
  std::cout << fmt::format("{}: heavy {:.1f}% (truth {:.1f}%), light {:.1f}% (truth {:.1f}%)\n", main_thread,
                           heavy->second, heavy_truth, light->second, light_truth);
}

}  // namespace
}  // namespace looptrace::testing
