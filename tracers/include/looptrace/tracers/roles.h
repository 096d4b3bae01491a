// The role table: every role a profile can bind, what kind of span (if any) it begins or
// ends, the argument that names and pairs its spans, which threads its probes watch and the
// argument names tracers understand. Made from the one list of roles, LT_ROLES in events.h,
// whose numbers BPF takes too; the span tracker, profile checks, attach order and probe
// configurations read it here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/events.h"

namespace looptrace {

#define LOOPTRACE_ROLE_ENUMERATOR(number, c_name, cpp_name, ...) k##cpp_name = LT_ROLE_##c_name,
enum class Role : uint16_t { LT_ROLES(LOOPTRACE_ROLE_ENUMERATOR) };
#undef LOOPTRACE_ROLE_ENUMERATOR

// Tracers subscribe to roles by 64-bit masks (tracer.h).
static_assert(LT_ROLE_MAX <= 64, "role masks hold 64 roles");

// Where a span kind's spans are kept open and paired: a track (Perfetto's word) is a kind
// and a thread, a key value or the process, and holds one stack of open spans.
enum class TrackScope : uint8_t {
  kThread,   // per thread: an end closes a span its own thread began
  kKey,      // per value of the kind's key argument, on any thread (input seq, barrier token)
  kProcess,  // one per process
};

// Spans the span tracker pairs (span_tracker.h). X(name, "name", scope). Unless the span
// tracker has a rule of its own for the kind, a track holds one open span: a begin closes
// the one still open as lost, an end closes the open one (none open: ignored).
#define LOOPTRACE_SPAN_KINDS(X)                                                                \
  X(Message, "message", kThread)      /* dispatch.begin -> .end, nested; or poll-bounded */    \
  X(Poll, "poll", kThread)            /* poll.begin -> poll.end: the looper waits for work */  \
  X(Idle, "idle", kThread)            /* idle.begin -> idle.end: an IdleHandler */             \
  X(Input, "input", kKey)             /* input.receive -> input.finish, by seq */              \
  X(Frame, "frame", kThread)          /* frame.begin -> frame.end, nested, by frame_id */      \
  X(Phase, "phase", kThread)          /* phase.begin -> phase.end in the innermost frame */    \
  X(AppCreate, "app_create", kThread) /* app.create.begin -> app.create.end */                 \
  X(Launch, "launch", kProcess)       /* activity.launch -> the next activity.focus */         \
  X(Barrier, "barrier", kKey)         /* barrier.post -> barrier.remove, by token */           \
  X(Gc, "gc", kThread)                /* gc.begin -> gc.end: a runtime's garbage collection */ \
  X(LockWait, "lock_wait", kThread)   /* lock.wait.begin -> .end: blocked on a monitor */

#define LOOPTRACE_SPAN_KIND_ENUMERATOR(name, text, scope) k##name,
enum class SpanKind : uint8_t { LOOPTRACE_SPAN_KINDS(LOOPTRACE_SPAN_KIND_ENUMERATOR) };
#undef LOOPTRACE_SPAN_KIND_ENUMERATOR

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
  SpanKind span;  // for kBegin / kEnd; the kind instants and beats belong with
  Role partner;   // the other end of the span (itself for instants, the other beat for beats)
  // The argument naming a span (Span::key), or "". By its value an end finds its begin
  // (TrackScope::kKey), the open message or frame it closes (dispatch id, frame_id), the
  // phase it should close; for other kinds it is recorded only.
  std::string_view key;
  std::array<std::string_view, 7> args;  // names a profile may bind
  bool all_threads;                      // watched on every thread of the target (LT_PROBE_ALL_THREADS)
};

namespace role_table {

#define LOOPTRACE_COUNT(...) +1
inline constexpr size_t kKindCount = 0 LOOPTRACE_SPAN_KINDS(LOOPTRACE_COUNT);
inline constexpr size_t kRoleCount = 0 LT_ROLES(LOOPTRACE_COUNT);
#undef LOOPTRACE_COUNT

#define LOOPTRACE_SPAN_KIND_NAME(name, text, scope) text,
inline constexpr std::array<std::string_view, kKindCount> kKindNames = {LOOPTRACE_SPAN_KINDS(LOOPTRACE_SPAN_KIND_NAME)};
#undef LOOPTRACE_SPAN_KIND_NAME
#define LOOPTRACE_SPAN_KIND_SCOPE(name, text, scope) TrackScope::scope,
inline constexpr std::array<TrackScope, kKindCount> kScopes = {LOOPTRACE_SPAN_KINDS(LOOPTRACE_SPAN_KIND_SCOPE)};
#undef LOOPTRACE_SPAN_KIND_SCOPE

// LT_ROLES' threads column.
inline constexpr bool kFiltered = false;
inline constexpr bool kAllThreads = true;

#define LOOPTRACE_ROLE_ARGS(...) \
  { __VA_ARGS__ }
#define LOOPTRACE_ROLE_INFO(number, c_name, cpp_name, text, edge, span, partner, key, threads, args) \
  RoleInfo{Role::k##cpp_name,                                                                        \
           text,                                                                                     \
           RoleEdge::k##edge,                                                                        \
           SpanKind::k##span,                                                                        \
           Role::k##partner,                                                                         \
           key,                                                                                      \
           std::array<std::string_view, 7>                                                           \
               LOOPTRACE_ROLE_ARGS args,                                                             \
           k##threads},
inline constexpr std::array<RoleInfo, kRoleCount> kRoles = {LT_ROLES(LOOPTRACE_ROLE_INFO)};
#undef LOOPTRACE_ROLE_INFO
#undef LOOPTRACE_ROLE_ARGS

// InfoOf finds a role by its number.
constexpr bool NumberedInOrder() {
  for (size_t i = 0; i < kRoles.size(); ++i)
    if (static_cast<size_t>(kRoles[i].role) != i + 1) return false;
  return true;
}
static_assert(NumberedInOrder(), "LT_ROLES numbers its roles 1, 2, ... in order");
static_assert(kRoleCount + 1 == LT_ROLE_MAX, "LT_ROLE_MAX is one past the last role");

}  // namespace role_table

inline constexpr int kSpanKindCount = static_cast<int>(role_table::kKindCount);

std::string_view SpanKindName(SpanKind kind);
constexpr TrackScope ScopeOf(SpanKind kind) { return role_table::kScopes[static_cast<size_t>(kind)]; }

// Every role, in ABI order.
const std::vector<RoleInfo>& AllRoles();
// Inline and constexpr: the span tracker asks once per record.
constexpr const RoleInfo& InfoOf(Role role) {
  const size_t index = static_cast<size_t>(role) - 1;
  return index < role_table::kRoles.size() ? role_table::kRoles[index] : role_table::kRoles.front();
}

std::string_view RoleName(Role role);
std::optional<Role> RoleFromName(std::string_view name);
std::vector<std::string_view> AllRoleNames();
// Argument names a tracer understands for a role; a profile may only bind these.
std::vector<std::string_view> KnownArgNames(Role role);
// Choreographer callback queues (phase numbers): "INPUT", "ANIMATION", "INSETS_ANIMATION",
// "TRAVERSAL", "COMMIT", else "PHASE_<n>".
std::string PhaseName(uint32_t phase);

constexpr bool IsEndRole(Role role) { return InfoOf(role).edge == RoleEdge::kEnd; }
constexpr bool IsBeatRole(Role role) { return InfoOf(role).edge == RoleEdge::kBeat; }

}  // namespace looptrace
