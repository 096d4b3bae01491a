#include "loader/runtimes/jvm/thread_state.h"

#include <gtest/gtest.h>

namespace looptrace::loader::jvm {
namespace {

// java.lang.Thread's threadStatus values HotSpot writes (javaClasses.hpp, JavaThreadStatus).
constexpr int32_t kRunnable = 0x0005, kSleeping = 0x00e1, kInObjectWait = 0x0191, kInObjectWaitTimed = 0x01a1;
constexpr int32_t kParked = 0x0291, kParkedTimed = 0x02a1, kBlockedOnMonitorEnter = 0x0401, kTerminated = 0x0002;

TEST(JvmThreadState, ThreadStatusGivesJstacksWords) {
  EXPECT_EQ(StateFromThreadStatus(0), "NEW");
  EXPECT_EQ(StateFromThreadStatus(kRunnable), "RUNNABLE");
  EXPECT_EQ(StateFromThreadStatus(kSleeping), "TIMED_WAITING (sleeping)");
  EXPECT_EQ(StateFromThreadStatus(kInObjectWait), "WAITING (on object monitor)");
  EXPECT_EQ(StateFromThreadStatus(kInObjectWaitTimed), "TIMED_WAITING (on object monitor)");
  EXPECT_EQ(StateFromThreadStatus(kParked), "WAITING (parking)");
  EXPECT_EQ(StateFromThreadStatus(kParkedTimed), "TIMED_WAITING (parking)");
  EXPECT_EQ(StateFromThreadStatus(kBlockedOnMonitorEnter), "BLOCKED (on object monitor)");
  EXPECT_EQ(StateFromThreadStatus(kTerminated), "TERMINATED");
  EXPECT_EQ(StateFromThreadStatus(0x0100), "");  // not alive, yet not new: garbage says nothing
}

TEST(JvmThreadState, TheVmsOwnStateAndTheInnermostFrameTellTheRestWithoutThreadStatus) {
  const VmThreadStates s;  // JDK 17's values
  for (int64_t running : {s.in_java, s.in_vm, s.in_native, s.in_native + 1, s.in_vm + 1})
    EXPECT_EQ(StateFromVm(running, "java.lang.Thread.sleep", s), "RUNNABLE") << running;
  EXPECT_EQ(StateFromVm(s.new_thread, "", s), "NEW");
  EXPECT_EQ(StateFromVm(s.blocked, "java.lang.Thread.sleep", s), "TIMED_WAITING (sleeping)");
  EXPECT_EQ(StateFromVm(s.blocked, "java.lang.Thread.sleep0", s), "TIMED_WAITING (sleeping)");  // JDK 21+
  EXPECT_EQ(StateFromVm(s.blocked, "java.lang.Object.wait", s), "WAITING (on object monitor)");
  EXPECT_EQ(StateFromVm(s.blocked, "jdk.internal.misc.Unsafe.park", s), "WAITING (parking)");
  EXPECT_EQ(StateFromVm(s.blocked, "sun.misc.Unsafe.park", s), "WAITING (parking)");
  EXPECT_EQ(StateFromVm(s.blocked + 1, "EdtApp.contended", s), "BLOCKED (on object monitor)");
  EXPECT_EQ(StateFromVm(s.blocked, "", s), "BLOCKED (on object monitor)");
  EXPECT_EQ(StateFromVm(0, "", s), "");  // _thread_uninitialized: nothing said
  EXPECT_EQ(StateFromVm(99, "", s), "");
}

}  // namespace
}  // namespace looptrace::loader::jvm
