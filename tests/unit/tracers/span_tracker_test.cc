#include "looptrace/tracers/span_tracker.h"

#include <fmt/format.h>
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

// Pipeline snapshots copy the tracker and end the copy: the copy's spans are its own (it
// once kept a pointer to the original's last thread).
TEST(SpanTracker, ACopyEndsItsOwnSpansNotTheOriginals) {
  Stats stats;
  SpanTracker original(&stats);
  Recorder rec;
  original.OnProbe(Probe(Role::kDispatchBegin, 100, {U("id", 1)}, kTid), rec);
  SpanTracker copy = original;
  copy.OnProbe(Probe(Role::kDispatchEnd, 200, {U("id", 1)}, kTid), rec);
  EXPECT_EQ(copy.Innermost(kTid, SpanKind::kMessage), nullptr);
  ASSERT_NE(original.Innermost(kTid, SpanKind::kMessage), nullptr);
  EXPECT_EQ(original.Innermost(kTid, SpanKind::kMessage)->begin_ns, 100u);
  original.OnProbe(Probe(Role::kDispatchEnd, 300, {U("id", 1)}, kTid), rec);
  auto ended = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].end_ns, 200u);
  EXPECT_EQ(ended[1].end_ns, 300u);
  EXPECT_EQ(stats.Get(StatId::unmatched_dispatch_end), 0u);
}

// Messages end in their stack slot (SpanStack): a listener told of an ending message sees
// the stack without it (ANR asks whether a message is still open), the span it gets is the
// whole message, and the slot's next message starts clean (no field of the last one left).
TEST(SpanTracker, AnEndingMessageIsOffTheStackAndItsSlotStartsClean) {
  Stats stats;
  SpanTracker tracker(&stats);
  struct Checker : SpanListener {
    const SpanTracker* tracker = nullptr;
    std::vector<std::string> seen;
    void OnSpanBegin(const Span& span) override {
      EXPECT_EQ(span.close, SpanClose::kOpen);
      EXPECT_EQ(span.end_event, nullptr);
      EXPECT_EQ(span.end_cpu_ns, 0u);
      EXPECT_EQ(span.end_ns, span.begin_ns);
    }
    void OnSpanEnd(Span& span) override {
      const Span* open = tracker->Innermost(kTid, SpanKind::kMessage);
      seen.push_back(std::to_string(span.key) + (span.keyed ? "" : "?") + " depth " + std::to_string(span.depth) +
                     " cost " + std::to_string(span.cost_ns()) + " open " +
                     (open ? std::to_string(open->key) : std::string("none")));
    }
  } checker;
  checker.tracker = &tracker;
  auto probe = [&](Role role, uint64_t ts, std::vector<EventArg> args) {
    ProbeEvent e = Probe(role, ts, args, kTid);
    e.thread_cpu_ns = ts * 2;
    tracker.OnProbe(e, checker);
  };
  probe(Role::kDispatchBegin, 100, {U("id", 1)});
  probe(Role::kDispatchBegin, 110, {U("id", 2)});  // nested (a loop run inside message 1)
  probe(Role::kDispatchEnd, 150, {U("id", 2)});
  probe(Role::kDispatchEnd, 200, {U("id", 1)});
  probe(Role::kDispatchBegin, 300, {});  // reuses message 1's slot: no id this time
  probe(Role::kDispatchEnd, 310, {});
  EXPECT_EQ(checker.seen, (std::vector<std::string>{"2 depth 1 cost 40 open 1", "1 depth 0 cost 100 open none",
                                                    "0? depth 0 cost 10 open none"}));
  EXPECT_FALSE(stats.AnyNonZero());
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
  at(Role::kPollEnd, 200);  // iteration 1: a handler, then "Java" work
  at(Role::kDispatchBegin, 210, {S("name", "SlowHandler::handleMessage")});
  at(Role::kDispatchEnd, 400);
  at(Role::kPollBegin, 450);
  at(Role::kPollEnd, 500);  // iteration 2: a handler that polls (a nested loop)
  at(Role::kDispatchBegin, 510, {S("name", "Modal::handleMessage")});
  at(Role::kPollBegin, 520);  // ends nothing: the handler runs
  at(Role::kPollEnd, 600);    // nested iteration
  at(Role::kPollBegin, 650);  // ends the nested iteration
  at(Role::kPollEnd, 700);    // another nested iteration, closed by the handler's return
  at(Role::kDispatchEnd, 800);
  at(Role::kPollBegin, 900);  // ends iteration 2
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

ProbeEvent At(Role role, uint64_t ts, uint32_t sp, std::vector<EventArg> args = {}) {
  ProbeEvent e = Probe(role, ts, std::move(args), kTid);
  e.sp = sp;
  return e;
}

TEST(SpanTracker, AMessageWhoseEndWasLostClosesWhenTheNextBeginsAtItsStackDepth) {
  // A storm with every third dispatch.end lost (a full record ring): each lost end would
  // otherwise hold every later message nested in it for the rest of the session.
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  constexpr uint32_t kLoopSp = 0x7ffe1230;
  size_t lost = 0, max_open = 0;
  for (uint64_t i = 0; i < 30000; ++i) {
    const uint64_t ts = 1000 + i * 10;
    tracker.OnProbe(At(Role::kDispatchBegin, ts, kLoopSp, {U("id", i)}), rec);
    max_open = std::max(max_open, tracker.Open(kTid, SpanKind::kMessage).size());
    if (i % 3 == 2)
      ++lost;
    else
      tracker.OnProbe(At(Role::kDispatchEnd, ts + 5, kLoopSp - 64, {U("id", i)}), rec);
  }
  tracker.Finish(1'000'000, rec);
  EXPECT_EQ(max_open, 1u);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), lost - 1);  // the last one is unfinished
  EXPECT_EQ(stats.Get(StatId::unfinished_messages), 1u);
  EXPECT_EQ(stats.Get(StatId::dispatch_id_mismatch), 0u);
  EXPECT_EQ(stats.Get(StatId::message_nesting_capped), 0u);
  size_t ended = 0, closed_lost = 0;
  for (const Span& m : rec.Ended(SpanKind::kMessage)) {
    EXPECT_EQ(m.depth, 0u);
    if (m.close == SpanClose::kEnded) {
      ++ended;
      EXPECT_EQ(m.cost_ns(), 5u);
    } else if (m.close == SpanClose::kLost) {
      ++closed_lost;
      EXPECT_EQ(m.end_ns, m.begin_ns + 10);  // at the next begin: the latest it can have ended
    }
  }
  EXPECT_EQ(ended, 20000u);
  EXPECT_EQ(closed_lost, lost - 1);
}

TEST(SpanTracker, AMessageBegunDeeperOnTheStackIsNested) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  // A loop run inside a message (deeper), twice, then the outer one ends; then the next
  // outer message at the loop's depth. The stack pointers' low halves wrap around 2^32.
  tracker.OnProbe(At(Role::kDispatchBegin, 100, 0x00000100, {U("id", 1)}), rec);
  tracker.OnProbe(At(Role::kDispatchBegin, 110, 0xffffff00, {U("id", 2)}), rec);
  tracker.OnProbe(At(Role::kDispatchEnd, 120, 0xffffff00, {U("id", 2)}), rec);
  tracker.OnProbe(At(Role::kDispatchBegin, 130, 0xffffff00, {U("id", 3)}), rec);
  EXPECT_EQ(tracker.Open(kTid, SpanKind::kMessage).size(), 2u);
  tracker.OnProbe(At(Role::kDispatchEnd, 140, 0xffffff00, {U("id", 3)}), rec);
  tracker.OnProbe(At(Role::kDispatchEnd, 150, 0x00000100, {U("id", 1)}), rec);
  tracker.OnProbe(At(Role::kDispatchBegin, 160, 0x00000100, {U("id", 4)}), rec);
  tracker.OnProbe(At(Role::kDispatchEnd, 170, 0x00000100, {U("id", 4)}), rec);
  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].key, 2u);
  EXPECT_EQ(messages[0].depth, 1u);
  EXPECT_EQ(messages[1].depth, 1u);
  EXPECT_EQ(messages[2].key, 1u);
  EXPECT_EQ(messages[2].depth, 0u);
  for (const Span& m : messages) EXPECT_EQ(m.close, SpanClose::kEnded);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 0u);
  // A message begun at the same depth after a wrap of the low half closes the open one.
  tracker.OnProbe(At(Role::kDispatchBegin, 200, 0xfffffff0, {U("id", 5)}), rec);
  tracker.OnProbe(At(Role::kDispatchBegin, 210, 0x00000010, {U("id", 6)}), rec);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 1u);
  EXPECT_EQ(tracker.Open(kTid, SpanKind::kMessage).size(), 1u);
}

TEST(SpanTracker, FramesOfAMessageWhoseEndWasLostCloseWithIt) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(At(Role::kDispatchBegin, 100, 0x1000), rec);
  tracker.OnProbe(At(Role::kFrameBegin, 110, 0x0f00, {U("frame_id", 7)}), rec);
  tracker.OnProbe(At(Role::kDispatchBegin, 200, 0x1000), rec);  // both ends lost
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 1u);
  EXPECT_EQ(stats.Get(StatId::frame_end_lost), 1u);
  EXPECT_TRUE(tracker.Open(kTid, SpanKind::kFrame).empty());
  auto frames = rec.Ended(SpanKind::kFrame);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].close, SpanClose::kLost);
}

TEST(SpanTracker, WithoutStackPointersOpenMessagesAreBounded) {
  // An old recording (no sp): lost ends cannot be told from nesting, but no more than
  // kMaxOpenMessages stay open; the outermost is closed as lost, counted.
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  for (uint64_t i = 0; i < 1000; ++i) {
    tracker.OnProbe(Probe(Role::kDispatchBegin, 100 + i, {}, kTid), rec);
    ASSERT_LE(tracker.Open(kTid, SpanKind::kMessage).size(), SpanTracker::kMaxOpenMessages);
  }
  EXPECT_EQ(stats.Get(StatId::message_nesting_capped), 1000 - SpanTracker::kMaxOpenMessages);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 0u);
  auto lost = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(lost.size(), 1000 - SpanTracker::kMaxOpenMessages);
  EXPECT_EQ(lost[0].begin_ns, 100u);  // outermost first
  EXPECT_EQ(lost[0].close, SpanClose::kLost);
}

TEST(SpanTracker, PollBoundedIterationWhosePollWasLostClosesAtTheNextReturn) {
  Stats stats;
  SpanTracker tracker(&stats);
  tracker.Configure(StartWith({Role::kPollBegin, Role::kPollEnd}));
  Recorder rec;
  constexpr uint32_t kLoopSp = 0x7ffe0000;
  tracker.OnProbe(At(Role::kPollEnd, 100, kLoopSp), rec);
  tracker.OnProbe(At(Role::kPollBegin, 150, kLoopSp - 8), rec);
  tracker.OnProbe(At(Role::kPollEnd, 200, kLoopSp), rec);
  // poll.begin at 250 lost
  tracker.OnProbe(At(Role::kPollEnd, 300, kLoopSp), rec);
  tracker.OnProbe(At(Role::kPollBegin, 350, kLoopSp - 8), rec);
  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1].close, SpanClose::kLost);
  EXPECT_EQ(messages[2].close, SpanClose::kEnded);
  EXPECT_EQ(messages[2].depth, 0u);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 1u);
  EXPECT_TRUE(tracker.Open(kTid, SpanKind::kMessage).empty());
}

TEST(SpanTracker, ARepeatedPollEndBeginsOneIterationAfterEachPoll) {
  // libuv: the wait's end is marked before each I/O callback and once after the poll.
  Stats stats;
  SpanTracker tracker(&stats);
  SessionStart start = StartWith({Role::kDispatchBegin, Role::kDispatchEnd, Role::kPollBegin, Role::kPollEnd});
  start.message_definition = "poll-bounded";
  tracker.Configure(start);
  Recorder rec;
  constexpr uint32_t kIoPollSp = 0x7ffe0000;
  auto at = [&](Role role, uint64_t ts, std::vector<EventArg> args = {}) {
    tracker.OnProbe(At(role, ts, kIoPollSp, std::move(args)), rec);
  };
  at(Role::kPollBegin, 100);
  at(Role::kPollEnd, 200, {S("repeated", "yes")});  // the iteration begins
  at(Role::kDispatchBegin, 210, {S("name", "io: stream")});
  at(Role::kDispatchEnd, 300);
  at(Role::kPollEnd, 310, {S("repeated", "yes")});  // before the next callback: inside
  at(Role::kDispatchBegin, 320, {S("name", "io: accept")});
  at(Role::kDispatchEnd, 400);
  at(Role::kPollEnd, 410, {S("repeated", "yes")});  // after the poll: inside
  at(Role::kPollBegin, 500);                        // ends the iteration
  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].ArgText("name"), "io: stream");
  EXPECT_EQ(messages[0].depth, 1u);
  EXPECT_EQ(messages[1].ArgText("name"), "io: accept");
  EXPECT_EQ(messages[1].depth, 1u);
  EXPECT_EQ(messages[2].begin_ns, 200u);
  EXPECT_EQ(messages[2].end_ns, 500u);
  EXPECT_EQ(messages[2].depth, 0u);
  EXPECT_EQ(messages[2].close, SpanClose::kEnded);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 0u);
}

TEST(SpanTracker, TheEndOfAnOuterMessageClosesTheInnerOnesAsLost) {
  // No stack pointers needed: the end's id names an outer open message.
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kDispatchBegin, 100, {U("id", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchBegin, 110, {U("id", 2)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchBegin, 120, {U("id", 3)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchEnd, 130, {U("id", 1)}, kTid), rec);  // ends of 3 and 2 lost
  auto messages = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0].key, 3u);
  EXPECT_EQ(messages[0].close, SpanClose::kLost);
  EXPECT_EQ(messages[1].key, 2u);
  EXPECT_EQ(messages[1].close, SpanClose::kLost);
  EXPECT_EQ(messages[2].key, 1u);
  EXPECT_EQ(messages[2].close, SpanClose::kEnded);
  EXPECT_EQ(messages[2].end_ns, 130u);
  EXPECT_EQ(stats.Get(StatId::message_end_lost), 2u);
  EXPECT_EQ(stats.Get(StatId::dispatch_id_mismatch), 0u);
  EXPECT_TRUE(tracker.Open(kTid, SpanKind::kMessage).empty());
}

// Kinds without a rule of their own keep one open span per track: a begin while one is open
// closes that one as lost (and it is off its track when the listeners hear of it), an end
// with none open is ignored; tracks are per thread (idle, gc, ...), per key value (input
// seq, barrier token) or per process (launch).
TEST(SpanTracker, OtherKindsKeepOneOpenSpanPerTrack) {
  Stats stats;
  SpanTracker tracker(&stats);
  struct OpenChecker : Recorder {
    const SpanTracker* tracker = nullptr;
    void OnSpanEnd(Span& span) override {
      for (const Span* open : tracker->OpenAnywhere(span.kind)) EXPECT_NE(open->id, span.id);
      Recorder::OnSpanEnd(span);
    }
  } rec;
  rec.tracker = &tracker;
  tracker.OnProbe(Probe(Role::kIdleEnd, 50, {}, kTid), rec);  // none open: ignored
  tracker.OnProbe(Probe(Role::kIdleBegin, 100, {U("id", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kIdleBegin, 120, {U("id", 2)}, kTid), rec);  // 1's end lost
  tracker.OnProbe(Probe(Role::kGcBegin, 130, {}, kTid + 1), rec);
  tracker.OnProbe(Probe(Role::kGcBegin, 140, {}, kTid), rec);            // another thread's track
  tracker.OnProbe(Probe(Role::kIdleEnd, 150, {U("id", 9)}, kTid), rec);  // its id is not compared
  tracker.OnProbe(Probe(Role::kGcEnd, 160, {}, kTid + 1), rec);
  tracker.OnProbe(Probe(Role::kInputReceive, 200, {U("seq", 5)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kInputReceive, 210, {U("seq", 5)}, kTid + 1), rec);  // seq 5 again
  tracker.OnProbe(Probe(Role::kActivityLaunch, 300, {S("name", "A")}, kTid), rec);
  tracker.OnProbe(Probe(Role::kActivityLaunch, 310, {S("name", "B")}, kTid + 1), rec);  // one per process
  tracker.OnProbe(Probe(Role::kActivityFocus, 400, {S("name", "B")}, kTid + 2), rec);
  auto idles = rec.Ended(SpanKind::kIdle);
  ASSERT_EQ(idles.size(), 2u);
  EXPECT_EQ(idles[0].key, 1u);
  EXPECT_EQ(idles[0].close, SpanClose::kLost);
  EXPECT_EQ(idles[0].end_ns, 120u);
  EXPECT_EQ(idles[1].key, 2u);
  EXPECT_EQ(idles[1].close, SpanClose::kEnded);
  auto gcs = rec.Ended(SpanKind::kGc);
  ASSERT_EQ(gcs.size(), 1u);
  EXPECT_EQ(gcs[0].tid, kTid + 1);
  EXPECT_EQ(gcs[0].cost_ns(), 30u);
  ASSERT_NE(tracker.Innermost(kTid, SpanKind::kGc), nullptr);
  auto inputs = rec.Ended(SpanKind::kInput);
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0].close, SpanClose::kLost);
  EXPECT_EQ(inputs[0].tid, kTid);
  EXPECT_EQ(tracker.Open(kTid + 1, SpanKind::kInput).size(), 1u);
  auto launches = rec.Ended(SpanKind::kLaunch);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].close, SpanClose::kLost);
  EXPECT_EQ(launches[1].ArgText("name"), "B");
  EXPECT_EQ(launches[1].close, SpanClose::kEnded);
  EXPECT_EQ(launches[1].tid, kTid + 1);  // begun there, ended on another thread
  EXPECT_FALSE(stats.AnyNonZero());      // none of these is counted
}

// A phase belongs to the innermost frame open when it begins: a frame nested in it has
// phases of its own, and its end closes only its own open phase.
TEST(SpanTracker, PhasesStayWithTheFrameTheyBeganIn) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kFrameBegin, 100, {U("frame_id", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kPhaseBegin, 110, {U("phase", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kFrameBegin, 120, {U("frame_id", 2)}, kTid), rec);
  EXPECT_EQ(tracker.CurrentFrame(kTid), "frame 2");
  tracker.OnProbe(Probe(Role::kPhaseEnd, 125, {U("phase", 1)}, kTid), rec);  // frame 2 has none open
  tracker.OnProbe(Probe(Role::kPhaseBegin, 130, {U("phase", 3)}, kTid), rec);
  EXPECT_EQ(tracker.CurrentFrame(kTid), "frame 2 phase TRAVERSAL");
  EXPECT_EQ(tracker.Open(kTid, SpanKind::kPhase).size(), 2u);
  tracker.OnProbe(Probe(Role::kFrameEnd, 140, {U("frame_id", 2)}, kTid), rec);  // closes phase 3
  EXPECT_EQ(tracker.CurrentFrame(kTid), "frame 1 phase ANIMATION");
  tracker.OnProbe(Probe(Role::kPhaseEnd, 150, {U("phase", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kFrameEnd, 160, {U("frame_id", 1)}, kTid), rec);
  auto phases = rec.Ended(SpanKind::kPhase);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].key, 3u);
  EXPECT_EQ(phases[0].close, SpanClose::kLost);
  EXPECT_EQ(phases[0].end_ns, 140u);
  EXPECT_EQ(phases[1].key, 1u);
  EXPECT_EQ(phases[1].close, SpanClose::kEnded);
  EXPECT_EQ(phases[1].parent_id, rec.Ended(SpanKind::kFrame)[1].id);
  EXPECT_EQ(stats.Get(StatId::phase_end_without_begin), 1u);
  EXPECT_EQ(stats.Get(StatId::phase_unclosed), 1u);
  EXPECT_EQ(stats.Get(StatId::nested_frames), 1u);
}

// At the session's end open spans close as unfinished in one order: per thread (by tid),
// frames (their open phases as lost), messages (innermost first), the other per-thread kinds in
// SpanKind order; then spans paired by key, by kind and key; then the process's launch.
TEST(SpanTracker, TheSessionsEndClosesOpenSpansInOneOrder) {
  Stats stats;
  SpanTracker tracker(&stats);
  Recorder rec;
  tracker.OnProbe(Probe(Role::kActivityLaunch, 10, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kBarrierPost, 20, {U("token", 1)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kInputReceive, 30, {U("seq", 9)}, kTid), rec);
  tracker.OnProbe(Probe(Role::kInputReceive, 40, {U("seq", 8)}, kTid + 1), rec);
  tracker.OnProbe(Probe(Role::kLockWaitBegin, 50, {U("monitor", 7)}, kTid + 1), rec);
  tracker.OnProbe(Probe(Role::kGcBegin, 60, {}, kTid + 1), rec);
  tracker.OnProbe(Probe(Role::kAppCreateBegin, 70, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kIdleBegin, 80, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kPollBegin, 90, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchBegin, 100, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kDispatchBegin, 110, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kFrameBegin, 120, {}, kTid), rec);
  tracker.OnProbe(Probe(Role::kPhaseBegin, 130, {}, kTid), rec);
  tracker.Finish(1000, rec);
  std::vector<std::string> order;
  for (const auto& edge : rec.edges) {
    if (edge.begin) continue;
    // A phase still open when its frame closes is counted as unclosed (phase_unclosed).
    EXPECT_EQ(edge.span.close, edge.span.kind == SpanKind::kPhase ? SpanClose::kLost : SpanClose::kUnfinished);
    EXPECT_EQ(edge.span.end_ns, 1000u);
    order.push_back(fmt::format("{} {} {}", edge.span.tid, SpanKindName(edge.span.kind), edge.span.begin_ns));
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"10 phase 130", "10 frame 120", "10 message 110", "10 message 100", "10 poll 90",
                                      "10 idle 80", "10 app_create 70", "11 gc 60", "11 lock_wait 50", "11 input 40",
                                      "10 input 30", "10 barrier 20", "10 launch 10"}));
  EXPECT_EQ(stats.Get(StatId::unfinished_frames), 1u);
  EXPECT_EQ(stats.Get(StatId::unfinished_messages), 2u);
  EXPECT_EQ(stats.Get(StatId::phase_unclosed), 1u);
  for (int k = 0; k < kSpanKindCount; ++k)
    EXPECT_TRUE(tracker.OpenAnywhere(static_cast<SpanKind>(k)).empty()) << SpanKindName(static_cast<SpanKind>(k));
}

}  // namespace
}  // namespace looptrace

namespace looptrace {
namespace {

// Wait-bounded messages (a JVM's event dispatch thread without method probes): a switch-out
// parked in the wait frame ends the message, the wake-up from that wait begins the next; a
// switch-out parked elsewhere (a sleep inside the event), a preemption in the wait frame
// with no park, and switch-outs of a thread never seen waiting bound nothing.
TEST(SpanTracker, WaitBoundedMessagesRunFromAWakeUpInTheWaitFrameToTheNextWaitThere) {
  Stats stats;
  SpanTracker tracker(&stats);
  SessionStart start;
  start.message_definition = "wait-bounded app.Queue.next app.Lock.park";
  tracker.Configure(start);
  ASSERT_TRUE(tracker.wait_bounded());
  EXPECT_EQ(tracker.MessageDefinitionText(),
            "wait-bounded: a thread's messages bounded by its waits in app.Queue.next");
  Recorder rec;
  auto out = [&](uint64_t ts, std::vector<std::string> frames) {
    tracker.OnStackSample(StackSample{ts, kTid, false, std::move(frames), "", ""}, rec);
    tracker.OnSwitch(ThreadSwitch{ts, kTid, true, 1, {}, {}}, rec);
  };
  auto in = [&](uint64_t ts) { tracker.OnSwitch(ThreadSwitch{ts, kTid, false, 0, {}, {}}, rec); };
  const std::vector<std::string> waiting = {"futex_wait", "app.Lock.park (Lock.java)", "app.Queue.next (Queue.java:9)",
                                            "app.Loop.run (Loop.java:3)"};
  in(50);  // never seen waiting: running at attach, no message
  out(100, waiting);
  in(200);  // the wake-up: a message begins
  out(300, {"futex_wait", "app.Lock.park (Lock.java)", "app.Work.sleep (Work.java:4)", "app.Loop.run (Loop.java:4)"});
  in(400);  // back from a sleep inside the event: the same message
  // Preempted in the wait frame before parking: not a wait, but the thread had left the
  // event by then (the message ends there, at its next wait).
  tracker.OnStackSample(StackSample{450, kTid, false, {"app.Queue.next (Queue.java:8)"}, "", ""}, rec);
  tracker.OnSwitch(ThreadSwitch{450, kTid, true, 0, {}, {}}, rec);
  in(460);
  out(500, waiting);  // the next wait: the message ends
  // One drain: the samples first, then the switch records (the wake-ups before the waits):
  // two events, each its message.
  tracker.OnStackSample(StackSample{650, kTid, true, {"app.Work.run (Work.java:1)"}, "", ""}, rec);
  tracker.OnStackSample(StackSample{700, kTid, false, waiting, "", ""}, rec);
  tracker.OnStackSample(StackSample{800, kTid, false, waiting, "", ""}, rec);
  in(600);
  tracker.OnSwitch(ThreadSwitch{700, kTid, true, 1, {}, {}}, rec);
  in(750);
  tracker.OnSwitch(ThreadSwitch{800, kTid, true, 1, {}, {}}, rec);
  auto ended = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(ended.size(), 3u);
  EXPECT_EQ(ended[2].begin_ns, 750u);
  EXPECT_EQ(ended[2].end_ns, 800u);
  EXPECT_EQ(ended[0].begin_ns, 200u);
  EXPECT_EQ(ended[0].end_ns, 450u);
  EXPECT_EQ(ended[0].close, SpanClose::kEnded);
  EXPECT_EQ(ended[0].ArgText("name"), kEventMessageName);  // until its samples name it
  EXPECT_EQ(ended[1].begin_ns, 600u);
  EXPECT_EQ(ended[1].end_ns, 700u);
  EXPECT_EQ(stats.Get(StatId::unmatched_dispatch_end), 0u);
  EXPECT_EQ(stats.Get(StatId::messages_running_at_start), 0u);
}

// A wait-bounded message ends where the thread was first seen fetching its next event with
// no sample inside an event after it; events run back to back (fetched without a wait) stay
// one message, whatever an earlier fetch looked like.
TEST(SpanTracker, AWaitBoundedMessageEndsWhereTheThreadWasFirstSeenFetchingItsNextEvent) {
  Stats stats;
  SpanTracker tracker(&stats);
  SessionStart start;
  start.message_definition = "wait-bounded app.Queue.next app.Lock.park";
  tracker.Configure(start);
  Recorder rec;
  auto sample = [&](uint64_t ts, bool on_cpu, std::vector<std::string> frames) {
    tracker.OnStackSample(StackSample{ts, kTid, on_cpu, std::move(frames), "", ""}, rec);
  };
  auto sw = [&](uint64_t ts, bool off) { tracker.OnSwitch(ThreadSwitch{ts, kTid, off, off ? 1u : 0u, {}, {}}, rec); };
  const std::vector<std::string> waiting = {"futex_wait", "app.Lock.park (Lock.java)", "app.Queue.next (Queue.java:9)"};
  const std::vector<std::string> fetching = {"app.Queue.lock (Queue.java:4)", "app.Queue.next (Queue.java:7)"};
  const std::vector<std::string> working = {"app.Work.run (Work.java:1)", "app.Loop.run (Loop.java:3)"};
  sample(100, false, waiting);
  sw(100, true);
  sw(200, false);                // message 1 begins
  sample(300, true, working);    // in the event
  sample(400, false, fetching);  // preempted as it fetched the next one: left the event at 400
  sw(400, true);
  sw(450, false);
  sample(460, true, fetching);
  sample(500, false, waiting);
  sw(500, true);                // ends message 1 at 400
  sw(600, false);               // message 2 begins
  sample(650, true, fetching);  // fetched the next at once: a second event, back to back
  sample(700, true, working);
  sample(800, false, waiting);
  sw(800, true);  // ends message 2 at its wait: nothing fetching after the last in an event
  auto ended = rec.Ended(SpanKind::kMessage);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].begin_ns, 200u);
  EXPECT_EQ(ended[0].end_ns, 400u);
  EXPECT_EQ(ended[1].begin_ns, 600u);
  EXPECT_EQ(ended[1].end_ns, 800u);
}

}  // namespace
}  // namespace looptrace
