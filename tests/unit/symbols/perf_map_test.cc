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
  map.Refresh();
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
  map.Refresh();
  EXPECT_EQ(*map.Lookup(0x3000), "third");
  EXPECT_EQ(*map.Lookup(0x1000), "first-recompiled");
  EXPECT_EQ(map.Lookup(0x4000), nullptr);
  EXPECT_EQ(map.malformed_lines(), 1u);
  {
    std::ofstream out(path, std::ios::trunc);
    out << "5000 10 fresh\n";
  }
  map.Refresh();
  EXPECT_EQ(map.Lookup(0x1000), nullptr);
  EXPECT_EQ(*map.Lookup(0x5000), "fresh");
  EXPECT_EQ(map.malformed_lines(), 0u);
}

TEST(PerfMap, AMissingFileNamesNothing) {
  PerfMap map("/nonexistent/perf-1.map");
  map.Refresh();
  EXPECT_EQ(map.Lookup(0x1000), nullptr);
  EXPECT_EQ(map.size(), 0u);
}

TEST(PerfMap, PathIsTheOneTheProcessSeesThroughItsRoot) {
  EXPECT_EQ(PerfMapPath(getpid()),
            "/proc/" + std::to_string(getpid()) + "/root/tmp/perf-" + std::to_string(getpid()) + ".map");
}

}  // namespace
}  // namespace looptrace::symbols
