#include "looptrace/tracers/event.h"

#include <array>

namespace looptrace {
namespace {

struct RoleInfo {
  Role role;
  std::string_view name;
  std::array<std::string_view, 4> args;  // names a profile may bind
};

constexpr RoleInfo kRoles[] = {
    {Role::kDispatchBegin, "dispatch.begin", {"id", "name", "target", "what"}},
    {Role::kDispatchEnd, "dispatch.end", {"id"}},
    {Role::kFrameBegin, "frame.begin", {"vsync_ns", "frame_id"}},
    {Role::kFrameEnd, "frame.end", {"frame_id"}},
    {Role::kPhaseBegin, "phase.begin", {"phase"}},
    {Role::kPhaseEnd, "phase.end", {"phase"}},
    {Role::kVsync, "vsync", {"vsync_ns"}},
    {Role::kMethodEnter, "method.enter", {"id", "addr", "class", "name"}},
    {Role::kMethodExit, "method.exit", {"id", "addr", "class", "name"}},
    {Role::kIdleBegin, "idle.begin", {"id", "name"}},
    {Role::kIdleEnd, "idle.end", {"id"}},
    {Role::kInputReceive, "input.receive", {"seq"}},
    {Role::kInputFinish, "input.finish", {"seq"}},
    {Role::kAppCreateBegin, "app.create.begin", {}},
    {Role::kAppCreateEnd, "app.create.end", {"name"}},
    {Role::kActivityLaunch, "activity.launch", {"name"}},
    {Role::kActivityFocus, "activity.focus", {"name"}},
    {Role::kFullyDrawn, "fully.drawn", {}},
    {Role::kPollBegin, "poll.begin", {"timeout_ms"}},
    {Role::kPollEnd, "poll.end", {}},
    {Role::kBarrierPost, "barrier.post", {"token"}},
    {Role::kBarrierRemove, "barrier.remove", {"token"}},
    {Role::kMessageEnqueue, "message.enqueue", {"when_ns", "async"}},
};

const RoleInfo* Find(Role role) {
  for (const auto& info : kRoles)
    if (info.role == role) return &info;
  return nullptr;
}

}  // namespace

std::string_view RoleName(Role role) {
  const RoleInfo* info = Find(role);
  return info ? info->name : "unknown";
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
  if (const RoleInfo* info = Find(role))
    for (auto arg : info->args)
      if (!arg.empty()) names.push_back(arg);
  return names;
}

std::string_view MethodIdKindName(MethodIdKind kind) {
  switch (kind) {
    case MethodIdKind::kId: return "id";
    case MethodIdKind::kAddress: return "address";
    case MethodIdKind::kString: return "string";
    case MethodIdKind::kProbe: return "probe";
  }
  return "id";
}

std::optional<MethodIdKind> MethodIdKindFromName(std::string_view name) {
  for (auto kind : {MethodIdKind::kId, MethodIdKind::kAddress, MethodIdKind::kString, MethodIdKind::kProbe})
    if (MethodIdKindName(kind) == name) return kind;
  return std::nullopt;
}

const EventArg* ProbeEvent::Arg(std::string_view name) const {
  for (const auto& arg : args)
    if (arg.name == name) return &arg;
  return nullptr;
}

}  // namespace looptrace
