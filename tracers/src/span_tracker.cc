#include "looptrace/tracers/span_tracker.h"

#include <fmt/format.h>

#include <algorithm>

namespace looptrace {

std::string_view MessageDefinitionName(MessageDefinition definition) {
  switch (definition) {
    case MessageDefinition::kDispatch:
      return "dispatch";
    case MessageDefinition::kPollBounded:
      return "poll-bounded";
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

namespace {

// Poll-bounded: an iteration is a message opened by a poll's return.
bool IsIteration(const Span& span) { return span.begin.role == Role::kPollEnd; }

}  // namespace

void SpanTracker::OnNestedDispatch(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  if (e.role == Role::kDispatchBegin) {
    t.began_dispatch = true;
    BeginMessage(t, e, listener);
    return;
  }
  auto dispatch = std::find_if(t.messages.rbegin(), t.messages.rend(), [](const Span& s) { return !IsIteration(s); });
  if (dispatch == t.messages.rend()) {
    stats_->Add(t.began_dispatch ? StatId::unmatched_dispatch_end : StatId::messages_running_at_start);
    return;
  }
  // Iterations of a loop run inside the dispatch (a nested loop) end with it.
  while (!t.messages.empty() && IsIteration(t.messages.back())) {
    Span& iteration = t.messages.Pop();
    CloseFramesInside(t, iteration, e.ts_ns, listener);
    End(iteration, e, SpanClose::kEnded, listener);
  }
  EndMessage(t, e, /*expect_id=*/true, listener);
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

namespace {

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

void SpanTracker::CloseMessagesBeside(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  // Open messages the new one does not nest in ended without their end record.
  while (!t.messages.empty() && BeginsBeside(t.messages.back(), e)) {
    Span& message = t.messages.Pop();
    stats_->Add(StatId::message_end_lost);
    CloseFramesInside(t, message, e.ts_ns, listener);
    EndAt(message, e.ts_ns, SpanClose::kLost, listener);
  }
  // Without stack pointers (old recordings): a bound, so a lost end cannot keep a message
  // (and all it holds in the tracers) open for the rest of the session.
  while (t.messages.size() >= kMaxOpenMessages) {
    Span& message = t.messages.PopFront();
    stats_->Add(StatId::message_nesting_capped);
    EndAt(message, e.ts_ns, SpanClose::kLost, listener);
  }
}

void SpanTracker::BeginMessage(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  CloseLostMessages(t, e, listener);
  const uint32_t depth = static_cast<uint32_t>(t.messages.size());
  Span& s = t.messages.Push();
  Start(s, SpanKind::kMessage, e, 0);
  if (const EventArg* id = e.Arg("id")) {
    s.key = id->value;
    s.keyed = true;
  }
  s.depth = depth;
  t.began_message = true;
  listener.OnSpanBegin(s);
}

void SpanTracker::EndMessage(Thread& t, const ProbeEvent& e, bool expect_id, SpanListener& listener) {
  if (t.messages.empty()) {
    // Before the thread's first begin, an end closes a message that began before tracing.
    stats_->Add(t.began_message ? StatId::unmatched_dispatch_end : StatId::messages_running_at_start);
    return;
  }
  auto ends = [](const Span& s, uint64_t id) { return s.begin.role == Role::kDispatchBegin && s.keyed && s.key == id; };
  const EventArg* id = expect_id ? e.Arg("id") : nullptr;
  if (id && t.messages.back().keyed && !ends(t.messages.back(), id->value)) {
    // The end of an outer open message: the ones inside it lost their ends.
    auto outer =
        std::find_if(t.messages.rbegin(), t.messages.rend(), [&](const Span& s) { return ends(s, id->value); });
    if (outer != t.messages.rend()) {
      const size_t keep = t.messages.size() - static_cast<size_t>(outer - t.messages.rbegin());
      while (t.messages.size() > keep) {
        Span& inner = t.messages.Pop();
        stats_->Add(StatId::message_end_lost);
        CloseFramesInside(t, inner, e.ts_ns, listener);
        EndAt(inner, e.ts_ns, SpanClose::kLost, listener);
      }
    } else {
      stats_->Add(StatId::dispatch_id_mismatch);
    }
  }
  Span& message = t.messages.Pop();
  // A frame cannot outlive the message it began in: its end was lost.
  CloseFramesInside(t, message, e.ts_ns, listener);
  End(message, e, SpanClose::kEnded, listener);
}

void SpanTracker::CloseFramesBegunIn(Thread& t, const Span& message, uint64_t end_ns, SpanListener& listener) {
  auto inside = [&](uint64_t ts) { return ts >= message.begin_ns && (ts < end_ns || ts == message.begin_ns); };
  while (!t.frames.empty() && inside(t.frames.back().frame.begin_ns)) {
    stats_->Add(StatId::frame_end_lost);
    CloseFrame(t, end_ns, SpanClose::kLost, listener);
  }
}

void SpanTracker::CloseFrame(Thread& t, uint64_t end_ns, SpanClose close, SpanListener& listener) {
  OpenFrame open = std::move(t.frames.back());
  t.frames.pop_back();
  if (open.phase) {
    stats_->Add(StatId::phase_unclosed);
    EndAt(*open.phase, end_ns, SpanClose::kLost, listener);
  }
  EndAt(open.frame, end_ns, close, listener);
}

void SpanTracker::OnFrameRole(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  const EventArg* id = e.Arg("frame_id");
  if (e.role == Role::kFrameBegin) {
    ++frames_seen_;
    if (!t.frames.empty()) stats_->Add(StatId::nested_frames);
    Span frame = Begin(SpanKind::kFrame, e, id ? id->value : frames_seen_);
    frame.depth = static_cast<uint32_t>(t.frames.size());
    t.frames.push_back({std::move(frame), std::nullopt});
    listener.OnSpanBegin(t.frames.back().frame);
    return;
  }
  if (t.frames.empty()) {
    stats_->Add(StatId::frame_end_without_begin);
    return;
  }
  size_t index = t.frames.size() - 1;
  if (id) {
    bool found = false;
    for (size_t i = t.frames.size(); i-- > 0;) {
      if (t.frames[i].frame.key == id->value) {
        index = i;
        found = true;
        break;
      }
    }
    if (!found) stats_->Add(StatId::frame_id_mismatch);
  }
  // Frames opened inside the one ending now lost their end.
  while (t.frames.size() - 1 > index) {
    stats_->Add(StatId::frame_end_lost);
    CloseFrame(t, e.ts_ns, SpanClose::kLost, listener);
  }
  Span& frame = t.frames.back().frame;
  frame.end_beat_index = e.beat_index;
  frame.end_cpu_ns = e.thread_cpu_ns;
  frame.end_event = &e;
  CloseFrame(t, e.ts_ns, SpanClose::kEnded, listener);
}

void SpanTracker::OnPhaseRole(Thread& t, const ProbeEvent& e, SpanListener& listener) {
  if (t.frames.empty()) {
    stats_->Add(StatId::phase_without_frame);
    return;
  }
  OpenFrame& f = t.frames.back();
  const EventArg* phase = e.Arg("phase");
  if (e.role == Role::kPhaseBegin) {
    if (f.phase) {
      stats_->Add(StatId::phase_unclosed);
      EndAt(*f.phase, e.ts_ns, SpanClose::kLost, listener);
    }
    Span s = Begin(SpanKind::kPhase, e, phase ? phase->value : 0);
    s.parent_id = f.frame.id;
    f.phase = std::move(s);
    listener.OnSpanBegin(*f.phase);
    return;
  }
  if (!f.phase) {
    stats_->Add(StatId::phase_end_without_begin);
    return;
  }
  if (phase && phase->value != f.phase->key) stats_->Add(StatId::phase_mismatch);
  Span s = std::move(*f.phase);
  f.phase.reset();
  End(s, e, SpanClose::kEnded, listener);
}

SpanTracker::Thread& SpanTracker::ThreadOf(uint32_t tid) { return threads_[tid]; }

void SpanTracker::OnOtherProbe(const ProbeEvent& e, SpanListener& listener) {
  if (e.role == Role::kMethodEnter || e.role == Role::kMethodExit) return;  // beats: no spans
  Thread& t = ThreadOf(e.tid);
  auto key = [&](std::string_view name) -> uint64_t {
    const EventArg* a = e.Arg(name);
    return a ? a->value : 0;
  };
  switch (e.role) {
    case Role::kDispatchBegin:
    case Role::kDispatchEnd:
      NoteMessageRecord(t, e);
      if (definition_ == MessageDefinition::kPollBounded) {
        // Named work inside an iteration (a native handler): a nested message.
        OnNestedDispatch(t, e, listener);
        break;
      }
      if (e.role == Role::kDispatchBegin)
        BeginMessage(t, e, listener);
      else
        EndMessage(t, e, /*expect_id=*/true, listener);
      break;
    case Role::kPollBegin:
      if (definition_ == MessageDefinition::kPollBounded) {
        NoteMessageRecord(t, e);
        // The busy stretch since the last poll returned ends here; a poll inside a nested
        // dispatch (a loop run by a handler) ends nothing.
        if (!t.messages.empty()) {
          if (IsIteration(t.messages.back())) EndMessage(t, e, /*expect_id=*/false, listener);
        } else if (t.polled) {
          stats_->Add(StatId::unmatched_dispatch_end);  // the poll's return was lost
        } else {
          stats_->Add(StatId::messages_running_at_start);
        }
      }
      if (t.poll) EndAt(*t.poll, e.ts_ns, SpanClose::kLost, listener);
      t.poll = Begin(SpanKind::kPoll, e, 0);
      listener.OnSpanBegin(*t.poll);
      break;
    case Role::kPollEnd:
      if (t.poll) {
        Span poll = std::move(*t.poll);
        t.poll.reset();
        End(poll, e, SpanClose::kEnded, listener);
      }
      if (definition_ == MessageDefinition::kPollBounded) {
        t.polled = true;
        BeginMessage(t, e, listener);
      }
      break;
    case Role::kFrameBegin:
    case Role::kFrameEnd:
      OnFrameRole(t, e, listener);
      break;
    case Role::kPhaseBegin:
    case Role::kPhaseEnd:
      OnPhaseRole(t, e, listener);
      break;
    case Role::kIdleBegin:
      if (t.idle) EndAt(*t.idle, e.ts_ns, SpanClose::kLost, listener);
      t.idle = Begin(SpanKind::kIdle, e, key("id"));
      listener.OnSpanBegin(*t.idle);
      break;
    case Role::kIdleEnd:
      if (t.idle) {
        Span idle = std::move(*t.idle);
        t.idle.reset();
        End(idle, e, SpanClose::kEnded, listener);
      }
      break;
    case Role::kAppCreateBegin:
    case Role::kGcBegin:
    case Role::kLockWaitBegin: {
      auto& open = e.role == Role::kAppCreateBegin ? t.app_create : e.role == Role::kGcBegin ? t.gc : t.lock_wait;
      if (open) EndAt(*open, e.ts_ns, SpanClose::kLost, listener);
      open = Begin(InfoOf(e.role).span, e, e.role == Role::kLockWaitBegin ? key("monitor") : 0);
      listener.OnSpanBegin(*open);
      break;
    }
    case Role::kAppCreateEnd:
    case Role::kGcEnd:
    case Role::kLockWaitEnd: {
      auto& open = e.role == Role::kAppCreateEnd ? t.app_create : e.role == Role::kGcEnd ? t.gc : t.lock_wait;
      if (open) {
        Span span = std::move(*open);
        open.reset();
        End(span, e, SpanClose::kEnded, listener);
      }
      break;
    }
    case Role::kInputReceive:
    case Role::kBarrierPost: {
      const RoleInfo& info = InfoOf(e.role);
      auto& open = e.role == Role::kInputReceive ? inputs_ : barriers_;
      const uint64_t k = key(info.key);
      if (auto it = open.find(k); it != open.end()) {
        EndAt(it->second, e.ts_ns, SpanClose::kLost, listener);
        open.erase(it);
      }
      auto [it, added] = open.emplace(k, Begin(info.span, e, k));
      listener.OnSpanBegin(it->second);
      break;
    }
    case Role::kInputFinish:
    case Role::kBarrierRemove: {
      const RoleInfo& info = InfoOf(e.role);
      auto& open = e.role == Role::kInputFinish ? inputs_ : barriers_;
      auto it = open.find(key(info.key));
      if (it == open.end()) break;
      Span span = std::move(it->second);
      open.erase(it);
      End(span, e, SpanClose::kEnded, listener);
      break;
    }
    case Role::kActivityLaunch:
      if (launch_) EndAt(*launch_, e.ts_ns, SpanClose::kLost, listener);
      launch_ = Begin(SpanKind::kLaunch, e, 0);
      listener.OnSpanBegin(*launch_);
      break;
    case Role::kActivityFocus: {
      if (const EventArg* name = e.Arg("name"); name && name->text && !name->text->empty()) scene_ = *name->text;
      if (launch_) {
        Span span = std::move(*launch_);
        launch_.reset();
        End(span, e, SpanClose::kEnded, listener);
      }
      break;
    }
    default:
      break;  // instants: vsync, message.enqueue, fully.drawn
  }
}

void SpanTracker::Finish(uint64_t end_ns, SpanListener& listener) {
  for (auto& [tid, t] : threads_) {
    while (!t.frames.empty()) {
      stats_->Add(StatId::unfinished_frames);
      CloseFrame(t, end_ns, SpanClose::kUnfinished, listener);
    }
    while (!t.messages.empty()) {
      Span& message = t.messages.Pop();
      stats_->Add(StatId::unfinished_messages);
      EndAt(message, end_ns, SpanClose::kUnfinished, listener);
    }
    for (auto* open : {&t.poll, &t.idle, &t.app_create, &t.gc, &t.lock_wait}) {
      if (*open) EndAt(**open, end_ns, SpanClose::kUnfinished, listener);
      open->reset();
    }
  }
  for (auto* open : {&inputs_, &barriers_}) {
    for (auto& [key, span] : *open) EndAt(span, end_ns, SpanClose::kUnfinished, listener);
    open->clear();
  }
  if (launch_) EndAt(*launch_, end_ns, SpanClose::kUnfinished, listener);
  launch_.reset();
}

std::vector<const Span*> SpanTracker::Open(uint32_t tid, SpanKind kind) const {
  std::vector<const Span*> out;
  const Thread* found = threads_.Find(tid);
  if (!found) return out;
  const Thread& t = *found;
  switch (kind) {
    case SpanKind::kMessage:
      for (const Span& s : t.messages) out.push_back(&s);
      break;
    case SpanKind::kFrame:
      for (const OpenFrame& f : t.frames) out.push_back(&f.frame);
      break;
    case SpanKind::kPhase:
      for (const OpenFrame& f : t.frames)
        if (f.phase) out.push_back(&*f.phase);
      break;
    case SpanKind::kPoll:
      if (t.poll) out.push_back(&*t.poll);
      break;
    case SpanKind::kIdle:
      if (t.idle) out.push_back(&*t.idle);
      break;
    case SpanKind::kAppCreate:
      if (t.app_create) out.push_back(&*t.app_create);
      break;
    case SpanKind::kInput:
      for (const auto& [k, s] : inputs_)
        if (s.tid == tid) out.push_back(&s);
      break;
    case SpanKind::kBarrier:
      for (const auto& [k, s] : barriers_)
        if (s.tid == tid) out.push_back(&s);
      break;
    case SpanKind::kLaunch:
      if (launch_ && launch_->tid == tid) out.push_back(&*launch_);
      break;
    case SpanKind::kGc:
      if (t.gc) out.push_back(&*t.gc);
      break;
    case SpanKind::kLockWait:
      if (t.lock_wait) out.push_back(&*t.lock_wait);
      break;
  }
  return out;
}

std::vector<const Span*> SpanTracker::OpenAnywhere(SpanKind kind) const {
  std::vector<const Span*> out;
  for (const auto& [tid, t] : threads_)
    for (const Span* s : Open(tid, kind)) out.push_back(s);
  return out;
}

const Span* SpanTracker::Innermost(uint32_t tid, SpanKind kind) const {
  // Messages and frames directly: asked at every message's end, where building the list
  // of Open() would allocate.
  if (kind == SpanKind::kMessage || kind == SpanKind::kFrame) {
    const Thread* found = threads_.Find(tid);
    if (!found) return nullptr;
    const Thread& t = *found;
    if (kind == SpanKind::kMessage) return t.messages.empty() ? nullptr : &t.messages.back();
    return t.frames.empty() ? nullptr : &t.frames.back().frame;
  }
  auto open = Open(tid, kind);
  return open.empty() ? nullptr : open.back();
}

std::string SpanTracker::CurrentFrame(uint32_t tid) const {
  const Thread* t = threads_.Find(tid);
  if (!t || t->frames.empty()) return "";
  const OpenFrame& f = t->frames.back();
  std::string text = fmt::format("frame {}", f.frame.key);
  if (f.phase) text += " phase " + PhaseName(static_cast<uint32_t>(f.phase->key));
  return text;
}

}  // namespace looptrace
