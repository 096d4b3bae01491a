// The role table: every role a profile can bind, what kind of span (if any) it begins or
// ends, the argument that pairs begin and end, and the argument names tracers understand.
// The one place that knows which roles pair up (span tracker, profile checks, attach order).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/events.h"

namespace looptrace {

enum class Role : uint16_t {
  kDispatchBegin = LT_ROLE_DISPATCH_BEGIN,
  kDispatchEnd = LT_ROLE_DISPATCH_END,
  kFrameBegin = LT_ROLE_FRAME_BEGIN,
  kFrameEnd = LT_ROLE_FRAME_END,
  kPhaseBegin = LT_ROLE_PHASE_BEGIN,
  kPhaseEnd = LT_ROLE_PHASE_END,
  kVsync = LT_ROLE_VSYNC,
  kMethodEnter = LT_ROLE_METHOD_ENTER,
  kMethodExit = LT_ROLE_METHOD_EXIT,
  kIdleBegin = LT_ROLE_IDLE_BEGIN,
  kIdleEnd = LT_ROLE_IDLE_END,
  kInputReceive = LT_ROLE_INPUT_RECEIVE,
  kInputFinish = LT_ROLE_INPUT_FINISH,
  kAppCreateBegin = LT_ROLE_APP_CREATE_BEGIN,
  kAppCreateEnd = LT_ROLE_APP_CREATE_END,
  kActivityLaunch = LT_ROLE_ACTIVITY_LAUNCH,
  kActivityFocus = LT_ROLE_ACTIVITY_FOCUS,
  kFullyDrawn = LT_ROLE_FULLY_DRAWN,
  kPollBegin = LT_ROLE_POLL_BEGIN,
  kPollEnd = LT_ROLE_POLL_END,
  kBarrierPost = LT_ROLE_BARRIER_POST,
  kBarrierRemove = LT_ROLE_BARRIER_REMOVE,
  kMessageEnqueue = LT_ROLE_MESSAGE_ENQUEUE,
  kGcBegin = LT_ROLE_GC_BEGIN,
  kGcEnd = LT_ROLE_GC_END,
  kLockWaitBegin = LT_ROLE_LOCK_WAIT_BEGIN,
  kLockWaitEnd = LT_ROLE_LOCK_WAIT_END,
  kLockRelease = LT_ROLE_LOCK_RELEASE,
};

// Spans the span tracker pairs (tracers/span_tracker.h).
enum class SpanKind : uint8_t {
  kMessage,    // dispatch.begin -> dispatch.end (or poll.end -> poll.begin: poll-bounded)
  kPoll,       // poll.begin -> poll.end: the looper waits for work
  kIdle,       // idle.begin -> idle.end: an IdleHandler
  kInput,      // input.receive -> input.finish, paired by seq
  kFrame,      // frame.begin -> frame.end, paired by frame_id
  kPhase,      // phase.begin -> phase.end inside a frame
  kAppCreate,  // app.create.begin -> app.create.end
  kLaunch,     // activity.launch -> activity.focus
  kBarrier,    // barrier.post -> barrier.remove, paired by token
  kGc,         // gc.begin -> gc.end: a runtime's garbage collection (any thread)
  kLockWait,   // lock.wait.begin -> lock.wait.end: blocked on a contended monitor
};
inline constexpr int kSpanKindCount = 11;

std::string_view SpanKindName(SpanKind kind);

enum class RoleEdge : uint8_t {
  kBegin,    // opens a span
  kEnd,      // closes a span
  kInstant,  // a point event (vsync, message.enqueue, fully.drawn)
  kBeat,     // a method beat: goes to the beat ring, never through the span tracker
};

struct RoleInfo {
  Role role;
  std::string_view name;  // "dispatch.begin"
  RoleEdge edge;
  SpanKind span;                         // for kBegin / kEnd
  Role partner;                          // the other end of the span (itself for instants and beats)
  std::string_view key;                  // argument pairing begin and end ("seq", "token", "frame_id"), or ""
  std::array<std::string_view, 7> args;  // names a profile may bind
};

// Every role, in ABI order.
const std::vector<RoleInfo>& AllRoles();
const RoleInfo& InfoOf(Role role);

std::string_view RoleName(Role role);
std::optional<Role> RoleFromName(std::string_view name);
std::vector<std::string_view> AllRoleNames();
// Argument names a tracer understands for a role; a profile may only bind these.
std::vector<std::string_view> KnownArgNames(Role role);
// Choreographer callback queues (phase numbers): "INPUT", "ANIMATION", "INSETS_ANIMATION",
// "TRAVERSAL", "COMMIT", else "PHASE_<n>".
std::string PhaseName(uint32_t phase);

inline bool IsEndRole(Role role) { return InfoOf(role).edge == RoleEdge::kEnd; }
inline bool IsBeatRole(Role role) { return InfoOf(role).edge == RoleEdge::kBeat; }

}  // namespace looptrace
