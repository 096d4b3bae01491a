// Which profile a session uses: the one asked for with --profile (an error naming what the
// target lacks when it does not fit), or auto-detection among the built-ins.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// One built-in profile as auto-detection judged it.
struct ProfileCandidate {
  std::string name;
  bool matches = false;
  std::string reason;  // what it matched on, or why it does not fit
};

struct Detection {
  std::vector<ProfileCandidate> candidates;  // in detection order
  std::optional<size_t> picked;              // index of the first that matches
  Profile profile;                           // the picked one and its plan
  AttachPlan plan;
};

// Auto-detection: the built-ins (not fragments) in LOOPTRACE_PROFILE_FILES order; the first
// whose `requires` / `requires-call` marks are present and whose probes all resolve is picked. Libraries must
// be ones the executable links (run) or has mapped (record). With `stop_at_first`, those
// after the pick are not tried.
Detection DetectProfile(const TargetBinaries& target, bool stop_at_first);

// The explicit profile (a clear error naming what the target lacks when it does not fit),
// or the auto-detected one.
Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested, const TargetBinaries& target);

}  // namespace looptrace::loader
