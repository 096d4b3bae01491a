#include "looptrace/tracers/span_tracker.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "looptrace/tracers/text_pool.h"

namespace looptrace {

std::string_view MessageDefinitionName(MessageDefinition definition) {
  switch (definition) {
    case MessageDefinition::kDispatch:
      return "dispatch";
    case MessageDefinition::kPollBounded:
      return "poll-bounded";
    case MessageDefinition::kWaitBounded:
      return "wait-bounded";
    case MessageDefinition::kNone:
      return "none";
  }
  return "none";
}

std::optional<uint64_t> Span::ArgValue(std::string_view name) const {
  if (const EventArg* arg = begin.Arg(name)) return arg->value;
  return std::nullopt;
}

std::string Span::ArgText(std::string_view name) const {
  const EventArg* arg = begin.Arg(name);
  return arg && arg->text ? *arg->text : "";
}

void SpanTracker::Configure(const SessionStart& start) {
  // `wait-bounded FRAME PARK...`: no probe needed, stack samples bound the messages.
  if (start.message_definition.starts_with("wait-bounded ")) {
    std::istringstream words(start.message_definition.substr(std::string_view("wait-bounded ").size()));
    wait_frame_.clear();
    park_frames_.clear();
    words >> wait_frame_;
    for (std::string w; words >> w;) park_frames_.push_back(w);
    if (!wait_frame_.empty() && !park_frames_.empty()) {
      definition_ = MessageDefinition::kWaitBounded;
      return;
    }
  }
  bool dispatch = false, poll = false;
  for (const auto& p : start.probes) {
    dispatch |= p.role == Role::kDispatchBegin;
    poll |= p.role == Role::kPollBegin;
  }
  // The profile's own `messages` line wins (a poll-bounded profile may name dispatches).
  if (start.message_definition == "poll-bounded" && poll)
    definition_ = MessageDefinition::kPollBounded;
  else if (start.message_definition == "dispatch" && dispatch)
    definition_ = MessageDefinition::kDispatch;
  else
    definition_ = dispatch ? MessageDefinition::kDispatch
                  : poll   ? MessageDefinition::kPollBounded
                           : MessageDefinition::kNone;
}

std::string SpanTracker::MessageDefinitionText() const {
  if (definition_ != MessageDefinition::kWaitBounded) return std::string(MessageDefinitionName(definition_));
  return fmt::format("wait-bounded: a thread's messages bounded by its waits in {}", wait_frame_);
}

void SpanTracker::EndAt(Span& span, uint64_t end_ns, SpanClose close, SpanListener& listener) {
  span.end_ns = std::max(end_ns, span.begin_ns);
  span.close = close;
  listener.OnSpanEnd(span);
}

void SpanTracker::End(Span& span, const ProbeEvent& e, SpanClose close, SpanListener& listener) {
  span.end_beat_index = e.beat_index;
  span.end_cpu_ns = e.thread_cpu_ns;
  span.end_event = &e;
  EndAt(span, e.ts_ns, close, listener);
  span.end_event = nullptr;
}

void SpanTracker::OnOtherProbe(const ProbeEvent& e, SpanListener& listener) {
  const RoleInfo& info = InfoOf(e.role);
  if (info.edge == RoleEdge::kBeat) return;  // beats: no spans
  Thread& t = ThreadOf(e.tid);
  if (info.edge == RoleEdge::kInstant) return;
  switch (info.span) {
    case SpanKind::kMessage:
      OnDispatchRole(t, e, listener);
      return;
    case SpanKind::kPoll:
      OnPollRole(t, e, listener);
      return;
    case SpanKind::kFrame:
      OnFrameRole(t, e, listener);
      return;
    case SpanKind::kPhase:
      OnPhaseRole(t, e, listener);
      return;
    case SpanKind::kLaunch:
      // The focused activity names the scene, whether or not a launch is open.
      if (e.role == Role::kActivityFocus)
        if (const EventArg* name = e.Arg("name"); name && name->text && !name->text->empty()) scene_ = *name->text;
      break;
    default:
      break;
  }
  if (ScopeOf(info.span) != TrackScope::kThread) {
    OnSharedRole(info, e, listener);
    return;
  }
  SpanStack& track = t[info.span];
  if (info.edge == RoleEdge::kBegin)
    BeginOne(track, info, e, listener);
  else
    EndOne(track, e, listener);
}

void SpanTracker::HoldTracks(Thread& t) {
  if (tracks_held_ >= sweep_at_) {
    Sweep();
    // Amortized: at least a sixteenth of the threads are made again before the next walk.
    sweep_at_ = std::max({kMinSweep, 2 * tracks_held_, tracks_held_ + threads_.size() / 16});
  }
  t.tracks = std::make_unique<Tracks>();
  ++tracks_held_;
}

void SpanTracker::Sweep() {
  // Only between records: no span of a swept thread is referenced (a popped span stays
  // valid until its thread's next Push, which needs its tracks made again).
  for (auto& [tid, t] : threads_) {
    if (t.tracks && t.HoldsNoSpan()) {
      t.tracks.reset();
      --tracks_held_;
    }
  }
}

// ---- One open span per track ----

void SpanTracker::BeginOne(SpanStack& track, const RoleInfo& info, const ProbeEvent& e, SpanListener& listener) {
  if (!track.empty()) EndAt(track.Pop(), e.ts_ns, SpanClose::kLost, listener);  // its end never came
  const EventArg* key = info.key.empty() ? nullptr : e.Arg(info.key);
  Span& s = track.Push();
  Start(s, info.span, e, key ? key->value : 0);
  s.keyed = key != nullptr;
  listener.OnSpanBegin(s);
}

void SpanTracker::EndOne(SpanStack& track, const ProbeEvent& e, SpanListener& listener) {
  if (!track.empty()) End(track.Pop(), e, SpanClose::kEnded, listener);
}

void SpanTracker::OnSharedRole(const RoleInfo& info, const ProbeEvent& e, SpanListener& listener) {
  const TrackScope scope = ScopeOf(info.span);
  uint64_t key = 0;
  if (scope == TrackScope::kKey)
    if (const EventArg* arg = e.Arg(info.key)) key = arg->value;
  const SharedTrack id{scope, info.span, key};
  if (info.edge == RoleEdge::kBegin) {
    BeginOne(shared_[id], info, e, listener);
    return;
  }
  auto it = shared_.find(id);
  if (it == shared_.end()) return;
  EndOne(it->second, e, listener);
  shared_.erase(it);  // keys are seldom reused: keep no empty track
}

// ---- Messages ----

namespace {

// Poll-bounded: an iteration is a message opened by a poll's return.
bool IsIteration(const Span& span) { return span.begin.role == Role::kPollEnd; }

// Whether `next` (a message beginning) is not nested in `open`, judged by the stack: a
// nested message begins deeper (a lower stack pointer) on the same thread, from inside the
// open one's code; one begun by the same loop after `open` ended begins at the same depth.
// Only begins of the same role compare (a dispatch inside a poll-bounded iteration, for
// example, is called from the frame that polled), and only within kSameStack bytes (a
// thread switching stacks, as fibers do, says nothing).
bool BeginsBeside(const Span& open, const ProbeEvent& next) {
  constexpr int32_t kSameStack = 64 * 1024;
  if (!open.begin.sp || !next.sp || open.begin.role != next.role) return false;
  const auto up = static_cast<int32_t>(next.sp - open.begin.sp);  // low halves: exact on one stack
  return up >= 0 && up < kSameStack;
}

}  // namespace

void SpanTracker::OnDispatchRole(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  NoteMessageRecord(t, e);
  if (definition_ == MessageDefinition::kPollBounded) {
    // Named work inside an iteration (a native handler): a nested message.
    OnNestedDispatch(t, e, listener);
    return;
  }
  if (e.role == Role::kDispatchBegin)
    BeginMessage(t, e, listener);
  else
    EndMessage(t, e, /*expect_id=*/true, listener);
}

void SpanTracker::OnNestedDispatch(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  if (e.role == Role::kDispatchBegin) {
    t.began_dispatch = true;
    BeginMessage(t, e, listener);
    return;
  }
  SpanStack& messages = t.messages();
  auto dispatch = std::find_if(messages.rbegin(), messages.rend(), [](const Span& s) { return !IsIteration(s); });
  if (dispatch == messages.rend()) {
    stats_->Add(t.began_dispatch ? StatId::unmatched_dispatch_end : StatId::messages_running_at_start);
    return;
  }
  // Iterations of a loop run inside the dispatch (a nested loop) end with it.
  while (!messages.empty() && IsIteration(messages.back())) {
    Span& iteration = messages.Pop();
    CloseFramesInside(t, iteration, e.ts_ns, listener);
    End(iteration, e, SpanClose::kEnded, listener);
  }
  EndMessage(t, e, /*expect_id=*/true, listener);
}

void SpanTracker::OnPollRole(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  const bool iterations = definition_ == MessageDefinition::kPollBounded;
  const RoleInfo& info = InfoOf(e.role);
  if (e.role == Role::kPollBegin) {
    if (iterations) {
      NoteMessageRecord(t, e);
      // The busy stretch since the last poll returned ends here; a poll inside a nested
      // dispatch (a loop run by a handler) ends nothing.
      if (!t.messages().empty()) {
        if (IsIteration(t.messages().back())) EndMessage(t, e, /*expect_id=*/false, listener);
      } else if (t.polled) {
        stats_->Add(StatId::unmatched_dispatch_end);  // the poll's return was lost
      } else {
        stats_->Add(StatId::messages_running_at_start);
      }
    }
    BeginOne(t[SpanKind::kPoll], info, e, listener);
    return;
  }
  // A `repeated` poll end is a point the loop passes again after the wait's end, inside the
  // iteration (libuv's uv__metrics_update_idle_time, before each I/O callback and once after
  // the poll): only its first hit after a poll begins an iteration. (A poll.end without it and
  // without an open poll says the poll's begin was lost, and begins one all the same.)
  if (iterations && t[SpanKind::kPoll].empty() && !t.messages().empty() && e.Arg("repeated")) return;
  EndOne(t[SpanKind::kPoll], e, listener);
  if (iterations) {
    t.polled = true;
    BeginMessage(t, e, listener);
  }
}

void SpanTracker::CloseMessagesBeside(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  SpanStack& messages = t.messages();
  // Open messages the new one does not nest in ended without their end record.
  while (!messages.empty() && BeginsBeside(messages.back(), e)) {
    Span& message = messages.Pop();
    stats_->Add(StatId::message_end_lost);
    CloseFramesInside(t, message, e.ts_ns, listener);
    EndAt(message, e.ts_ns, SpanClose::kLost, listener);
  }
  // Without stack pointers (old recordings): a bound, so a lost end cannot keep a message
  // (and all it holds in the tracers) open for the rest of the session.
  while (messages.size() >= kMaxOpenMessages) {
    Span& message = messages.PopFront();
    stats_->Add(StatId::message_nesting_capped);
    EndAt(message, e.ts_ns, SpanClose::kLost, listener);
  }
}

void SpanTracker::BeginMessage(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  CloseLostMessages(t, e, listener);
  SpanStack& messages = t.messages();
  const uint32_t depth = static_cast<uint32_t>(messages.size());
  Span& s = messages.Push();
  Start(s, SpanKind::kMessage, e, 0);
  static_assert(InfoOf(Role::kDispatchBegin).key == "id");
  if (const EventArg* id = e.Arg("id")) {
    s.key = id->value;
    s.keyed = true;
  }
  s.depth = depth;
  t.began_message = true;
  listener.OnSpanBegin(s);
}

void SpanTracker::EndMessage(Thread& t, const ProbeEvent& e, bool expect_id, SpanListener& listener) {
  SpanStack& messages = t.messages();
  if (messages.empty()) {
    // Before the thread's first begin, an end closes a message that began before tracing.
    stats_->Add(t.began_message ? StatId::unmatched_dispatch_end : StatId::messages_running_at_start);
    return;
  }
  auto ends = [](const Span& s, uint64_t id) { return s.begin.role == Role::kDispatchBegin && s.keyed && s.key == id; };
  static_assert(InfoOf(Role::kDispatchEnd).key == "id");
  const EventArg* id = expect_id ? e.Arg("id") : nullptr;
  if (id && messages.back().keyed && !ends(messages.back(), id->value)) {
    // The end of an outer open message: the ones inside it lost their ends.
    auto outer = std::find_if(messages.rbegin(), messages.rend(), [&](const Span& s) { return ends(s, id->value); });
    if (outer != messages.rend()) {
      const size_t keep = messages.size() - static_cast<size_t>(outer - messages.rbegin());
      while (messages.size() > keep) {
        Span& inner = messages.Pop();
        stats_->Add(StatId::message_end_lost);
        CloseFramesInside(t, inner, e.ts_ns, listener);
        EndAt(inner, e.ts_ns, SpanClose::kLost, listener);
      }
    } else {
      stats_->Add(StatId::dispatch_id_mismatch);
    }
  }
  Span& message = messages.Pop();
  // A frame cannot outlive the message it began in: its end was lost.
  CloseFramesInside(t, message, e.ts_ns, listener);
  End(message, e, SpanClose::kEnded, listener);
}

// ---- Frames and phases ----

const Span* SpanTracker::OpenPhase(const Thread& t) {
  const SpanStack& frames = t[SpanKind::kFrame];
  const SpanStack& phases = t[SpanKind::kPhase];
  if (frames.empty() || phases.empty() || phases.back().parent_id != frames.back().id) return nullptr;
  return &phases.back();
}

void SpanTracker::CloseFramesBegunIn(Thread& t, const Span& message, uint64_t end_ns, SpanListener& listener) {
  auto inside = [&](uint64_t ts) { return ts >= message.begin_ns && (ts < end_ns || ts == message.begin_ns); };
  while (!t.frames().empty() && inside(t.frames().back().begin_ns)) {
    stats_->Add(StatId::frame_end_lost);
    CloseFrame(t, nullptr, end_ns, SpanClose::kLost, listener);
  }
}

void SpanTracker::CloseFrame(Thread& t, const ProbeEvent* e, uint64_t end_ns, SpanClose close, SpanListener& listener) {
  const bool phase_open = OpenPhase(t) != nullptr;
  Span& frame = t.frames().Pop();
  if (phase_open) {
    stats_->Add(StatId::phase_unclosed);
    EndAt(t[SpanKind::kPhase].Pop(), end_ns, SpanClose::kLost, listener);
  }
  if (e)
    End(frame, *e, close, listener);
  else
    EndAt(frame, end_ns, close, listener);
}

void SpanTracker::OnFrameRole(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  SpanStack& frames = t.frames();
  const EventArg* id = e.Arg(InfoOf(e.role).key);  // frame_id
  if (e.role == Role::kFrameBegin) {
    ++frames_seen_;
    if (!frames.empty()) stats_->Add(StatId::nested_frames);
    const auto depth = static_cast<uint32_t>(frames.size());
    Span& frame = frames.Push();
    Start(frame, SpanKind::kFrame, e, id ? id->value : frames_seen_);
    frame.keyed = id != nullptr;
    frame.depth = depth;
    listener.OnSpanBegin(frame);
    return;
  }
  if (frames.empty()) {
    stats_->Add(StatId::frame_end_without_begin);
    return;
  }
  size_t index = frames.size() - 1;
  if (id) {
    bool found = false;
    for (size_t i = frames.size(); i-- > 0;) {
      if (frames[i].key == id->value) {
        index = i;
        found = true;
        break;
      }
    }
    if (!found) stats_->Add(StatId::frame_id_mismatch);
  }
  // Frames opened inside the one ending now lost their end.
  while (frames.size() - 1 > index) {
    stats_->Add(StatId::frame_end_lost);
    CloseFrame(t, nullptr, e.ts_ns, SpanClose::kLost, listener);
  }
  CloseFrame(t, &e, e.ts_ns, SpanClose::kEnded, listener);
}

void SpanTracker::OnPhaseRole(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  if (t.frames().empty()) {
    stats_->Add(StatId::phase_without_frame);
    return;
  }
  // A thread's open phases, one per frame at most, stack as their frames do.
  SpanStack& phases = t[SpanKind::kPhase];
  const bool open = OpenPhase(t) != nullptr;
  const EventArg* phase = e.Arg(InfoOf(e.role).key);  // phase
  if (e.role == Role::kPhaseBegin) {
    if (open) {
      stats_->Add(StatId::phase_unclosed);
      EndAt(phases.Pop(), e.ts_ns, SpanClose::kLost, listener);
    }
    Span& s = phases.Push();
    Start(s, SpanKind::kPhase, e, phase ? phase->value : 0);
    s.keyed = phase != nullptr;
    s.parent_id = t.frames().back().id;
    listener.OnSpanBegin(s);
    return;
  }
  if (!open) {
    stats_->Add(StatId::phase_end_without_begin);
    return;
  }
  if (phase && phase->value != phases.back().key) stats_->Add(StatId::phase_mismatch);
  End(phases.Pop(), e, SpanClose::kEnded, listener);
}

// ---- Queries and the end ----

void SpanTracker::Finish(uint64_t end_ns, SpanListener& listener) {
  for (auto& [tid, t] : threads_) {
    if (!t.tracks) continue;
    while (!t.frames().empty()) {
      stats_->Add(StatId::unfinished_frames);
      CloseFrame(t, nullptr, end_ns, SpanClose::kUnfinished, listener);
    }
    while (!t.messages().empty()) {
      stats_->Add(StatId::unfinished_messages);
      EndAt(t.messages().Pop(), end_ns, SpanClose::kUnfinished, listener);
    }
    for (SpanStack& track : *t.tracks)  // one open span each at most
      while (!track.empty()) EndAt(track.Pop(), end_ns, SpanClose::kUnfinished, listener);
  }
  for (auto& [id, track] : shared_)
    while (!track.empty()) EndAt(track.Pop(), end_ns, SpanClose::kUnfinished, listener);
  shared_.clear();
}

std::vector<const Span*> SpanTracker::Open(uint32_t tid, SpanKind kind) const {
  std::vector<const Span*> out;
  const Thread* t = threads_.Find(tid);
  if (!t) return out;
  if (ScopeOf(kind) == TrackScope::kThread) {
    for (const Span& s : (*t)[kind]) out.push_back(&s);
    return out;
  }
  for (const auto& [id, track] : shared_)
    if (std::get<SpanKind>(id) == kind)
      for (const Span& s : track)
        if (s.tid == tid) out.push_back(&s);
  return out;
}

std::vector<const Span*> SpanTracker::OpenAnywhere(SpanKind kind) const {
  std::vector<const Span*> out;
  for (const auto& [tid, t] : threads_)
    for (const Span* s : Open(tid, kind)) out.push_back(s);
  return out;
}

const Span* SpanTracker::Innermost(uint32_t tid, SpanKind kind) const {
  // A thread's tracks directly: asked at every message's end, where building the list of
  // Open() would allocate.
  if (ScopeOf(kind) == TrackScope::kThread) {
    const Thread* t = threads_.Find(tid);
    if (!t || (*t)[kind].empty()) return nullptr;
    return &(*t)[kind].back();
  }
  auto open = Open(tid, kind);
  return open.empty() ? nullptr : open.back();
}

std::string SpanTracker::CurrentFrame(uint32_t tid) const {
  const Thread* t = threads_.Find(tid);
  if (!t || (*t)[SpanKind::kFrame].empty()) return "";
  std::string text = fmt::format("frame {}", (*t)[SpanKind::kFrame].back().key);
  if (const Span* phase = OpenPhase(*t)) text += " phase " + PhaseName(static_cast<uint32_t>(phase->key));
  return text;
}

}  // namespace looptrace

namespace looptrace {

// ---- Wait-bounded messages ----

namespace {

// "java.awt.EventQueue.getNextEvent (EventQueue.java:566)" is a frame of
// java.awt.EventQueue.getNextEvent: the name, then its file, a signature or nothing.
bool FrameIs(std::string_view frame, std::string_view function) {
  return frame.starts_with(function) &&
         (frame.size() == function.size() || frame[function.size()] == ' ' || frame[function.size()] == '(');
}

}  // namespace

bool SpanTracker::InEventWait(const std::vector<std::string>& frames) const {
  bool parked = false;
  for (const std::string& frame : frames) {
    if (FrameIs(frame, wait_frame_)) return parked;
    if (!parked)
      parked = std::any_of(park_frames_.begin(), park_frames_.end(),
                           [&](const std::string& park) { return FrameIs(frame, park); });
  }
  return false;
}

bool SpanTracker::Fetching(const std::vector<std::string>& frames) const {
  return std::any_of(frames.begin(), frames.end(),
                     [&](const std::string& frame) { return FrameIs(frame, wait_frame_); });
}

void SpanTracker::OnStackSample(const StackSample& sample, SpanListener& listener) {
  (void)listener;
  // Noted only: a drain hands over a thread's samples before its switch records (events.h),
  // so the switch-in that began the message may still come (and the next message may have
  // run and waited too). The switch-out record of this sample (the same time) ends the
  // message, in the thread's own order.
  constexpr size_t kMaxPendingWaits = 64;
  constexpr size_t kMaxPlaces = 256;
  if (!sample.on_cpu && InEventWait(sample.frames)) {
    std::vector<uint64_t>& pending = wait_samples_[sample.tid];
    if (pending.size() == kMaxPendingWaits) pending.erase(pending.begin());  // its switch record was lost
    pending.push_back(sample.ts_ns);
  }
  // Where a thread that waits for events was, for the end of its message (EndOfWaitBounded).
  const Thread* thread = threads_.Find(sample.tid);
  if (!wait_samples_.contains(sample.tid) && !(thread && (thread->waiting || thread->began_message))) return;
  std::vector<Place>& places = places_[sample.tid];
  if (places.size() == kMaxPlaces) places.erase(places.begin());
  const Place place{sample.ts_ns, Fetching(sample.frames)};
  places.insert(std::upper_bound(places.begin(), places.end(), place,
                                 [](const Place& a, const Place& b) { return a.ts_ns < b.ts_ns; }),
                place);
}

uint64_t SpanTracker::EndOfWaitBounded(uint32_t tid, uint64_t begin_ns, uint64_t wait_ns) {
  auto found = places_.find(tid);
  if (found == places_.end()) return wait_ns;
  std::vector<Place>& places = found->second;
  // The earliest sample fetching the next event with none inside an event after it: the
  // thread left the event by then (a preemption or a safepoint before it parked, or a
  // sample as it fetched, must not lengthen the message).
  std::optional<uint64_t> left;
  auto place = places.begin();
  for (; place != places.end() && place->ts_ns <= wait_ns; ++place) {
    if (place->ts_ns < begin_ns) continue;
    if (!place->fetching)
      left.reset();
    else if (!left)
      left = place->ts_ns;
  }
  places.erase(places.begin(), place);
  if (places.empty()) places_.erase(found);
  return left.value_or(wait_ns);
}

void SpanTracker::OnSwitch(const ThreadSwitch& sw, SpanListener& listener) {
  if (sw.off_cpu) {
    auto pending = wait_samples_.find(sw.tid);
    if (pending == wait_samples_.end()) return;
    std::vector<uint64_t>& times = pending->second;
    const auto past = std::upper_bound(times.begin(), times.end(), sw.ts_ns);
    const bool in_wait = past != times.begin() && *std::prev(past) == sw.ts_ns;
    times.erase(times.begin(), past);
    if (times.empty()) wait_samples_.erase(pending);
    if (!in_wait) return;  // a wait elsewhere, or a preemption
    Thread& thread = ThreadOf(sw.tid);
    if (thread.waiting) return;
    thread.waiting = true;
    const uint64_t begin_ns = thread.messages().empty() ? 0 : thread.messages().back().begin_ns;
    const uint64_t end_ns = EndOfWaitBounded(sw.tid, begin_ns, sw.ts_ns);
    if (thread.messages().empty()) return;  // the first wait seen: no message yet
    ProbeEvent end(end_ns, 0, sw.tid, Role::kDispatchEnd, 0, 0, 0, 0);
    NoteMessageRecord(thread, end);
    EndMessage(thread, end, /*expect_id=*/false, listener);
    return;
  }
  Thread* t = threads_.Find(sw.tid);
  if (!t || !t->waiting) return;
  t->waiting = false;
  Thread& thread = ThreadOf(sw.tid);
  ProbeEvent begin(sw.ts_ns, 0, sw.tid, Role::kDispatchBegin, 0, 0, 0, 0);
  // Named by the code its samples find (Pipeline::NameByCallable), else kEventMessageName.
  EventArg* name = begin.args.Grow(1);
  *name = EventArg{"name", 0, TextPool::Intern(kEventMessageName), true};
  NoteMessageRecord(thread, begin);
  BeginMessage(thread, begin, listener);
}

}  // namespace looptrace
