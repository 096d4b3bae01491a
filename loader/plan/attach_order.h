// The order probe points are attached in: ends before begins (so a half-attached session
// sees at most an end without its begin, never a begin whose end is missed), one group per
// (binary, kind), which uprobe_multi attaches with a single link.
#pragma once

#include <vector>

#include "loader/plan/attach_plan.h"

namespace looptrace::loader {

std::vector<std::vector<const ResolvedProbe*>> AttachGroups(const AttachPlan& plan);

}  // namespace looptrace::loader
