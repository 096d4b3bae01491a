#include "looptrace/tracers/roles.h"

#include <iterator>

namespace looptrace {
namespace {

using E = RoleEdge;
using K = SpanKind;
using R = Role;

const std::vector<RoleInfo> kRoles = {
    {R::kDispatchBegin,
     "dispatch.begin",
     E::kBegin,
     K::kMessage,
     R::kDispatchEnd,
     "",
     {"id", "name", "target", "what"}},
    {R::kDispatchEnd, "dispatch.end", E::kEnd, K::kMessage, R::kDispatchBegin, "", {"id"}},
    {R::kFrameBegin, "frame.begin", E::kBegin, K::kFrame, R::kFrameEnd, "frame_id", {"vsync_ns", "frame_id"}},
    {R::kFrameEnd, "frame.end", E::kEnd, K::kFrame, R::kFrameBegin, "frame_id", {"frame_id"}},
    {R::kPhaseBegin, "phase.begin", E::kBegin, K::kPhase, R::kPhaseEnd, "phase", {"phase"}},
    {R::kPhaseEnd, "phase.end", E::kEnd, K::kPhase, R::kPhaseBegin, "phase", {"phase"}},
    {R::kVsync, "vsync", E::kInstant, K::kFrame, R::kVsync, "", {"vsync_ns"}},
    {R::kMethodEnter,
     "method.enter",
     E::kBeat,
     K::kMessage,
     R::kMethodExit,
     "",
     {"id", "addr", "class", "name", "sig", "file", "line"}},
    {R::kMethodExit,
     "method.exit",
     E::kBeat,
     K::kMessage,
     R::kMethodEnter,
     "",
     {"id", "addr", "class", "name", "sig", "file", "line"}},
    {R::kIdleBegin, "idle.begin", E::kBegin, K::kIdle, R::kIdleEnd, "", {"id", "name"}},
    {R::kIdleEnd, "idle.end", E::kEnd, K::kIdle, R::kIdleBegin, "", {"id"}},
    {R::kInputReceive, "input.receive", E::kBegin, K::kInput, R::kInputFinish, "seq", {"seq"}},
    {R::kInputFinish, "input.finish", E::kEnd, K::kInput, R::kInputReceive, "seq", {"seq"}},
    {R::kAppCreateBegin, "app.create.begin", E::kBegin, K::kAppCreate, R::kAppCreateEnd, "", {}},
    {R::kAppCreateEnd, "app.create.end", E::kEnd, K::kAppCreate, R::kAppCreateBegin, "", {"name"}},
    {R::kActivityLaunch, "activity.launch", E::kBegin, K::kLaunch, R::kActivityFocus, "", {"name"}},
    {R::kActivityFocus, "activity.focus", E::kEnd, K::kLaunch, R::kActivityLaunch, "", {"name"}},
    {R::kFullyDrawn, "fully.drawn", E::kInstant, K::kLaunch, R::kFullyDrawn, "", {}},
    {R::kPollBegin, "poll.begin", E::kBegin, K::kPoll, R::kPollEnd, "", {"timeout_ms"}},
    {R::kPollEnd, "poll.end", E::kEnd, K::kPoll, R::kPollBegin, "", {}},
    {R::kBarrierPost, "barrier.post", E::kBegin, K::kBarrier, R::kBarrierRemove, "token", {"token"}},
    {R::kBarrierRemove, "barrier.remove", E::kEnd, K::kBarrier, R::kBarrierPost, "token", {"token"}},
    {R::kMessageEnqueue, "message.enqueue", E::kInstant, K::kMessage, R::kMessageEnqueue, "", {"when_ns", "async"}},
    {R::kGcBegin, "gc.begin", E::kBegin, K::kGc, R::kGcEnd, "", {"full", "generation"}},
    {R::kGcEnd, "gc.end", E::kEnd, K::kGc, R::kGcBegin, "", {"collected"}},
    {R::kLockWaitBegin, "lock.wait.begin", E::kBegin, K::kLockWait, R::kLockWaitEnd, "", {"monitor", "class"}},
    {R::kLockWaitEnd, "lock.wait.end", E::kEnd, K::kLockWait, R::kLockWaitBegin, "", {"monitor"}},
    {R::kLockRelease, "lock.release", E::kInstant, K::kLockWait, R::kLockRelease, "", {"monitor"}},
};

}  // namespace

std::string_view SpanKindName(SpanKind kind) {
  static constexpr std::string_view kNames[] = {"message",    "poll",   "idle",    "input", "frame",    "phase",
                                                "app_create", "launch", "barrier", "gc",    "lock_wait"};
  return kNames[static_cast<int>(kind)];
}

std::string PhaseName(uint32_t phase) {
  static const char* const kNames[] = {"INPUT", "ANIMATION", "INSETS_ANIMATION", "TRAVERSAL", "COMMIT"};
  if (phase < std::size(kNames)) return kNames[phase];
  return "PHASE_" + std::to_string(phase);
}

const std::vector<RoleInfo>& AllRoles() { return kRoles; }

const RoleInfo& InfoOf(Role role) {
  // Roles are numbered 1..LT_ROLE_MAX-1 in table order.
  const size_t index = static_cast<size_t>(role) - 1;
  if (index < kRoles.size() && kRoles[index].role == role) return kRoles[index];
  for (const auto& info : kRoles)
    if (info.role == role) return info;
  return kRoles.front();  // unreachable for a valid Role
}

std::string_view RoleName(Role role) {
  for (const auto& info : kRoles)
    if (info.role == role) return info.name;
  return "unknown";
}

std::optional<Role> RoleFromName(std::string_view name) {
  for (const auto& info : kRoles)
    if (info.name == name) return info.role;
  return std::nullopt;
}

std::vector<std::string_view> AllRoleNames() {
  std::vector<std::string_view> names;
  for (const auto& info : kRoles) names.push_back(info.name);
  return names;
}

std::vector<std::string_view> KnownArgNames(Role role) {
  std::vector<std::string_view> names;
  for (auto arg : InfoOf(role).args)
    if (!arg.empty()) names.push_back(arg);
  return names;
}

}  // namespace looptrace
