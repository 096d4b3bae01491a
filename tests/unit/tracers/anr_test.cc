// AnrTracer: off-CPU classification, deadlock cycles, and a stall snapshot joined with its
// message's end, off-CPU intervals and open method slice (through the pipeline).
#include "looptrace/tracers/anr.h"

#include <gtest/gtest.h>

#include "event_script.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::U;

constexpr uint32_t kMain = 100;
constexpr uint64_t kMs = 1'000'000;

TEST(AnrTracer, ClassifiesOffCpuByStateAndKernelStack) {
  EXPECT_EQ(ClassifyOffCpu(0, {"schedule"}), "preempted");
  EXPECT_EQ(ClassifyOffCpu(1, {"__schedule", "futex_wait_queue", "futex_wait"}), "lock");
  EXPECT_EQ(ClassifyOffCpu(2, {"io_schedule", "folio_wait_bit"}), "io");
  EXPECT_EQ(ClassifyOffCpu(1, {"do_nanosleep", "hrtimer_nanosleep"}), "sleep");
  EXPECT_EQ(ClassifyOffCpu(1, {"schedule_hrtimeout_range", "do_epoll_wait"}), "poll");
  EXPECT_EQ(ClassifyOffCpu(2, {"schedule"}), "io");  // D without a known frame
  EXPECT_EQ(ClassifyOffCpu(1, {"schedule"}), "other");
}

// A wait early in a message took no kernel stack, only its system call (LT_STACK_IN_SYSCALL):
// the reason its kernel stack would have given.
TEST(AnrTracer, AWaitWithoutAKernelStackIsClassifiedByItsSystemCall) {
  EXPECT_EQ(ClassifyOffCpu(1, {}, 202), "lock");                                   // futex
  EXPECT_EQ(ClassifyOffCpu(1, {}, 230), "sleep");                                  // clock_nanosleep
  EXPECT_EQ(ClassifyOffCpu(1, {}, 35), "sleep");                                   // nanosleep
  EXPECT_EQ(ClassifyOffCpu(1, {}, 232), "poll");                                   // epoll_wait
  EXPECT_EQ(ClassifyOffCpu(1, {}, 0), "poll");                                     // read of a pipe or a socket
  EXPECT_EQ(ClassifyOffCpu(kTaskUninterruptible, {}, 0), "io");                    // read of a file's blocks
  EXPECT_EQ(ClassifyOffCpu(kTaskUninterruptible, {}, 74), "io");                   // fsync
  EXPECT_EQ(ClassifyOffCpu(kTaskUninterruptible, {}, 1), "io");                    // write, throttled
  EXPECT_EQ(ClassifyOffCpu(1, {}, 61), "other");                                   // wait4
  EXPECT_EQ(ClassifyOffCpu(kTaskUninterruptible, {}, kWaitOutsideSyscall), "io");  // a page fault
  EXPECT_EQ(ClassifyOffCpu(0, {}, 202), "preempted");
  EXPECT_EQ(ClassifyOffCpu(1, {"do_nanosleep"}, 202), "sleep");  // a kernel stack says more
  EXPECT_EQ(ClassifyOffCpu(1, {}), "other");                     // nothing known
  // Thread.sleep on a futex, told by the user stack as with a kernel stack.
  EXPECT_EQ(ClassifyOffCpu(1, {}, {"JVM_Sleep", "java.lang.Thread.sleep(J)V"}, 202), "sleep");
}

// HotSpot's Thread.sleep waits on a futex: its user stack says it sleeps; a monitor does not.
TEST(AnrTracer, AFutexWaitUnderThreadSleepIsASleep) {
  const std::vector<std::string> futex = {"__schedule", "futex_wait_queue", "futex_wait"};
  EXPECT_EQ(ClassifyOffCpu(1, futex, {"__futex_abstimed_wait_common", "JVM_Sleep", "java.lang.Thread.sleep(J)V"}),
            "sleep");
  EXPECT_EQ(ClassifyOffCpu(1, futex, {"java.lang.Thread.sleep0(J)V", "EdtTree.pause(I)V"}), "sleep");
  EXPECT_EQ(ClassifyOffCpu(1, futex, {"ObjectMonitor::enter", "App.locked()V"}), "lock");
  EXPECT_EQ(ClassifyOffCpu(1, {"do_epoll_wait"}, {"java.lang.Thread.sleep(J)V"}), "poll");
}

ThreadSnapshot Waiting(uint32_t tid, uint32_t owner) {
  ThreadSnapshot t;
  t.tid = tid;
  t.state = 'S';
  t.futex_address = 0x1000 + tid;
  t.futex_owner_tid = owner;
  return t;
}

TEST(AnrTracer, FindsTheDeadlockCycleThroughTheStalledThread) {
  // 1 -> 2 -> 3 -> 1, and 4 -> 2 (waits, but is not in the cycle).
  std::vector<ThreadSnapshot> threads = {Waiting(1, 2), Waiting(2, 3), Waiting(3, 1), Waiting(4, 2)};
  EXPECT_EQ(FindDeadlock(threads, 1), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_TRUE(FindDeadlock(threads, 4).empty());  // 4 reaches a cycle it is not part of
  std::vector<ThreadSnapshot> chain = {Waiting(1, 2), Waiting(2, 0)};
  EXPECT_TRUE(FindDeadlock(chain, 1).empty());  // 2's lock owner unknown: no cycle
}

TEST(AnrTracer, SnapshotJoinsTheMessagesEndOffCpuTimeAndOpenSlice) {
  testing::EventScript script;
  const uint64_t begin = 1'000 * kMs;
  script.Add(Probe(Role::kDispatchBegin, begin, {U("id", 7), testing::S("name", "slow.one")}, kMain));
  // Off the CPU waiting for a lock for 5.5 s, woken by thread 101.
  ThreadSwitch out;
  out.ts_ns = begin + 100 * kMs;
  out.tid = kMain;
  out.off_cpu = true;
  out.state = 1;
  out.kernel_stack = {"futex_wait"};
  script.Add(out);
  // The watchdog's ANR snapshot at 5 s with the open method slice.
  StallSnapshot snapshot;
  snapshot.anr = true;
  snapshot.ts_ns = begin + 5'000 * kMs;
  snapshot.tid = kMain;
  snapshot.message_begin_ns = begin;
  ThreadSnapshot main = Waiting(kMain, 101);
  snapshot.threads = {main};
  script.Add(snapshot);
  MethodBeats open;
  open.span = "open";
  open.tid = kMain;
  open.begin_ns = begin;
  open.end_ns = begin + 5'000 * kMs;
  open.beats = {{begin + 1 * kMs, 42, true}};
  open.names = {{42, "Lock.acquire"}};
  script.Add(open);  // after its snapshot, as the watchdog sends it
  Wakeup wakeup;
  wakeup.ts_ns = begin + 5'600 * kMs;
  wakeup.tid = kMain;
  wakeup.waker_tid = 101;
  wakeup.waker_comm = "holder";
  script.Add(wakeup);
  ThreadSwitch in;
  in.ts_ns = begin + 5'600 * kMs;
  in.tid = kMain;
  script.Add(in);
  script.Add(Probe(Role::kDispatchEnd, begin + 6'000 * kMs, {U("id", 7)}, kMain));
  AnalysisOptions options;
  Report report = script.Run(options, begin + 7'000 * kMs);
  ASSERT_EQ(report.stalls.size(), 1u);
  const StallReport& r = report.stalls[0];
  EXPECT_TRUE(r.anr);
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.message.name, "slow.one");
  EXPECT_EQ(r.message.cost_ns(), 6'000 * kMs);
  EXPECT_EQ(r.stuck_reason, "lock wait");
  ASSERT_EQ(r.off_cpu.size(), 1u);
  EXPECT_EQ(r.off_cpu[0].reason, "lock");
  EXPECT_EQ(r.off_cpu[0].waker_tid, 101u);
  EXPECT_EQ(r.off_cpu[0].end_ns - r.off_cpu[0].begin_ns, 5'500 * kMs);
  EXPECT_EQ(r.on_cpu_ns, 500 * kMs);
  ASSERT_EQ(r.tree.size(), 2u);  // the message and the method open at the snapshot
  EXPECT_EQ(r.tree[1].name, "Lock.acquire");
  EXPECT_TRUE(r.tree[1].node.unfinished);
  EXPECT_EQ(r.stack_key, "42|");
}

// The same stall, its wait begun early in the message: no kernel stack, the futex call it
// waits in gives the reason.
TEST(AnrTracer, AnEarlyWaitsReasonComesFromItsSystemCall) {
  testing::EventScript script;
  const uint64_t begin = 1'000 * kMs;
  script.Add(Probe(Role::kDispatchBegin, begin, {U("id", 7), testing::S("name", "slow.one")}, kMain));
  ThreadSwitch out;
  out.ts_ns = begin + 1 * kMs;
  out.tid = kMain;
  out.off_cpu = true;
  out.state = 1;
  out.wait_syscall = 202;
  script.Add(out);
  ThreadSwitch in;
  in.ts_ns = begin + 900 * kMs;
  in.tid = kMain;
  script.Add(in);
  StallSnapshot snapshot;
  snapshot.ts_ns = begin + 800 * kMs;
  snapshot.tid = kMain;
  snapshot.message_begin_ns = begin;
  snapshot.threads = {Waiting(kMain, 101)};
  script.Add(snapshot);
  script.Add(Probe(Role::kDispatchEnd, begin + 1'000 * kMs, {U("id", 7)}, kMain));
  Report report = script.Run(AnalysisOptions{}, begin + 3'000 * kMs);
  ASSERT_EQ(report.stalls.size(), 1u);
  ASSERT_EQ(report.stalls[0].off_cpu.size(), 1u);
  EXPECT_EQ(report.stalls[0].off_cpu[0].reason, "lock");
  EXPECT_TRUE(report.stalls[0].off_cpu[0].kernel_stack.empty());
}

// A message whose dispatch.end was lost looks stalled to the watchdog; the next message
// (begun at the same stack depth) closes it as lost, and its snapshot ends there instead of
// being held, with its open slice, for the rest of the session.
TEST(AnrTracer, TheSnapshotOfAMessageWhoseEndWasLostEndsWhenTheNextBegins) {
  testing::EventScript script;
  const uint64_t begin = 1'000 * kMs;
  ProbeEvent first = Probe(Role::kDispatchBegin, begin, {U("id", 7)}, kMain);
  first.sp = 0x7ffe1000;
  script.Add(first);
  StallSnapshot snapshot;
  snapshot.ts_ns = begin + 500 * kMs;
  snapshot.tid = kMain;
  snapshot.message_begin_ns = begin;
  snapshot.threads = {Waiting(kMain, 101)};
  script.Add(snapshot);
  ProbeEvent next = Probe(Role::kDispatchBegin, begin + 2'000 * kMs, {U("id", 8)}, kMain);
  next.sp = 0x7ffe1000;
  script.Add(next);
  script.Add(Probe(Role::kDispatchEnd, begin + 2'001 * kMs, {U("id", 8)}, kMain));
  AnalysisOptions options;
  Report report = script.Run(options, begin + 9'000 * kMs);
  EXPECT_EQ(report.stats.Get(StatId::message_end_lost), 1u);
  ASSERT_EQ(report.stalls.size(), 1u);
  EXPECT_FALSE(report.stalls[0].finished);
  EXPECT_EQ(report.stalls[0].message.end_ns, begin + 2'000 * kMs);
  ASSERT_EQ(report.messages.messages.size(), 1u);  // the lost one is counted, not listed
  EXPECT_EQ(report.messages.messages[0].msg_id, 8u);
}

// A thread's last switch-out as it exits (TASK_DEAD) opens no off-CPU interval: a later
// thread given the same number and stalled while running is not reported off the CPU since
// the first one left.
TEST(AnrTracer, AnExitedThreadIsNotLeftOffTheCpu) {
  testing::EventScript script;
  ThreadSwitch exit;
  exit.ts_ns = 100 * kMs;
  exit.tid = kMain;
  exit.off_cpu = true;
  exit.state = 0x80;  // TASK_DEAD
  exit.kernel_stack = {"do_task_dead", "do_exit"};
  script.Add(exit);
  const uint64_t begin = 1'000 * kMs;
  script.Add(Probe(Role::kDispatchBegin, begin, {U("id", 7)}, kMain));
  StallSnapshot snapshot;
  snapshot.ts_ns = begin + 2'500 * kMs;
  snapshot.tid = kMain;
  snapshot.message_begin_ns = begin;
  ThreadSnapshot running;
  running.tid = kMain;
  running.state = 'R';
  snapshot.threads = {running};
  script.Add(snapshot);
  script.Add(Probe(Role::kDispatchEnd, begin + 3'000 * kMs, {U("id", 7)}, kMain));
  AnalysisOptions options;
  Report report = script.Run(options, begin + 4'000 * kMs);
  ASSERT_EQ(report.stalls.size(), 1u);
  const StallReport& r = report.stalls[0];
  EXPECT_TRUE(r.off_cpu.empty());
  EXPECT_TRUE(r.off_cpu_by_reason.empty());
  EXPECT_EQ(r.on_cpu_ns, 3'000 * kMs);
  EXPECT_EQ(r.stuck_reason, "running");
}

TEST(AnrTracer, AnUnnamedLoopIterationIsNamedAfterTheHandlerStuckInIt) {
  // android::Looper: a poll-bounded iteration (unnamed) holds a native handler that hangs.
  testing::EventScript script;
  const uint64_t begin = 1'000 * kMs;
  SessionStart start;
  start.pid = kMain;
  start.message_definition = "poll-bounded";
  for (Role r : {Role::kPollBegin, Role::kPollEnd, Role::kDispatchBegin, Role::kDispatchEnd})
    start.probes.push_back({0, r, "uprobe", "/x", "p", 0});
  script.Add(Probe(Role::kPollBegin, begin - 10 * kMs, {}, kMain));
  script.Add(Probe(Role::kPollEnd, begin, {}, kMain));
  script.Add(Probe(Role::kDispatchBegin, begin + 1 * kMs, {testing::S("name", "SlowHandler::handleMessage")}, kMain));
  StallSnapshot snapshot;
  snapshot.anr = false;
  snapshot.ts_ns = begin + 2'000 * kMs;
  snapshot.tid = kMain;
  snapshot.message_begin_ns = begin;  // the watchdog snapshots the outermost message
  script.Add(snapshot);
  script.Add(Probe(Role::kDispatchEnd, begin + 2'500 * kMs, {}, kMain));
  script.Add(Probe(Role::kPollBegin, begin + 2'600 * kMs, {}, kMain));
  AnalysisOptions options;
  Report report = script.Run(options, begin + 3'000 * kMs, start);
  ASSERT_EQ(report.stalls.size(), 1u);
  EXPECT_EQ(report.stalls[0].message.name, "SlowHandler::handleMessage");
  EXPECT_EQ(report.stalls[0].message.begin_ns, begin);
  EXPECT_EQ(report.stalls[0].message.cost_ns(), 2'600 * kMs);
  EXPECT_EQ(report.messages.definition, "poll-bounded");
}

TEST(AnrTracer, WatchesTheMessageAtTheLagAndAnrThresholds) {
  AnalysisOptions options;
  ASSERT_TRUE(options.Declarations().Set("anr-threshold", "broadcast"));
  ASSERT_TRUE(options.Declarations().Set("lag-threshold", "1500"));
  Pipeline pipeline(options);
  auto watches = pipeline.Watches();
  ASSERT_EQ(watches.size(), 2u);
  EXPECT_EQ(watches[0].label, "lag");
  EXPECT_EQ(watches[0].threshold_ns, 1'500 * kMs);
  EXPECT_EQ(watches[1].label, "anr");
  EXPECT_EQ(watches[1].threshold_ns, 10'000 * kMs);
  EXPECT_FALSE(ParseAnrThreshold("fast"));
  EXPECT_FALSE(ParseAnrThreshold("-5"));
}

}  // namespace
}  // namespace looptrace
