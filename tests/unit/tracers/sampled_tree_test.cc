// Sampled call trees: BuildSampledTree's arithmetic, and the SampledTreeTracer through the
// real pipeline (which spans get a tree, weights on and off CPU, reasons, samples that
// arrive before their span's begin, lost samples, folded stacks).
#include "looptrace/tracers/sampled_tree.h"

#include <gtest/gtest.h>

#include <sstream>

#include "event_script.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/sampled_call_tree.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kMain = 100;
constexpr uint64_t kMs = 1'000'000;

// Innermost first, like the loader makes them.
StackSample Sample(uint64_t ts, bool on_cpu, std::vector<std::string> outermost_first, std::string stop = "") {
  StackSample s;
  s.ts_ns = ts;
  s.tid = kMain;
  s.on_cpu = on_cpu;
  s.frames.assign(outermost_first.rbegin(), outermost_first.rend());
  s.stop = std::move(stop);
  return s;
}

ThreadSwitch Out(uint64_t ts, uint32_t state, std::vector<std::string> kernel_stack) {
  ThreadSwitch sw;
  sw.ts_ns = ts;
  sw.tid = kMain;
  sw.off_cpu = true;
  sw.state = state;
  sw.kernel_stack = std::move(kernel_stack);
  return sw;
}

// A preemption early in a message: BPF took no stack (LT_STACK_YOUNG).
ThreadSwitch EarlyPreemption(uint64_t ts) {
  ThreadSwitch sw = Out(ts, 0, {});
  sw.unstacked = kUnstackedEarlyPreemption;
  return sw;
}

// A wait early in a message: BPF left its user stack for later (LT_STACK_DEFERRED), kept its
// system call's reason.
ThreadSwitch EarlyWait(uint64_t ts) {
  ThreadSwitch sw = Out(ts, 1, {});
  sw.unstacked = kUnstackedEarlyWait;
  sw.wait_syscall = 230;  // clock_nanosleep
  return sw;
}

ThreadSwitch In(uint64_t ts) {
  ThreadSwitch sw;
  sw.ts_ns = ts;
  sw.tid = kMain;
  return sw;
}

SessionStart Start(uint32_t hz = 1000) {
  SessionStart s;
  s.pid = kMain;
  s.sample_hz = hz;
  return s;
}

const SampledNode* Find(const SampledCallTree& tree, const std::string& name) {
  for (const auto& n : tree.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

TEST(BuildSampledTree, OnCpuSamplesShareTheCpuTimeAndSwitchOutsCarryTheirOwn) {
  const std::vector<std::string> a = {"C", "B", "A", "main"};  // innermost first
  const std::vector<std::string> b = {"D", "A", "main"};
  const std::vector<std::string> sleep = {"nanosleep", "E", "A", "main"};
  std::vector<WeightedStack> stacks = {
      {&a, 1, 10, true, "", ""},
      {&a, 2, 10, true, "", ""},
      {&b, 3, 20, true, "", ""},
      {&sleep, 4, 60, false, "sleep", ""},
  };
  SampledCallTree tree = BuildSampledTree(stacks, 100, 40, 100);
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree.nodes[0].node.cost_ns, 100u);
  EXPECT_EQ(tree.samples_on_cpu, 3u);
  EXPECT_EQ(tree.samples_off_cpu, 1u);
  // "main" is shared by every stack: collapsed into the root; A (the last shared frame) roots the tree.
  EXPECT_EQ(tree.common_frames, std::vector<std::string>{"main"});
  ASSERT_GE(tree.nodes.size(), 2u);
  EXPECT_EQ(tree.nodes[1].name, "A");
  EXPECT_EQ(tree.nodes[1].node.depth, 1u);
  EXPECT_EQ(tree.nodes[1].node.cost_ns, 100u);
  EXPECT_EQ(Find(tree, "B")->node.cost_ns, 20u);
  EXPECT_EQ(Find(tree, "D")->on_cpu_ns, 20u);
  const SampledNode* e = Find(tree, "E");
  EXPECT_EQ(e->off_cpu_ns, 60u);
  EXPECT_EQ(e->on_cpu_ns, 0u);
  ASSERT_EQ(e->off_cpu_by_reason.size(), 1u);
  EXPECT_EQ(e->off_cpu_by_reason[0].first, "sleep");
  // Children in the order they were first sampled.
  EXPECT_EQ(tree.nodes[2].name, "B");
  // Folded stacks: full, outermost first; off-CPU ones end with their reason.
  bool found = false;
  for (const auto& f : tree.folded)
    if (f.frames == std::vector<std::string>{"main", "A", "E", "nanosleep", "[off-cpu: sleep]"}) {
      found = true;
      EXPECT_EQ(f.weight_ns, 60u);
    }
  EXPECT_TRUE(found);
  EXPECT_FALSE(tree.stack_key.empty());
}

TEST(BuildSampledTree, IncompleteStacksHangUnderUnknownCallers) {
  const std::vector<std::string> full = {"leaf", "A", "main"};
  const std::vector<std::string> cut = {"leaf", "A"};
  std::vector<WeightedStack> stacks = {{&full, 1, 10, true, "", ""}, {&cut, 2, 10, true, "", "no CFI for libx.so"}};
  SampledCallTree tree = BuildSampledTree(stacks, 20, 20, 100);
  ASSERT_NE(Find(tree, "[unknown callers]"), nullptr);
  EXPECT_EQ(Find(tree, "[unknown callers]")->node.cost_ns, 10u);
  ASSERT_EQ(tree.walk_stops.size(), 1u);
  EXPECT_EQ(tree.walk_stops[0].first, "no CFI for libx.so");
  EXPECT_EQ(tree.walk_stops[0].second, 1u);
}

TEST(BuildSampledTree, OnCpuTimeWithoutASampleStaysInTheRoot) {
  const std::vector<std::string> sleep = {"nanosleep", "main"};
  SampledCallTree tree = BuildSampledTree({{&sleep, 1, 90, false, "sleep", ""}}, 100, 10, 100);
  EXPECT_EQ(tree.unsampled_on_cpu_ns, 10u);
  EXPECT_EQ(tree.nodes[0].node.cost_ns, 100u);
  EXPECT_EQ(tree.nodes[1].node.cost_ns, 90u);
}

// A slow message with on-CPU samples and two switch-outs (a lock wait and a sleep).
testing::EventScript SlowMessage() {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 100 * kMs, {U("id", 7), S("name", "slow")}, kMain));
  // 100..300 on CPU in compute(): 4 samples.
  for (uint64_t ms : {150, 200, 250, 290}) script.Add(Sample(ms * kMs, true, {"main", "loop", "handle", "compute"}));
  // 300..700 waiting for a lock.
  script.Add(Sample(300 * kMs, false, {"main", "loop", "handle", "lock", "futex_wait"}));
  script.Add(Out(300 * kMs, 1, {"futex_wait_queue", "futex_wait", "do_futex"}));
  script.Add(In(700 * kMs));
  // 700..1100 asleep.
  script.Add(Sample(700 * kMs, false, {"main", "loop", "handle", "nap", "clock_nanosleep"}));
  script.Add(Out(700 * kMs, 1, {"hrtimer_nanosleep", "do_nanosleep"}));
  script.Add(In(1100 * kMs));
  script.Add(Sample(1150 * kMs, true, {"main", "loop", "handle", "compute"}));
  script.Add(Probe(Role::kDispatchEnd, 1200 * kMs, {U("id", 7)}, kMain));
  return script;
}

TEST(SampledTreeTracer, ASlowMessageGetsItsSampledTreeNextToTheEvilReport) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 700 * kMs;
  Report r = SlowMessage().Run(options, 2'000 * kMs, Start());
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const EvilMethodReport& e = r.evil_methods[0];
  EXPECT_FALSE(e.has_beats);
  const SampledCallTree& t = e.sampled;
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.span_ns, 1100 * kMs);
  EXPECT_EQ(t.off_cpu_ns, 800 * kMs);
  EXPECT_EQ(t.on_cpu_ns, 300 * kMs);
  EXPECT_EQ(t.samples_on_cpu, 5u);
  EXPECT_EQ(t.samples_off_cpu, 2u);
  EXPECT_EQ(t.common_frames, (std::vector<std::string>{"main", "loop"}));
  EXPECT_EQ(t.nodes[1].name, "handle");
  EXPECT_EQ(Find(t, "compute")->node.cost_ns, 300 * kMs);
  const SampledNode* futex = Find(t, "futex_wait");
  ASSERT_NE(futex, nullptr);
  EXPECT_EQ(futex->off_cpu_ns, 400 * kMs);
  EXPECT_EQ(futex->off_cpu_by_reason[0].first, "lock");
  EXPECT_EQ(Find(t, "clock_nanosleep")->off_cpu_by_reason[0].first, "sleep");
  EXPECT_EQ(t.sample_hz, 1000u);
}

TEST(SampledTreeTracer, FastMessagesAndSessionsWithoutSamplesGetNoTree) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 700 * kMs;
  Report none = SlowMessage().Run(options, 2'000 * kMs, Start(/*hz=*/0));
  ASSERT_EQ(none.evil_methods.size(), 1u);
  EXPECT_TRUE(none.evil_methods[0].sampled.empty());
  options.common.evil_threshold_ns = 1500 * kMs;
  EXPECT_TRUE(SlowMessage().Run(options, 2'000 * kMs, Start()).evil_methods.empty());
}

// Live, a sample can arrive before the record of the span it belongs to (the loader drains
// side records first): it must still count for that span, and one of an earlier time must not.
TEST(SampledTreeTracer, SamplesArrivingBeforeTheirSpansBeginStillCount) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 100 * kMs;
  Pipeline pipeline(options);
  pipeline.OnEvent(Start());
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 10 * kMs, {U("id", 1)}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 20 * kMs, {U("id", 1)}, kMain));
  pipeline.OnEvent(Sample(50 * kMs, true, {"main", "early"}));    // between messages
  pipeline.OnEvent(Sample(150 * kMs, true, {"main", "inside"}));  // before its begin arrives
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 100 * kMs, {U("id", 2)}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 300 * kMs, {U("id", 2)}, kMain));
  Report r = pipeline.TakeReport();
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const SampledCallTree& t = r.evil_methods[0].sampled;
  EXPECT_EQ(t.samples_on_cpu, 1u);
  EXPECT_NE(Find(t, "inside"), nullptr);
  EXPECT_EQ(Find(t, "early"), nullptr);
}

TEST(SampledTreeTracer, ASwitchOutWhoseSampleWasLostKeepsItsTime) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1)}, kMain));
  script.Add(Out(100 * kMs, 1, {"do_nanosleep"}));  // its sample was dropped
  script.Add(In(900 * kMs));
  script.Add(Probe(Role::kDispatchEnd, 1000 * kMs, {U("id", 1)}, kMain));
  Report r = script.Run(AnalysisOptions{}, 2'000 * kMs, Start());
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const SampledNode* none = Find(r.evil_methods[0].sampled, "[no stack]");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->off_cpu_ns, 800 * kMs);
  EXPECT_EQ(none->off_cpu_by_reason[0].first, "sleep");
}

// Between messages BPF takes no stack at the loop thread's switch-outs (issue 32): the
// session's folded stacks say so instead of "[no stack]", and no tree counts it truncated.
TEST(SampledTreeTracer, IdleSwitchOutsWithoutStacksAreNamedInTheSessionStacks) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1)}, kMain));
  script.Add(Probe(Role::kDispatchEnd, 10 * kMs, {U("id", 1)}, kMain));
  ThreadSwitch idle = Out(20 * kMs, 1, {});
  idle.unstacked = kUnstackedLoopIdle;
  script.Add(idle);
  script.Add(In(520 * kMs));
  Report r = script.Run(AnalysisOptions{}, 2'000 * kMs, Start());
  bool found = false;
  for (const FoldedStack& f : r.session_stacks)
    if (!f.frames.empty() && f.frames.front() == "[loop idle: no stack taken]") {
      found = true;
      EXPECT_EQ(f.weight_ns, 500 * kMs);
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(r.stats.Get(StatId::stack_walk_truncated), 0u);
}

// Preempted early in a message, BPF took no stack (the thread was running, and ran on after):
// a message that turns slow shows that time under the stack of its nearest on-CPU sample,
// its reason kept, not as a lost sample or a truncated walk.
TEST(SampledTreeTracer, EarlyPreemptionsWithoutStacksStandUnderTheNearestOnCpuSample) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1)}, kMain));
  script.Add(Sample(500'000, true, {"main", "setup"}));
  script.Add(EarlyPreemption(2 * kMs));
  script.Add(In(6 * kMs));
  for (uint64_t ms = 7; ms < 800; ms += 10) {
    script.Add(Sample(ms * kMs, true, {"main", "work"}));
    if (ms == 397) script.Add(Sample(400 * kMs, true, {"main", "work", "parse"}));
  }
  // Later, nearer the sample before it (400) than the one after (407).
  script.Add(EarlyPreemption(401 * kMs));
  script.Add(In(403 * kMs));
  script.Add(Probe(Role::kDispatchEnd, 800 * kMs, {U("id", 1)}, kMain));
  Report r = script.Run(AnalysisOptions{}, 2'000 * kMs, Start());
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const SampledCallTree& tree = r.evil_methods[0].sampled;
  EXPECT_EQ(Find(tree, "[no stack]"), nullptr);
  const SampledNode *setup = Find(tree, "setup"), *work = Find(tree, "work"), *parse = Find(tree, "parse");
  ASSERT_NE(setup, nullptr);
  ASSERT_NE(work, nullptr);
  ASSERT_NE(parse, nullptr);
  // 2-6 ms: 1.5 ms after "setup" (0.5), 1 ms before "work" (7); 401-403: 1 ms after "parse".
  EXPECT_EQ(setup->off_cpu_ns, 0u);
  EXPECT_EQ(parse->off_cpu_ns, 2 * kMs);
  EXPECT_EQ(work->off_cpu_ns, 6 * kMs);  // its own 4 and parse's 2
  ASSERT_EQ(work->off_cpu_by_reason.size(), 1u);
  EXPECT_EQ(work->off_cpu_by_reason[0].first, "preempted");
  EXPECT_TRUE(tree.walk_stops.empty());
  EXPECT_EQ(r.stats.Get(StatId::stack_walk_truncated), 0u);
  // The session's stacks put it there too.
  uint64_t under_work = 0, under_parse = 0;
  for (const FoldedStack& f : r.session_stacks) {
    EXPECT_NE(f.frames.front(), "[early preemption: no stack taken]");
    if (f.frames.back() != "[off-cpu: preempted]") continue;
    if (f.frames == std::vector<std::string>{"main", "work", "[off-cpu: preempted]"}) under_work += f.weight_ns;
    if (f.frames == std::vector<std::string>{"main", "work", "parse", "[off-cpu: preempted]"})
      under_parse += f.weight_ns;
  }
  EXPECT_EQ(under_work, 4 * kMs);
  EXPECT_EQ(under_parse, 2 * kMs);
}

// With no on-CPU sample of its message to stand under, an early preemption's time is shown
// as such (its reason kept), never under another message's stack.
TEST(SampledTreeTracer, EarlyPreemptionsWithNoSampleNearKeepTheirTimeAndReason) {
  testing::EventScript script;
  script.Add(Sample(1 * kMs, true, {"main", "before"}));  // outside the message
  script.Add(Probe(Role::kDispatchBegin, 2 * kMs, {U("id", 1)}, kMain));
  script.Add(EarlyPreemption(3 * kMs));
  script.Add(In(7 * kMs));
  ThreadSwitch sleep = Out(8 * kMs, 1, {"do_nanosleep"});
  script.Add(Sample(8 * kMs, false, {"main", "handler", "nanosleep"}));
  script.Add(sleep);
  script.Add(In(800 * kMs));
  script.Add(Probe(Role::kDispatchEnd, 800 * kMs, {U("id", 1)}, kMain));
  Report r = script.Run(AnalysisOptions{}, 2'000 * kMs, Start());
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const SampledCallTree& tree = r.evil_methods[0].sampled;
  EXPECT_EQ(Find(tree, "before"), nullptr);
  const SampledNode* none = Find(tree, "[no stack]");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->off_cpu_ns, 4 * kMs);
  EXPECT_EQ(none->off_cpu_by_reason[0].first, "preempted");
  ASSERT_EQ(tree.walk_stops.size(), 1u);
  EXPECT_EQ(tree.walk_stops[0], (std::pair<std::string, uint64_t>("early preemption", 1)));
  EXPECT_EQ(r.stats.Get(StatId::stack_walk_truncated), 0u);
}

// An early wait's stack is read from outside only if it outlived the early age, and comes
// after its switch record or before it (whichever the loader drained first): it takes the
// place of the stretch that record left without one. A short early wait's time stands under
// the nearest on-CPU sample's stack, with its reason from the system call.
TEST(SampledTreeTracer, AnEarlyWaitsLateStackFillsItsStretchAndAShortOneStandsUnderTheNearestSample) {
  for (bool stack_first : {false, true}) {
    SCOPED_TRACE(stack_first ? "stack read before the switch record was drained" : "after it");
    testing::EventScript script;
    script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1)}, kMain));
    script.Add(Sample(500'000, true, {"main", "handler", "parse"}));
    script.Add(EarlyWait(1 * kMs));  // 1-2 ms: short, no stack read
    script.Add(In(2 * kMs));
    const StackSample late = Sample(3 * kMs, false, {"main", "handler", "nanosleep"});
    if (stack_first) script.Add(late);
    script.Add(EarlyWait(3 * kMs));  // 3-403 ms: outlived the early age, its stack read then
    if (!stack_first) script.Add(late);
    script.Add(In(403 * kMs));
    for (uint64_t ms = 404; ms < 800; ms += 10) script.Add(Sample(ms * kMs, true, {"main", "handler", "work"}));
    script.Add(Probe(Role::kDispatchEnd, 800 * kMs, {U("id", 1)}, kMain));
    Report r = script.Run(AnalysisOptions{}, 2'000 * kMs, Start());
    ASSERT_EQ(r.evil_methods.size(), 1u);
    const SampledCallTree& tree = r.evil_methods[0].sampled;
    EXPECT_EQ(Find(tree, "[no stack]"), nullptr);
    const SampledNode *sleep = Find(tree, "nanosleep"), *parse = Find(tree, "parse");
    ASSERT_NE(sleep, nullptr);
    ASSERT_NE(parse, nullptr);
    EXPECT_EQ(sleep->off_cpu_ns, 400 * kMs);
    ASSERT_EQ(sleep->off_cpu_by_reason.size(), 1u);
    EXPECT_EQ(sleep->off_cpu_by_reason[0].first, "sleep");
    EXPECT_EQ(parse->off_cpu_ns, 1 * kMs);
    ASSERT_EQ(parse->off_cpu_by_reason.size(), 1u);
    EXPECT_EQ(parse->off_cpu_by_reason[0].first, "sleep");
    EXPECT_EQ(tree.samples_off_cpu, 2u);  // one sample per stretch: the late stack took its place
    EXPECT_TRUE(tree.walk_stops.empty());
    EXPECT_EQ(r.stats.Get(StatId::switch_record_lost), 0u);
  }
}

// A full record ring drops switch records but not their samples (another ring): a
// switch-out sample whose switch-out or switch-in record never came must not stay "still
// off CPU" and hold every later sample (a soak at 30,000 messages/s grew 17 MB/s).
TEST(SampledTreeTracer, SamplesWhoseSwitchRecordsWereLostDoNotQueueForever) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 50 * kMs;
  Pipeline pipeline(options);
  pipeline.OnEvent(Start());
  uint64_t t = 1 * kMs, lost = 0;
  size_t max_queued = 0;
  for (uint64_t i = 0; i < 20000; ++i, t += 100'000) {
    pipeline.OnEvent(Probe(Role::kDispatchBegin, t, {U("id", i)}, kMain));
    pipeline.OnEvent(Probe(Role::kDispatchEnd, t + 10'000, {U("id", i)}, kMain));
    // The looper sleeps until the next message: a switch-out sample, its switch record, the
    // switch-in; every 7th loses its switch-out record, every 11th its switch-in.
    pipeline.OnEvent(Sample(t + 20'000, false, {"main", "loop", "epoll_wait"}));
    if (i % 7) pipeline.OnEvent(Out(t + 20'000, 1, {"ep_poll"}));
    if (i % 11)
      pipeline.OnEvent(In(t + 90'000));
    else
      pipeline.OnEvent(Sample(t + 95'000, true, {"main", "loop"}));  // running again, sampled
    lost += !(i % 7) || !(i % 11);
    max_queued = std::max(max_queued, pipeline.samples().queued_samples());
  }
  EXPECT_LE(max_queued, 3u);
  // A slow message sleeping in the middle, its switch-out record lost: the stretch ends when
  // the thread runs again (its dispatch.end), reason unknown.
  pipeline.OnEvent(Probe(Role::kDispatchBegin, t, {U("id", 99)}, kMain));
  pipeline.OnEvent(Sample(t + 10 * kMs, false, {"main", "loop", "handle", "nanosleep"}));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, t + 100 * kMs, {U("id", 99)}, kMain));
  Report r = pipeline.TakeReport();
  EXPECT_EQ(r.stats.Get(StatId::switch_record_lost), lost + 1);
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const SampledCallTree& tree = r.evil_methods[0].sampled;
  EXPECT_EQ(tree.off_cpu_ns, 90 * kMs);
  const SampledNode* sleep = Find(tree, "nanosleep");
  ASSERT_NE(sleep, nullptr);
  EXPECT_EQ(sleep->off_cpu_by_reason[0].first, "unknown");
}

TEST(SampledTreeTracer, ALoopThatWakesWithoutDispatchingKeepsNoSamples) {
  AnalysisOptions options;
  Pipeline pipeline(options);
  pipeline.OnEvent(Start());
  pipeline.OnEvent(Probe(Role::kDispatchBegin, 1 * kMs, {U("id", 1)}, kMain));
  pipeline.OnEvent(Probe(Role::kDispatchEnd, 2 * kMs, {U("id", 1)}, kMain));
  size_t max_queued = 0;
  for (uint64_t t = 3 * kMs; t < 10'003 * kMs; t += kMs) {  // a timer every ms, nothing to do
    pipeline.OnEvent(Sample(t, false, {"main", "loop", "epoll_wait"}));
    pipeline.OnEvent(Out(t, 1, {"ep_poll"}));
    pipeline.OnEvent(In(t + kMs / 2));
    pipeline.OnEvent(Sample(t + kMs / 2 + 1000, true, {"main", "loop"}));
    max_queued = std::max(max_queued, pipeline.samples().queued_samples());
  }
  EXPECT_LE(max_queued, 3u);
}

TEST(SampledTreeTracer, AJankyFrameGetsTheTreeOfItsOwnSpan) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1)}, kMain));
  script.Add(Probe(Role::kFrameBegin, 10 * kMs, {U("frame_id", 5), U("vsync_ns", 5 * kMs)}, kMain));
  for (uint64_t ms = 20; ms < 800; ms += 10) script.Add(Sample(ms * kMs, true, {"main", "doFrame", "draw"}));
  script.Add(Probe(Role::kFrameEnd, 810 * kMs, {U("frame_id", 5)}, kMain));
  script.Add(Sample(850 * kMs, true, {"main", "after"}));
  script.Add(Probe(Role::kDispatchEnd, 900 * kMs, {U("id", 1)}, kMain));
  AnalysisOptions options;
  Report r = script.Run(options, 2'000 * kMs, Start());
  ASSERT_EQ(r.frames.frames.size(), 1u);
  const SampledCallTree& t = r.frames.frames[0].sampled;
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.span_ns, 800 * kMs);
  EXPECT_EQ(Find(t, "after"), nullptr);
  EXPECT_EQ(Find(t, "draw")->node.cost_ns, 800 * kMs);
}

// --cpu-budget lowered the rate inside a message: a sample taken at the lower rate stands for
// its longer period, in the message's tree and in the session's folded stacks.
TEST(SampledTreeTracer, SamplesWeighTheirOwnPeriodWhereTheBudgetChangedTheRate) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 7), S("name", "busy")}, kMain));
  // 0..400 ms on CPU: parse() sampled at 1000 Hz for 200 ms, then render() at 250 Hz.
  for (uint64_t ms = 1; ms <= 200; ++ms) script.Add(Sample(ms * kMs, true, {"main", "parse"}));
  for (uint64_t ms = 204; ms <= 400; ms += 4) {
    StackSample s = Sample(ms * kMs, true, {"main", "render"});
    s.period_ns = 4 * kMs;
    script.Add(s);
  }
  script.Add(Probe(Role::kDispatchEnd, 400 * kMs, {U("id", 7)}, kMain));
  AnalysisOptions options;
  options.common.evil_threshold_ns = 300 * kMs;
  Report r = script.Run(options, 1'000 * kMs, Start(1000));
  ASSERT_EQ(r.evil_methods.size(), 1u);
  const SampledCallTree& t = r.evil_methods[0].sampled;
  EXPECT_EQ(t.samples_on_cpu, 250u);
  EXPECT_EQ(Find(t, "parse")->node.cost_ns, 200 * kMs);  // not 4/5 of the message by count
  EXPECT_EQ(Find(t, "render")->node.cost_ns, 200 * kMs);
  // 250 samples in 400 ms of CPU: the tree says the rate they were taken at, and the asked one.
  EXPECT_EQ(t.sample_hz, 625u);
  EXPECT_EQ(t.nominal_sample_hz, 1000u);
  std::ostringstream text;
  MakeRenderer("text")->Render(r, text);
  EXPECT_NE(text.str().find("250 on CPU at 625 Hz on average, lowered from 1000 Hz by --cpu-budget"), std::string::npos)
      << text.str();
  RenderOptions render;
  render.folded_scope = "session";
  std::ostringstream all;
  MakeRenderer("folded", render)->Render(r, all);
  EXPECT_NE(all.str().find("main;parse 200000\n"), std::string::npos) << all.str();
  EXPECT_NE(all.str().find("main;render 200000\n"), std::string::npos) << all.str();
}

TEST(SampledTreeTracer, FoldedStacksPerSlowMessageAndForTheSession) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 700 * kMs;
  Report slow = SlowMessage().Run(options, 2'000 * kMs, Start());
  std::ostringstream out;
  MakeRenderer("folded")->Render(slow, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("[message slow +0.100000s];main;loop;handle;lock;futex_wait;[off-cpu: lock] 400000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[message slow +0.100000s];main;loop;handle;compute 300000\n"), std::string::npos) << text;

  // The same report drawn at the session's scope: every sample, kept whatever -f says.
  RenderOptions render;
  render.folded_scope = "session";
  std::ostringstream all;
  MakeRenderer("folded", render)->Render(slow, all);
  // Every sample at its own weight: on-CPU ones at the nominal period (1 ms at 1000 Hz).
  EXPECT_NE(all.str().find("main;loop;handle;compute 5000\n"), std::string::npos) << all.str();
  EXPECT_NE(all.str().find("main;loop;handle;nap;clock_nanosleep;[off-cpu: sleep] 400000\n"), std::string::npos)
      << all.str();
}

TEST(SampledTreeTracer, InstrumentedTreesFoldToTheirSelfTimes) {
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1), S("name", "m")}, kMain));
  MethodBeats beats;
  beats.tid = kMain;
  beats.begin_ns = 0;
  beats.end_ns = 1000 * kMs;
  beats.beats = {{0, 1, true}, {100 * kMs, 2, true}, {400 * kMs, 2, false}, {1000 * kMs, 1, false}};
  beats.names = {{1, "A;x"}, {2, "B"}};
  script.Add(beats);
  script.Add(Probe(Role::kDispatchEnd, 1000 * kMs, {U("id", 1)}, kMain));
  AnalysisOptions options;
  Report r = script.Run(options, 2'000 * kMs);
  RenderOptions render;
  render.folded_source = "instrumented";
  std::ostringstream out;
  MakeRenderer("folded", render)->Render(r, out);
  EXPECT_EQ(out.str(), "[message m +0.000000s];A:x 700000\n[message m +0.000000s];A:x;B 300000\n");
}

TEST(SampledTreeTracer, TextAndJsonShowTheSampledTree) {
  AnalysisOptions options;
  options.common.evil_threshold_ns = 700 * kMs;
  Report r = SlowMessage().Run(options, 2'000 * kMs, Start());
  std::ostringstream text, json;
  MakeRenderer("text")->Render(r, text);
  MakeRenderer("json")->Render(r, json);
  EXPECT_NE(text.str().find("sampled call tree: 7 stack samples (5 on CPU at 1000 Hz, 2 at switch-outs)"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("futex_wait  [off CPU: lock]"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("no method beats"), std::string::npos);
  EXPECT_NE(json.str().find("\"sampled_tree\":[{"), std::string::npos);
  EXPECT_NE(json.str().find("\"common_frames\":[\"main\",\"loop\"]"), std::string::npos);
}

TEST(SampledTreeTracer, AStalledMessagesInterpretedStackIsItsOpenMethods) {
  AnalysisOptions options;
  testing::EventScript script;
  script.Add(Probe(Role::kDispatchBegin, 0, {U("id", 1)}, kMain));
  StallSnapshot snapshot;
  snapshot.anr = true;
  snapshot.ts_ns = 6'000 * kMs;
  snapshot.tid = kMain;
  snapshot.message_begin_ns = 0;
  script.Add(snapshot);
  MethodBeats open;
  open.span = "open";
  open.tid = kMain;
  open.begin_ns = 0;
  open.end_ns = 6'000 * kMs;
  open.beats = {{1 * kMs, 1, true}, {2 * kMs, 2, true}, {3 * kMs, 2, false}, {4 * kMs, 3, true}};
  open.names = {{1, "Outer.run"}, {2, "Done.call"}, {3, "Inner.wait"}};
  script.Add(open);
  script.Add(Probe(Role::kDispatchEnd, 7'000 * kMs, {U("id", 1)}, kMain));
  Report r = script.Run(options, 8'000 * kMs);
  ASSERT_FALSE(r.stalls.empty());
  EXPECT_EQ(r.stalls.back().interpreted_stack, (std::vector<std::string>{"Inner.wait", "Outer.run"}));
}

}  // namespace
}  // namespace looptrace
