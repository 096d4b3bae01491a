// Perf maps (/tmp/perf-PID.map): parsing, malformed lines, lookups, growth and rewrites.
#include "looptrace/symbols/perf_map.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

TEST(PerfMap, ParsesLinesAndCountsMalformedOnes) {
  std::vector<PerfMapEntry> entries;
  size_t bad = 0;
  ParsePerfMap(
      "7f0000001000 40 LazyCompile:*foo /app/index.js:3\n"
      "0x7f0000002000 0x10 Interpreter\n"
      "\n"
      "zz 10 not-hex\n"
      "7f0000003000\n"
      "7f0000004000 0 zero-size\n"
      "7f0000005000 10\n"
      "ffffffffffffffff 10 wraps\n"
      "7f0000006000 8 last-no-newline",
      &entries, &bad);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].start, 0x7f0000001000u);
  EXPECT_EQ(entries[0].size, 0x40u);
  EXPECT_EQ(entries[0].name, "LazyCompile:*foo /app/index.js:3");
  EXPECT_EQ(entries[1].start, 0x7f0000002000u);
  EXPECT_EQ(entries[1].name, "Interpreter");
  EXPECT_EQ(entries[2].name, "last-no-newline");
  EXPECT_EQ(bad, 5u);
}

TEST(PerfMap, LooksUpReadsWhatWasAppendedAndStartsOverWhenRewritten) {
  test_util::TempDir dir;
  const std::string path = dir.path() + "/perf-1.map";
  {
    std::ofstream out(path);
    out << "1000 100 first\n2000 10 second\n";
  }
  PerfMap map(path);
  map.Refresh(1);
  ASSERT_NE(map.Lookup(0x1000), nullptr);
  EXPECT_EQ(*map.Lookup(0x10ff), "first");
  EXPECT_EQ(map.Lookup(0x1100), nullptr);
  EXPECT_EQ(*map.Lookup(0x2005), "second");
  EXPECT_EQ(map.Lookup(0xfff), nullptr);
  {
    // A JIT appending: a recompiled method at the same start replaces the old one; a line
    // still being written waits.
    std::ofstream out(path, std::ios::app);
    out << "3000 10 third\nbroken line\n1000 100 first-recompiled\n4000 10 partial";
  }
  map.Refresh(2);
  EXPECT_EQ(*map.Lookup(0x3000), "third");
  EXPECT_EQ(*map.Lookup(0x1000), "first-recompiled");
  EXPECT_EQ(map.Lookup(0x4000), nullptr);
  EXPECT_EQ(map.malformed_lines(), 1u);
  {
    std::ofstream out(path, std::ios::trunc);
    out << "5000 10 fresh\n";
  }
  map.Refresh(3);
  EXPECT_EQ(map.Lookup(0x1000), nullptr);
  EXPECT_EQ(*map.Lookup(0x5000), "fresh");
  EXPECT_EQ(map.malformed_lines(), 0u);
}

// Node's --perf-basic-prof appends a line for each method it compiles, in memory an older
// method may have held: the entries overlap with other starts and sizes. The newest line
// covering an address names it, unless it was written after the sample.
TEST(PerfMap, TheNewestEntryCoveringAnAddressAtTheSampleTimeWins) {
  test_util::TempDir dir;
  const std::string path = dir.path() + "/perf-1.map";
  {
    std::ofstream out(path);
    out << "1040 20 node:internal/crypto/hkdf\n"
           "1100 10 dgram\n";
  }
  PerfMap map(path);
  map.Refresh(100);
  EXPECT_EQ(*map.Lookup(0x1050), "node:internal/crypto/hkdf");
  {
    // Both old methods freed; the handler compiled over them.
    std::ofstream out(path, std::ios::app);
    out << "1000 200 LazyCompile:*handler /srv/app.js:12\n";
  }
  map.Refresh(200);
  EXPECT_EQ(*map.Lookup(0x1050), "LazyCompile:*handler /srv/app.js:12");
  EXPECT_EQ(*map.Lookup(0x1105), "LazyCompile:*handler /srv/app.js:12");
  EXPECT_EQ(*map.Lookup(0x1080), "LazyCompile:*handler /srv/app.js:12");  // no older entry there
  EXPECT_EQ(*map.Lookup(0x1050, 250), "LazyCompile:*handler /srv/app.js:12");
  EXPECT_EQ(*map.Lookup(0x1050, 150), "LazyCompile:*handler /srv/app.js:12");  // written before 200, maybe before 150
  // Sampled before the look that found the handler's line was even due: the old code ran.
  EXPECT_EQ(*map.Lookup(0x1050, 90), "node:internal/crypto/hkdf");
  EXPECT_EQ(*map.Lookup(0x1105, 90), "dgram");
  // Only the newer line covers it: the best name there is.
  EXPECT_EQ(*map.Lookup(0x1080, 90), "LazyCompile:*handler /srv/app.js:12");
  EXPECT_EQ(map.Lookup(0x1200), nullptr);
  EXPECT_EQ(map.Lookup(0xfff), nullptr);
  {
    // Recompiled at the same start: the later line wins.
    std::ofstream out(path, std::ios::app);
    out << "1000 200 LazyCompile:*handler /srv/app.js:12 (reoptimized)\n";
  }
  map.Refresh(300);
  EXPECT_EQ(*map.Lookup(0x1050), "LazyCompile:*handler /srv/app.js:12 (reoptimized)");
  EXPECT_EQ(*map.Lookup(0x1050, 150), "LazyCompile:*handler /srv/app.js:12");
  EXPECT_EQ(map.checked_at_ns(), 300u);
  {
    // Recompiled there over and over: the last 4 lines at one start are kept.
    std::ofstream out(path, std::ios::app);
    for (int i = 0; i < 6; ++i) out << "1000 200 version-" << i << "\n";
  }
  map.Refresh(400);
  EXPECT_EQ(*map.Lookup(0x1050), "version-5");
  EXPECT_EQ(map.size(), 2u + 4u);  // hkdf and dgram, and 4 lines at 0x1000
}

TEST(PerfMap, AMissingFileNamesNothing) {
  PerfMap map("/nonexistent/perf-1.map");
  map.Refresh(1);
  EXPECT_EQ(map.Lookup(0x1000), nullptr);
  EXPECT_EQ(map.size(), 0u);
}

TEST(PerfMap, PathIsTheOneTheProcessSeesThroughItsRoot) {
  EXPECT_EQ(PerfMapPath(getpid()),
            "/proc/" + std::to_string(getpid()) + "/root/tmp/perf-" + std::to_string(getpid()) + ".map");
}

}  // namespace
}  // namespace looptrace::symbols
