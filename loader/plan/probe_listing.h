// The table `looptrace probes` prints: every resolved point, its cost class, and for a
// probe moved off a single-stepped entry each location and why (probe_placement.h).
#pragma once

#include <cstddef>
#include <ostream>

#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"

namespace looptrace::loader {

// Writes the table; returns how many probes still pay for a single-stepped instruction.
size_t PrintProbeList(const Profile& profile, const AttachPlan& plan, std::ostream& out);

}  // namespace looptrace::loader
