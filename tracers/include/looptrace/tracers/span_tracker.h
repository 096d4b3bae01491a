// SpanTracker: the one place where begin/end role events become spans (in the spirit of
// Perfetto's SliceTracker). Every tracer sees the same spans; nobody else pairs.
//
// Open spans live in one store, a stack per track: a span kind and the thread its spans run
// on, the value of its key argument (input seq, barrier token) or the process, as the kind's
// TrackScope says (roles.h). Which roles begin and end which kind, and the argument naming
// a span, come from the role table (roles.h, made from LT_ROLES in events.h). A track holds
// one open span: a begin closes the one still open as lost, an end closes the open one (none
// open: ignored). Kinds with rules of their own:
//  - message: dispatch.begin/end nest per thread (a loop run inside a message); an end on a
//    thread with nothing open closed a message that began before tracing (counted as info
//    before the thread's first begin, as a loss after). A profile with poll.begin/end but no
//    dispatch roles (or whose `messages poll-bounded` line says so) gets poll-bounded
//    messages: the busy time from a poll's return to the next poll call on the same thread
//    ("loop iterations"). There, dispatch.begin/end are named work inside an iteration
//    (Android's native handlers): nested messages; a poll inside one (a loop run by a
//    handler) opens nested iterations that end at the latest with the handler. A message
//    whose end record was lost would hold every later one nested in it: one that begins
//    no deeper on the thread's stack than an open one (same role, ProbeEvent::sp) closes
//    it as lost (message_end_lost); without stack pointers, at most kMaxOpenMessages stay
//    open per thread (message_nesting_capped).
//  - message, wait-bounded (a profile's `messages wait-bounded FRAME PARK...` line, for a
//    runtime with no probe on its dispatch: a JVM's event dispatch thread): a thread's
//    switch-out whose stack sample holds FRAME with a PARK frame inside it (the thread waits
//    for its next event there) ends its open message; the switch-in that ends that wait
//    begins the next. Waits elsewhere (a sleep, a lock, I/O inside an event) end nothing;
//    events run back to back without a wait are one message.
//  - frame: nested per thread, paired by frame_id when bound (else the innermost); frames
//    opened inside the one ending, or inside a message that ends, lost their end. Frames
//    without a bound frame_id are numbered 1, 2, ... in begin order.
//  - phase: one open per frame, in the innermost open frame of its thread; a frame's end
//    closes its open phase.
//  - launch: activity.focus also names the scene.
// At the session's end, open spans close as unfinished: per thread (in tid order) frames
// (an open phase as lost with its frame), then messages, innermost first, then the other
// per-thread kinds in SpanKind order; then keyed kinds, by kind and key; then the process's.
// Problems are counted in Stats, never dropped silently.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/roles.h"
#include "looptrace/tracers/thread_map.h"

namespace looptrace {

enum class SpanClose : uint8_t {
  kOpen,        // still running
  kEnded,       // its end role fired
  kLost,        // closed by an enclosing span's end (its own end never came)
  kUnfinished,  // still running at the end of the session (end = session end)
};

// How messages are defined for the session, said in the report.
enum class MessageDefinition : uint8_t {
  kDispatch,     // dispatch.begin -> dispatch.end
  kPollBounded,  // poll.end -> next poll.begin
  kWaitBounded,  // a wake-up from the wait for the next event -> that wait (stack samples)
  kNone,         // the profile maps neither
};
std::string_view MessageDefinitionName(MessageDefinition definition);

struct Span {
  uint64_t id = 0;  // 1, 2, ... in begin order (unique in the session)
  SpanKind kind = SpanKind::kMessage;
  uint32_t tid = 0;
  uint64_t key = 0;        // the key argument's value (RoleInfo::key); frames: else their number
  bool keyed = false;      // key came from the begin event's key argument (a message's bound id)
  uint32_t depth = 0;      // spans of the same kind open below it on the thread
  uint64_t parent_id = 0;  // phase: its frame
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t begin_beat_index = 0;  // method-beat ring heads at begin and end (live)
  uint64_t end_beat_index = 0;
  uint64_t begin_cpu_ns = 0;  // the thread's CPU time at begin and end (0 = unknown)
  uint64_t end_cpu_ns = 0;
  SpanClose close = SpanClose::kOpen;
  ProbeEvent begin;  // the event that opened it (its arguments: id, name, vsync_ns, ...)
  // The event that closed it, during OnSpanEnd only (null when lost or unfinished).
  const ProbeEvent* end_event = nullptr;
  // Method beats of the span, when a tracer asked for them (tracer.h) and they exist.
  const MethodBeats* beats = nullptr;

  uint64_t cost_ns() const { return end_ns > begin_ns ? end_ns - begin_ns : 0; }
  uint64_t cpu_ns() const { return begin_cpu_ns && end_cpu_ns >= begin_cpu_ns ? end_cpu_ns - begin_cpu_ns : 0; }
  bool ended() const { return close == SpanClose::kEnded; }
  // The begin event's argument value / text, if bound.
  std::optional<uint64_t> ArgValue(std::string_view name) const;
  std::string ArgText(std::string_view name) const;
};

class SpanListener {
 public:
  virtual ~SpanListener() = default;
  virtual void OnSpanBegin(const Span& span) = 0;
  // Non-const so the listener can attach method beats before passing it on.
  virtual void OnSpanEnd(Span& span) = 0;
};

// The open spans of one track, innermost last. Pop leaves the span in its slot until the
// next Push, so the tracker reports a span's end without copying it out of the stack while
// the tracers already see the stack without it (a span is a few hundred bytes and messages
// end at millions per second).
class SpanStack {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Span& back() { return slots_[size_ - 1]; }
  const Span& back() const { return slots_[size_ - 1]; }
  Span& operator[](size_t i) { return slots_[i]; }
  const Span& operator[](size_t i) const { return slots_[i]; }
  Span* begin() { return slots_.data(); }
  Span* end() { return slots_.data() + size_; }
  const Span* begin() const { return slots_.data(); }
  const Span* end() const { return slots_.data() + size_; }
  std::reverse_iterator<Span*> rbegin() { return std::reverse_iterator<Span*>(end()); }
  std::reverse_iterator<Span*> rend() { return std::reverse_iterator<Span*>(begin()); }

  // A slot for a new innermost span (its previous contents are stale: set every field).
  Span& Push() {
    if (size_ == slots_.size()) slots_.emplace_back();
    return slots_[size_++];
  }
  // The innermost span, no longer on the stack; valid until the next Push.
  Span& Pop() { return slots_[--size_]; }
  // The outermost span, no longer on the stack; valid until the next Push.
  Span& PopFront() {
    std::rotate(slots_.begin(), slots_.begin() + 1, slots_.begin() + static_cast<std::ptrdiff_t>(size_));
    return slots_[--size_];
  }

 private:
  std::vector<Span> slots_;
  size_t size_ = 0;
};

class SpanTracker {
 public:
  // Messages open at once on a thread, at most (nested loops are never this deep): a
  // message beginning beyond it closes the outermost as lost (message_nesting_capped).
  static constexpr size_t kMaxOpenMessages = 64;
  // Threads holding tracks before the first sweep (later: see HoldTracks).
  static constexpr size_t kMinSweep = 1024;

  explicit SpanTracker(Stats* stats) : stats_(stats) {}
  // A copy counts into `stats` (Pipeline::Snapshot).
  void RebindStats(Stats* stats) { stats_ = stats; }

  // The session's probes decide how messages are defined.
  void Configure(const SessionStart& start);
  void SetMessageDefinition(MessageDefinition definition) { definition_ = definition; }
  MessageDefinition message_definition() const { return definition_; }
  // The definition as the report says it: its name, and for wait-bounded messages where.
  std::string MessageDefinitionText() const;
  bool wait_bounded() const { return definition_ == MessageDefinition::kWaitBounded; }
  // Wait-bounded messages: a thread's stack samples and switches bound them.
  void OnStackSample(const StackSample& sample, SpanListener& listener);
  void OnSwitch(const ThreadSwitch& sw, SpanListener& listener);

  // Pairs one probe event; reports every span it opens or closes, in order. Dispatch
  // records (most records) take an inline path into the message's begin or end.
  void OnProbe(const ProbeEvent& event, SpanListener& listener) {
    if ((event.role == Role::kDispatchBegin || event.role == Role::kDispatchEnd) &&
        definition_ == MessageDefinition::kDispatch) [[likely]] {
      Thread& t = ThreadOf(event.tid);
      NoteMessageRecord(t, event);
      if (event.role == Role::kDispatchBegin)
        BeginMessage(t, event, listener);
      else
        EndMessage(t, event, /*expect_id=*/true, listener);
      return;
    }
    OnOtherProbe(event, listener);
  }
  // Closes every open span as unfinished at `end_ns`.
  void Finish(uint64_t end_ns, SpanListener& listener);

  // Open spans of a kind on a thread, outermost first (kinds paired by key: by key).
  std::vector<const Span*> Open(uint32_t tid, SpanKind kind) const;
  // The innermost open span of a kind on a thread, or null.
  const Span* Innermost(uint32_t tid, SpanKind kind) const;
  // Open spans of a kind on any thread, by tid.
  std::vector<const Span*> OpenAnywhere(SpanKind kind) const;
  // "frame 12" or "frame 12 phase TRAVERSAL" while a frame runs on the thread, else "".
  std::string CurrentFrame(uint32_t tid) const;
  // The activity focused last (Android's scene), "" before any.
  const std::string& scene() const { return scene_; }

 private:
  // A thread's tracks (the kinds of TrackScope::kThread), with what message pairing
  // remembers of it. Kept together, so a record finds its message stack and its thread's
  // frames with one lookup. The tracks are made when the thread's first record needs them and
  // given back by Sweep once none holds a span, so a session of many short-lived threads keeps
  // a few bytes per thread, not a span slot and a stack per kind.
  using Tracks = std::array<SpanStack, kSpanKindCount>;
  struct Thread {
    Thread() = default;
    Thread(const Thread& other) { *this = other; }
    Thread(Thread&&) noexcept = default;
    Thread& operator=(const Thread& other) {
      if (this == &other) return *this;
      last_message_ts = other.last_message_ts;
      began_message = other.began_message;
      began_dispatch = other.began_dispatch;
      polled = other.polled;
      waiting = other.waiting;
      tracks = other.tracks ? std::make_unique<Tracks>(*other.tracks) : nullptr;
      return *this;
    }
    Thread& operator=(Thread&&) noexcept = default;
    ~Thread() = default;

    // First: the record path reads them with the message stack, which follows.
    uint64_t last_message_ts = 0;    // events_out_of_order
    bool began_message = false;      // a message began on it (vs. one running at attach)
    bool began_dispatch = false;     // poll-bounded: a nested dispatch began on it
    bool polled = false;             // poll-bounded: a poll returned on it
    bool waiting = false;            // wait-bounded: off CPU in the wait for its next event
    std::unique_ptr<Tracks> tracks;  // by kind; other scopes' slots unused; null: none open

    // Mutable access: only after HoldTracks.
    SpanStack& operator[](SpanKind kind) { return (*tracks)[static_cast<size_t>(kind)]; }
    const SpanStack& operator[](SpanKind kind) const {
      static const SpanStack kNone;
      return tracks ? (*tracks)[static_cast<size_t>(kind)] : kNone;
    }
    SpanStack& messages() { return (*this)[SpanKind::kMessage]; }
    SpanStack& frames() { return (*this)[SpanKind::kFrame]; }
    bool HoldsNoSpan() const {
      return !tracks || std::all_of(tracks->begin(), tracks->end(), [](const SpanStack& s) { return s.empty(); });
    }
  };
  // The thread's entry with its tracks made. Inline: once per record.
  Thread& ThreadOf(uint32_t tid) {
    Thread& t = threads_[tid];
    if (!t.tracks) [[unlikely]]
      HoldTracks(t);
    return t;
  }
  // Makes `t`'s tracks; now and then first gives back those of threads with no open span.
  void HoldTracks(Thread& t);
  void Sweep();
  // The track of a kind threads share: (scope, kind, key value; 0 for the process's).
  // Ordered by scope first: keyed tracks end before the process's at the session's end.
  using SharedTrack = std::tuple<TrackScope, SpanKind, uint64_t>;

  // Sets every field of `s` for a span of `kind` that `e` opens. Inline: once per message.
  void Start(Span& s, SpanKind kind, const ProbeEvent& e, uint64_t key) {
    s.id = next_id_++;
    s.kind = kind;
    s.tid = e.tid;
    s.key = key;
    s.keyed = false;
    s.depth = 0;
    s.parent_id = 0;
    s.begin_ns = s.end_ns = e.ts_ns;
    s.begin_beat_index = s.end_beat_index = e.beat_index;
    s.begin_cpu_ns = e.thread_cpu_ns;
    s.end_cpu_ns = 0;
    s.close = SpanClose::kOpen;
    s.begin = e;
    s.end_event = nullptr;
    s.beats = nullptr;
  }
  void End(Span& span, const ProbeEvent& e, SpanClose close, SpanListener& listener);
  void EndAt(Span& span, uint64_t end_ns, SpanClose close, SpanListener& listener);

  // Every role but the dispatch records of the inline path.
  void OnOtherProbe(const ProbeEvent& event, SpanListener& listener);
  // One open span per track (the kinds without a rule of their own).
  void BeginOne(SpanStack& track, const RoleInfo& info, const ProbeEvent& e, SpanListener& listener);
  void EndOne(SpanStack& track, const ProbeEvent& e, SpanListener& listener);
  void OnSharedRole(const RoleInfo& info, const ProbeEvent& e, SpanListener& listener);

  // Messages.
  // A record bounding a message on `t`: counted when it comes before the last one.
  void NoteMessageRecord(Thread& t, const ProbeEvent& e) {
    if (e.ts_ns < t.last_message_ts) [[unlikely]]
      stats_->Add(StatId::events_out_of_order);
    t.last_message_ts = std::max(t.last_message_ts, e.ts_ns);
  }
  // Inline check: most messages begin with none open on their thread.
  void CloseLostMessages(Thread& t, const ProbeEvent& e, SpanListener& listener) {
    if (!t.messages().empty()) CloseMessagesBeside(t, e, listener);
  }
  void CloseMessagesBeside(Thread& t, const ProbeEvent& e, SpanListener& listener);
  void BeginMessage(Thread& t, const ProbeEvent& e, SpanListener& listener);
  void EndMessage(Thread& t, const ProbeEvent& e, bool expect_id, SpanListener& listener);
  void OnDispatchRole(Thread& t, const ProbeEvent& e, SpanListener& listener);
  void OnNestedDispatch(Thread& t, const ProbeEvent& e, SpanListener& listener);
  void OnPollRole(Thread& t, const ProbeEvent& e, SpanListener& listener);

  // Frames and their phases.
  void OnFrameRole(Thread& t, const ProbeEvent& e, SpanListener& listener);
  void OnPhaseRole(Thread& t, const ProbeEvent& e, SpanListener& listener);
  // Closes the innermost frame and its open phase; `e`: the frame's end event, if it came.
  void CloseFrame(Thread& t, const ProbeEvent* e, uint64_t end_ns, SpanClose close, SpanListener& listener);
  // Inline check: most threads have no frame open.
  void CloseFramesInside(Thread& t, const Span& message, uint64_t end_ns, SpanListener& listener) {
    if (!t.frames().empty()) CloseFramesBegunIn(t, message, end_ns, listener);
  }
  void CloseFramesBegunIn(Thread& t, const Span& message, uint64_t end_ns, SpanListener& listener);
  // The open phase of the thread's innermost frame, or null.
  static const Span* OpenPhase(const Thread& t);

  // Wait-bounded: whether a switch-out sample's frames (innermost first) show the wait.
  bool InEventWait(const std::vector<std::string>& frames) const;
  // Wait-bounded: whether a sample's frames show the thread fetching its next event (the wait
  // frame on its stack, parked or not).
  bool Fetching(const std::vector<std::string>& frames) const;
  // Wait-bounded: when the message of `tid` that began at `begin_ns` ended, given its wait at
  // `wait_ns`: the earliest sample that shows the thread fetching the next event after the
  // last that shows it in one, else the wait. Forgets the places up to the wait.
  uint64_t EndOfWaitBounded(uint32_t tid, uint64_t begin_ns, uint64_t wait_ns);

  Stats* stats_;
  // Wait-bounded: the frame a thread waits for its next event in, and the frames parking it.
  std::string wait_frame_;
  std::vector<std::string> park_frames_;
  // Wait-bounded: by thread, the times of switch-out samples in that wait whose switch records
  // have not come yet (a drain may hold several), oldest first.
  std::map<uint32_t, std::vector<uint64_t>> wait_samples_;
  // Wait-bounded: by thread, where its samples found it since its last wait (oldest first):
  // fetching its next event, or not.
  struct Place {
    uint64_t ts_ns;
    bool fetching;
  };
  std::map<uint32_t, std::vector<Place>> places_;
  MessageDefinition definition_ = MessageDefinition::kDispatch;
  uint64_t next_id_ = 1;
  uint64_t frames_seen_ = 0;
  // The store of open spans: every thread's tracks, and the tracks threads share.
  ThreadMap<Thread> threads_;
  size_t tracks_held_ = 0;       // threads whose tracks are made
  size_t sweep_at_ = kMinSweep;  // Sweep when HoldTracks would pass it
  std::map<SharedTrack, SpanStack> shared_;
  std::string scene_;
};

}  // namespace looptrace
