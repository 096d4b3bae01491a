// The sysfs cpu lists the per-CPU cpu-clock sampler reads (/sys/devices/system/cpu/online).
#include "loader/bpf/perf_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace looptrace::loader {
namespace {

TEST(CpuListTest, RangesAndSingleCpus) {
  auto cpus = ParseCpuList("0-3,6,8-9\n");
  ASSERT_TRUE(cpus) << cpus.error().message;
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  cpus = ParseCpuList("0");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(*cpus, std::vector<int>{0});
  cpus = ParseCpuList("2-2,5");
  ASSERT_TRUE(cpus);
  EXPECT_EQ(*cpus, (std::vector<int>{2, 5}));
}

TEST(CpuListTest, MalformedListsAreErrors) {
  for (const char* bad : {"", "\n", "a", "1-", "-1", "3-1", "0,,1", "0-1,1", "2,1", "0 - 1", "1x"})
    EXPECT_FALSE(ParseCpuList(bad)) << '"' << bad << '"';
}

TEST(CpuListTest, TheOnlineCpusAreThisMachines) {
  auto cpus = OnlineCpus();
  ASSERT_TRUE(cpus) << cpus.error().message;
  EXPECT_EQ(static_cast<long>(cpus->size()), sysconf(_SC_NPROCESSORS_ONLN));
}

}  // namespace
}  // namespace looptrace::loader
