// ThreadMap: std::map by thread id with the last entry remembered; a copy must not hand out
// the original's entries.
#include "looptrace/tracers/thread_map.h"

#include <gtest/gtest.h>

#include <vector>

namespace looptrace {
namespace {

TEST(ThreadMap, RemembersTheLastThreadAndIteratesInThreadOrder) {
  ThreadMap<int> m;
  m[30] = 3;
  m[10] = 1;
  m[10] += 1;  // the remembered entry
  m[20] = 2;
  EXPECT_EQ(*m.Find(10), 2);
  EXPECT_EQ(m.Find(40), nullptr);
  std::vector<uint32_t> order;
  for (const auto& [tid, value] : m) order.push_back(tid);
  EXPECT_EQ(order, (std::vector<uint32_t>{10, 20, 30}));
}

TEST(ThreadMap, ACopyUpdatesItsOwnEntriesNotTheOriginals) {
  ThreadMap<int> original;
  original[7] = 1;  // remembered: 7
  ThreadMap<int> copy = original;
  copy[7] = 5;
  EXPECT_EQ(*original.Find(7), 1);
  EXPECT_EQ(*copy.Find(7), 5);
  ThreadMap<int> assigned;
  assigned[7] = 9;  // remembered in `assigned` before the assignment replaces its map
  assigned = original;
  assigned[7] += 1;
  EXPECT_EQ(*assigned.Find(7), 2);
  EXPECT_EQ(*original.Find(7), 1);
}

TEST(ThreadMap, AnErasedThreadIsForgotten) {
  ThreadMap<int> m;
  m[3] = 1;
  m.Erase(3);
  EXPECT_EQ(m.Find(3), nullptr);
  EXPECT_EQ(m[3], 0);  // made anew
  EXPECT_EQ(m.size(), 1u);
  m.Clear();
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.Find(3), nullptr);
}

}  // namespace
}  // namespace looptrace
