#include "looptrace/tracers/roles.h"

#include <iterator>

namespace looptrace {

std::string_view SpanKindName(SpanKind kind) { return role_table::kKindNames[static_cast<size_t>(kind)]; }

std::string PhaseName(uint32_t phase) {
  static const char* const kNames[] = {"INPUT", "ANIMATION", "INSETS_ANIMATION", "TRAVERSAL", "COMMIT"};
  if (phase < std::size(kNames)) return kNames[phase];
  return "PHASE_" + std::to_string(phase);
}

const std::vector<RoleInfo>& AllRoles() {
  static const std::vector<RoleInfo> roles(role_table::kRoles.begin(), role_table::kRoles.end());
  return roles;
}

std::string_view RoleName(Role role) {
  const size_t index = static_cast<size_t>(role) - 1;
  return index < role_table::kRoles.size() ? role_table::kRoles[index].name : "unknown";
}

std::optional<Role> RoleFromName(std::string_view name) {
  for (const auto& info : role_table::kRoles)
    if (info.name == name) return info.role;
  return std::nullopt;
}

std::vector<std::string_view> AllRoleNames() {
  std::vector<std::string_view> names;
  for (const auto& info : role_table::kRoles) names.push_back(info.name);
  return names;
}

std::vector<std::string_view> KnownArgNames(Role role) {
  std::vector<std::string_view> names;
  for (auto arg : InfoOf(role).args)
    if (!arg.empty()) names.push_back(arg);
  return names;
}

}  // namespace looptrace
