// The runtimes' checks of a chosen profile (runtimes/runtime.h), run for every runtime the
// profile declares (`runtime python`): the plan is handed to them as plain data.
#pragma once

#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"
#include "loader/runtimes/runtime.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// Before resolving a profile that declares runtimes: the target must run them (a python
// profile on a JVM is a one-line error saying what the target runs), with what every profile
// of the runtime reads (Runtime::CheckPresent).
Result<void> CheckRuntimePresent(const Profile& profile, const TargetBinaries& target);

// Before attaching: every runtime the profile declares has what the resolved profile needs
// on (Runtime::Check). An error names the cause and the fix; what only degrades the report is
// a warning (logged).
Result<void> CheckRuntimes(const Profile& profile, const AttachPlan& plan, const TargetBinaries& target,
                           const TargetCommand& command);

}  // namespace looptrace::loader
