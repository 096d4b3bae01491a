#include "loader/plan/attach_order.h"

#include <algorithm>

#include "loader/plan/probe_config.h"

namespace looptrace::loader {
namespace {

// Method exits pair with enters like span ends with begins.
bool AttachFirst(Role role) { return IsEndRole(role) || role == Role::kMethodExit; }

// Ends first (a begin never waits for an end that is not attached yet). Where a span role and
// a method role share a probe point (a runtime's method probe with a dispatch condition), the
// kernel runs the consumers of one point last-attached first: the method exit is attached
// after the span end and the method enter before the span begin, so the dispatch method's
// own enter and exit beats fall inside its message's slice.
int AttachRank(Role role) {
  if (role == Role::kMethodExit) return 1;
  if (AttachFirst(role)) return 0;
  if (role == Role::kMethodEnter) return 2;
  return 3;
}

}  // namespace

std::vector<std::vector<const ResolvedProbe*>> AttachGroups(const AttachPlan& plan) {
  std::vector<const ResolvedProbe*> order;
  for (const auto& p : plan.probes) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const ResolvedProbe* a, const ResolvedProbe* b) {
    return AttachRank(a->spec.role) < AttachRank(b->spec.role);
  });
  std::vector<std::vector<const ResolvedProbe*>> groups;
  for (const ResolvedProbe* p : order) {
    auto same_group = [&](const std::vector<const ResolvedProbe*>& g) {
      const ResolvedProbe* f = g.front();
      return AttachFirst(f->spec.role) == AttachFirst(p->spec.role) && f->spec.kind == p->spec.kind &&
             AttachAsReturnProbe(*f) == AttachAsReturnProbe(*p) && f->binary_path == p->binary_path &&
             p->spec.kind != ProbeKind::kUsdt && UsesFastBeats(*f) == UsesFastBeats(*p) &&
             (!UsesFastBeats(*p) || f->spec.role == p->spec.role);
    };
    auto it = std::find_if(groups.begin(), groups.end(), same_group);
    if (it == groups.end())
      groups.push_back({p});
    else
      it->push_back(p);
  }
  return groups;
}

}  // namespace looptrace::loader
