#include "loader/plan/attach_order.h"

#include <gtest/gtest.h>

namespace looptrace::loader {
namespace {

ResolvedProbe Usdt(uint16_t id, Role role, std::string point) {
  ResolvedProbe p;
  p.probe_id = id;
  p.spec.role = role;
  p.spec.kind = ProbeKind::kUsdt;
  p.spec.point = point;
  p.binary_path = "/usr/lib/jvm/libjvm.so";
  p.symbol = std::move(point);
  return p;
}

// The kernel runs the consumers of one probe point last-attached first: a dispatch role and
// a method role on the same runtime probe must attach so that the message's record comes
// before the dispatch method's enter beat, and after its exit beat.
TEST(AttachOrder, EndsFirstAndMethodRolesAroundTheSpanRolesOfASharedPoint) {
  AttachPlan plan;
  plan.probes = {
      Usdt(0, Role::kDispatchBegin, "hotspot:method__entry"), Usdt(1, Role::kDispatchEnd, "hotspot:method__return"),
      Usdt(2, Role::kMethodEnter, "hotspot:method__entry"),   Usdt(3, Role::kMethodExit, "hotspot:method__return"),
      Usdt(4, Role::kGcBegin, "hotspot:gc__begin"),           Usdt(5, Role::kGcEnd, "hotspot:gc__end")};
  std::vector<uint16_t> order;
  for (const auto& group : AttachGroups(plan))
    for (const ResolvedProbe* p : group) order.push_back(p->probe_id);
  // dispatch.end, gc.end, method.exit (runs first at the return), method.enter, then the
  // begins (dispatch.begin runs first at the entry).
  EXPECT_EQ(order, (std::vector<uint16_t>{1, 5, 3, 2, 0, 4}));
}

}  // namespace
}  // namespace looptrace::loader
