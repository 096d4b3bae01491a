#include "looptrace/tracers/roles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace looptrace {
namespace {

// Role numbers are the BPF ABI and saved recordings keep them: this list repeats them on
// purpose, so that renumbering a role in LT_ROLES fails here (a new role needs no line).
TEST(Roles, NumbersStayWhatRecordingsKeep) {
  const std::map<std::string_view, int> numbers = {{"dispatch.begin", 1},
                                                   {"dispatch.end", 2},
                                                   {"frame.begin", 3},
                                                   {"frame.end", 4},
                                                   {"phase.begin", 5},
                                                   {"phase.end", 6},
                                                   {"vsync", 7},
                                                   {"method.enter", 8},
                                                   {"method.exit", 9},
                                                   {"idle.begin", 10},
                                                   {"idle.end", 11},
                                                   {"input.receive", 12},
                                                   {"input.finish", 13},
                                                   {"app.create.begin", 14},
                                                   {"app.create.end", 15},
                                                   {"activity.launch", 16},
                                                   {"activity.focus", 17},
                                                   {"fully.drawn", 18},
                                                   {"poll.begin", 19},
                                                   {"poll.end", 20},
                                                   {"barrier.post", 21},
                                                   {"barrier.remove", 22},
                                                   {"message.enqueue", 23},
                                                   {"gc.begin", 24},
                                                   {"gc.end", 25},
                                                   {"lock.wait.begin", 26},
                                                   {"lock.wait.end", 27},
                                                   {"lock.release", 28}};
  for (const auto& [name, number] : numbers) {
    SCOPED_TRACE(name);
    auto role = RoleFromName(name);
    ASSERT_TRUE(role);
    EXPECT_EQ(static_cast<int>(*role), number);
  }
  EXPECT_EQ(LT_ROLE_DISPATCH_BEGIN, 1);
  EXPECT_EQ(LT_ROLE_LOCK_RELEASE, 28);
  EXPECT_EQ(LT_ROLE_MAX, 29);
}

TEST(Roles, EveryRoleIsFoundByItsNameAndNumber) {
  std::set<std::string_view> names;
  for (const RoleInfo& info : AllRoles()) {
    SCOPED_TRACE(info.name);
    EXPECT_TRUE(names.insert(info.name).second);
    EXPECT_EQ(InfoOf(info.role).name, info.name);
    EXPECT_EQ(RoleName(info.role), info.name);
    EXPECT_EQ(RoleFromName(info.name), info.role);
  }
  EXPECT_EQ(AllRoleNames().size(), AllRoles().size());
  EXPECT_FALSE(RoleFromName("dispatch"));
  EXPECT_EQ(RoleName(static_cast<Role>(0)), "unknown");
  EXPECT_EQ(RoleName(static_cast<Role>(LT_ROLE_MAX)), "unknown");
}

// The span tracker and the profile's pair check rely on this: every span kind has one begin
// role and one end role, partners of each other, naming their spans by the same argument,
// which both may bind.
TEST(Roles, BeginsAndEndsPairWithinTheirSpanKind) {
  std::map<SpanKind, int> begins, ends;
  for (const RoleInfo& info : AllRoles()) {
    SCOPED_TRACE(info.name);
    const RoleInfo& partner = InfoOf(info.partner);
    EXPECT_EQ(partner.partner, info.role);
    EXPECT_EQ(partner.span, info.span);
    switch (info.edge) {
      case RoleEdge::kBegin:
      case RoleEdge::kEnd:
        ++(info.edge == RoleEdge::kBegin ? begins : ends)[info.span];
        EXPECT_EQ(partner.edge, info.edge == RoleEdge::kBegin ? RoleEdge::kEnd : RoleEdge::kBegin);
        EXPECT_EQ(partner.key, info.key);
        break;
      case RoleEdge::kInstant:
        EXPECT_EQ(info.partner, info.role);
        EXPECT_EQ(info.key, "");
        break;
      case RoleEdge::kBeat:
        EXPECT_EQ(partner.edge, RoleEdge::kBeat);
        EXPECT_NE(info.partner, info.role);
        break;
    }
    if (!info.key.empty()) {
      auto known = KnownArgNames(info.role);
      EXPECT_NE(std::find(known.begin(), known.end(), info.key), known.end()) << info.key;
    }
    if (info.edge == RoleEdge::kBegin && ScopeOf(info.span) == TrackScope::kKey) {
      EXPECT_NE(info.key, "");
    }
  }
  for (int k = 0; k < kSpanKindCount; ++k) {
    const auto kind = static_cast<SpanKind>(k);
    SCOPED_TRACE(SpanKindName(kind));
    EXPECT_EQ(begins[kind], 1);
    EXPECT_EQ(ends[kind], 1);
  }
}

// Probes of these roles watch every thread of the target (LT_PROBE_ALL_THREADS): other
// threads post to the looper, run the GC and release monitors the loop thread waits for.
TEST(Roles, OnlyRolesOtherThreadsFireForTheLoopWatchEveryThread) {
  std::set<std::string_view> every_thread;
  for (const RoleInfo& info : AllRoles())
    if (info.all_threads) every_thread.insert(info.name);
  EXPECT_EQ(every_thread, (std::set<std::string_view>{"message.enqueue", "gc.begin", "gc.end", "lock.release"}));
}

TEST(Roles, SpanKindsKeepTheirNamesAndTracks) {
  EXPECT_EQ(kSpanKindCount, 11);
  EXPECT_EQ(SpanKindName(SpanKind::kMessage), "message");
  EXPECT_EQ(SpanKindName(SpanKind::kAppCreate), "app_create");
  EXPECT_EQ(SpanKindName(SpanKind::kLockWait), "lock_wait");
  EXPECT_EQ(ScopeOf(SpanKind::kMessage), TrackScope::kThread);
  EXPECT_EQ(ScopeOf(SpanKind::kInput), TrackScope::kKey);
  EXPECT_EQ(ScopeOf(SpanKind::kBarrier), TrackScope::kKey);
  EXPECT_EQ(ScopeOf(SpanKind::kLaunch), TrackScope::kProcess);
}

}  // namespace
}  // namespace looptrace
