#include "looptrace/tracers/span_tracker.h"

#include <gtest/gtest.h>

#include "event_script.h"

namespace looptrace {
namespace {

using testing::Probe;
using testing::S;
using testing::U;

constexpr uint32_t kTid = 10;

// Remembers every span edge as "+kind key" / "-kind key close" with times.
struct Recorder : SpanListener {
  struct Edge {
    bool begin;
    Span span;
  };
  std::vector<Edge> edges;
  void OnSpanBegin(const Span& span) override { edges.push_back({true, span}); }
  void OnSpanEnd(Span& span) override { edges.push_back({false, span}); }
  std::vector<Span> Ended(SpanKind kind) const {
    std::vector<Span> out;
    for (const auto& e : edges)
      if (!e.begin && e.span.kind == kind) out.push_back(e.span);
    return out;
  }
};

SessionStart StartWith(std::initializer_list<Role> roles) {
  SessionStart start;
  start.pid = kTid;
  for (Role r : roles) start.probes.push_back({0, r, "uprobe", "/x", "p", 0});
  return start;
}

TEST(SpanTracker, PollBoundedMessagesAreTheBusyTimeBetweenPolls) {
  Stats stats;
  SpanTracker tracker(&stats);
  tracker.Configure(StartWith({Role::kPollBegin, Role::kPollEnd}));
  EXPECT_EQ(tracker.message_definition(), MessageDefinition::kPollBounded);
  Recorder rec;
  // Busy at attach (counted, not invented), then two iterations, the last still running.
  for (auto [role, ts] : std::vector<std::pair<Role, uint64_t>>{{Role::kPollBegin, 100},
                                                                {Role::kPollEnd, 200},
                                                                {Role::kPollBegin, 250},
                                                                {Role::kPollEnd, 400},
                                                                {Role::kPollBegin, 700},
                                                                {Role::kPollEnd, 800}})
    tracker.OnProbe(Probe(role, ts, {}, kTid), rec);
  tracker.Finish(1000, rec);
  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].begin_ns, 200u);
  EXPECT_EQ(messages[0].end_ns, 250u);
  EXPECT_EQ(messages[0].close, SpanClose::kEnded);
  EXPECT_EQ(messages[1].begin_ns, 400u);
  EXPECT_EQ(messages[1].end_ns, 700u);
  EXPECT_EQ(messages[2].close, SpanClose::kUnfinished);
  EXPECT_EQ(messages[2].end_ns, 1000u);
  auto polls = rec.Ended(SpanKind::kPoll);
  ASSERT_EQ(polls.size(), 3u);
  EXPECT_EQ(polls[1].cost_ns(), 150u);
  EXPECT_EQ(stats.Get(StatId::messages_running_at_start), 1u);
  EXPECT_EQ(stats.Get(StatId::unfinished_messages), 1u);
}

TEST(SpanTracker, PollBoundedProfilesNestTheirNamedDispatchesInsideIterations) {
  // android::Looper: iterations between epoll_wait calls, native handlers nested and named;
  // a handler that runs a loop of its own (a nested pollOnce) opens nested iterations.
  Stats stats;
  SpanTracker tracker(&stats);
  SessionStart start = StartWith({Role::kDispatchBegin, Role::kDispatchEnd, Role::kPollBegin, Role::kPollEnd});
  start.message_definition = "poll-bounded";
  tracker.Configure(start);
  EXPECT_EQ(tracker.message_definition(), MessageDefinition::kPollBounded);
  Recorder rec;
  auto at = [&](Role role, uint64_t ts, std::vector<EventArg> args = {}) {
    tracker.OnProbe(Probe(role, ts, std::move(args), kTid), rec);
  };
  at(Role::kDispatchEnd, 50);  // a handler running at attach: counted, not invented
  at(Role::kPollBegin, 100);
  at(Role::kPollEnd, 200);     // iteration 1: a handler, then "Java" work
  at(Role::kDispatchBegin, 210, {S("name", "SlowHandler::handleMessage")});
  at(Role::kDispatchEnd, 400);
  at(Role::kPollBegin, 450);
  at(Role::kPollEnd, 500);     // iteration 2: a handler that polls (a nested loop)
  at(Role::kDispatchBegin, 510, {S("name", "Modal::handleMessage")});
  at(Role::kPollBegin, 520);   // ends nothing: the handler runs
  at(Role::kPollEnd, 600);     // nested iteration
  at(Role::kPollBegin, 650);   // ends the nested iteration
  at(Role::kPollEnd, 700);     // another nested iteration, closed by the handler's return
  at(Role::kDispatchEnd, 800);
  at(Role::kPollBegin, 900);   // ends iteration 2
  tracker.Finish(1000, rec);

  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 6u);
  auto check = [&](size_t i, uint64_t begin, uint64_t end, uint32_t depth, const std::string& name) {
    SCOPED_TRACE(i);
    EXPECT_EQ(messages[i].begin_ns, begin);
    EXPECT_EQ(messages[i].end_ns, end);
    EXPECT_EQ(messages[i].depth, depth);
    EXPECT_EQ(messages[i].ArgText("name"), name);
    EXPECT_EQ(messages[i].close, SpanClose::kEnded);
  };
  check(0, 210, 400, 1, "SlowHandler::handleMessage");
  check(1, 200, 450, 0, "");
  check(2, 600, 650, 2, "");
  check(3, 700, 800, 2, "");
  check(4, 510, 800, 1, "Modal::handleMessage");
  check(5, 500, 900, 0, "");
  EXPECT_EQ(stats.Get(StatId::messages_running_at_start), 2u);  // the handler end and the first poll
  EXPECT_EQ(stats.Get(StatId::unmatched_dispatch_end), 0u);
  EXPECT_EQ(stats.Get(StatId::unfinished_messages), 0u);
}

TEST(SpanTracker, WithDispatchRolesPollsAreOnlyIdleWaits) {
  Stats stats;
  SpanTracker tracker(&stats);
  tracker.Configure(StartWith({Role::kDispatchBegin, Role::kDispatchEnd, Role::kPollBegin, Role::kPollEnd}));
  Recorder rec;
  tracker.OnProbe(Probe(Role::kPollBegin, 100, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kPollEnd, 200, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchBegin, 210, {U("id", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchEnd, 300, {U("id", 1)}, kTid), rec);
  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].begin_ns, 210u);
  EXPECT_EQ(messages[0].key, 1u);
  EXPECT_FALSE(stats.AnyNonZero());
}

TEST(SpanTracker, FramesInsideAMessageLoseTheirEndWithIt) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kDispatchBegin, 100, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kFrameBegin, 110, {}, kTid), rec);  // no frame_id: numbered
  tracker.OnProbe(Probe(Role::kPhaseBegin, 120, {U("phase", 3)}, kTid), rec);
  EXPECT_EQ(tracker.CurrentFrame(kTid), "frame 1 phase TRAVERSAL");
  tracker.OnProbe(Probe(Role::kDispatchEnd, 200, {}, kTid), rec);
  EXPECT_EQ(tracker.CurrentFrame(kTid), "");
  auto frames = rec.Ended(SpanKind::kFrame);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].key, 1u);
  EXPECT_EQ(frames[0].close, SpanClose::kLost);
  EXPECT_EQ(frames[0].end_ns, 200u);
  auto phases = rec.Ended(SpanKind::kPhase);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_EQ(phases[0].parent_id, frames[0].id);
  // The phase ends before its frame, the frame before the message.
  ASSERT_EQ(rec.edges.size(), 6u);
  EXPECT_EQ(rec.edges[3].span.kind, SpanKind::kPhase);
  EXPECT_EQ(rec.edges[4].span.kind, SpanKind::kFrame);
  EXPECT_EQ(rec.edges[5].span.kind, SpanKind::kMessage);
  EXPECT_EQ(stats.Get(StatId::frame_end_lost), 1u);
  EXPECT_EQ(stats.Get(StatId::phase_unclosed), 1u);
}

TEST(SpanTracker, KeyedSpansPairByTheirArgumentAcrossThreads) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kInputReceive, 100, {U("seq", 7)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kInputReceive, 110, {U("seq", 8)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kInputFinish, 150, {U("seq", 8)}, kTid + 1), rec);
  tracker.OnProbe(Probe(Role::kBarrierPost, 160, {U("token", 3)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kBarrierRemove, 170, {U("token", 4)}, kTid), rec);  // not posted: ignored
  tracker.Finish(500, rec);
  auto inputs = rec.Ended(SpanKind::kInput);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].key, 8u);
  EXPECT_EQ(inputs[0].tid, kTid);  // the receiving thread
  EXPECT_EQ(inputs[0].cost_ns(), 40u);
  EXPECT_EQ(inputs[1].key, 7u);
  EXPECT_EQ(inputs[1].close, SpanClose::kUnfinished);
  auto barriers = rec.Ended(SpanKind::kBarrier);
  ASSERT_EQ(barriers.size(), 1u);
  EXPECT_EQ(barriers[0].key, 3u);
  EXPECT_EQ(barriers[0].close, SpanClose::kUnfinished);
}

TEST(SpanTracker, LaunchEndsAtTheNextFocusWhichSetsTheScene) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kActivityFocus, 50, {S("name", "Splash")}, kTid), rec);  // no launch open
  EXPECT_EQ(tracker.scene(), "Splash");
  tracker.OnProbe(Probe(Role::kActivityLaunch, 100, {S("name", "Main")}, kTid), rec);
  tracker.OnProbe(Probe(Role::kActivityFocus, 400, {S("name", "Main")}, kTid), rec);
  EXPECT_EQ(tracker.scene(), "Main");
  auto launches = rec.Ended(SpanKind::kLaunch);
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].ArgText("name"), "Main");
  EXPECT_EQ(launches[0].cost_ns(), 300u);
}

TEST(SpanTracker, OpenSpansOutermostFirst) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kDispatchBegin, 100, {U("id", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchBegin, 150, {U("id", 2)}, kTid), rec);
  auto open = tracker.Open(kTid, SpanKind::kMessage);
  ASSERT_EQ(open.size(), 2u);
  EXPECT_EQ(open[0]->key, 1u);
  EXPECT_EQ(open[1]->depth, 1u);
  EXPECT_EQ(tracker.Innermost(kTid, SpanKind::kMessage)->key, 2u);
  EXPECT_TRUE(tracker.Open(kTid + 1, SpanKind::kMessage).empty());
}

}  // namespace
}  // namespace looptrace
