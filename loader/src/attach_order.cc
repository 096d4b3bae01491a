#include "looptrace/loader/attach_order.h"

#include <algorithm>

#include "looptrace/loader/bpf_session.h"

namespace looptrace::loader {
namespace {

// Method exits pair with enters like span ends with begins.
bool AttachFirst(Role role) { return IsEndRole(role) || role == Role::kMethodExit; }

}  // namespace

std::vector<std::vector<const ResolvedProbe*>> AttachGroups(const AttachPlan& plan) {
  std::vector<const ResolvedProbe*> order;
  for (const auto& p : plan.probes) order.push_back(&p);
  std::stable_partition(order.begin(), order.end(), [](const ResolvedProbe* p) { return AttachFirst(p->spec.role); });
  std::vector<std::vector<const ResolvedProbe*>> groups;
  for (const ResolvedProbe* p : order) {
    auto same_group = [&](const std::vector<const ResolvedProbe*>& g) {
      const ResolvedProbe* f = g.front();
      return AttachFirst(f->spec.role) == AttachFirst(p->spec.role) && f->spec.kind == p->spec.kind &&
             AttachAsReturnProbe(*f) == AttachAsReturnProbe(*p) &&
             f->binary_path == p->binary_path && p->spec.kind != ProbeKind::kUsdt &&
             UsesFastBeats(*f) == UsesFastBeats(*p) && (!UsesFastBeats(*p) || f->spec.role == p->spec.role);
    };
    auto it = std::find_if(groups.begin(), groups.end(), same_group);
    if (it == groups.end()) groups.push_back({p});
    else it->push_back(p);
  }
  return groups;
}

}  // namespace looptrace::loader
