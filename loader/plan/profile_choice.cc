#include "loader/plan/profile_choice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "loader/plan/binaries.h"
#include "loader/plan/runtime_checks.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {

Detection DetectProfile(const TargetBinaries& target, bool stop_at_first) {
  Detection d;
  TargetBinaries strict = target;
  strict.require_linked = true;
  strict.detecting = true;
  for (const auto& builtin : BuiltinProfiles()) {
    if (builtin.fragment) continue;
    ProfileCandidate c;
    c.name = std::string(builtin.name);
    if (d.picked && stop_at_first) break;
    auto profile = ParseProfile(builtin.text, "builtin:" + std::string(builtin.name));
    if (!profile) {
      c.reason = profile.error().message;
      d.candidates.push_back(std::move(c));
      continue;
    }
    auto plan = ResolveProfile(*profile, strict);
    if (!plan) {
      c.reason = plan.error().message;
      log::V1("profile {} does not match: {}", c.name, c.reason);
    } else {
      c.matches = true;
      std::set<std::string> seen;
      for (const auto& p : plan->probes) seen.insert(p.binary_path);
      c.reason = fmt::format("{} probe point{} in {}", plan->probes.size(), plan->probes.size() == 1 ? "" : "s",
                             fmt::join(seen, ", "));
      if (!plan->marks.empty()) c.reason = fmt::format("{}; {}", fmt::join(plan->marks, ", "), c.reason);
      if (!d.picked) {
        log::V1("profile {} matches the target: {}", c.name, c.reason);
        d.picked = d.candidates.size();
        d.profile = std::move(*profile);
        d.plan = std::move(*plan);
      }
    }
    d.candidates.push_back(std::move(c));
  }
  return d;
}

Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested, const TargetBinaries& target) {
  const std::string who = target.pid > 0 ? fmt::format("pid {}", target.pid) : target.exe_path;
  if (!requested.empty()) {
    ASSIGN_OR_RETURN(Profile profile, LoadProfile(requested));
    RETURN_IF_ERROR(CheckRuntimePresent(profile, target));
    auto plan = ResolveProfile(profile, target);
    if (!plan) {
      // A profile for a runtime the target does not have: say so, and how to find one that fits.
      PlanError e = plan.error();
      if (e.code == ExitCode::kProfile) {
        e.message = fmt::format("profile {} does not fit {}: {}", profile.name, who, e.message);
        if (e.hint.empty() || e.kind == PlanErrorKind::kDoesNotFit)
          e.hint =
              fmt::format("`looptrace probes {}` shows which built-in profile fits; or omit --profile to detect one",
                          target.pid > 0 ? fmt::format("-p {}", target.pid) : "--exe " + target.exe_path);
      }
      return std::unexpected(e);
    }
    if (target.pid <= 0) {
      // run: a library the command does not link may still be dlopen()ed (interpreters load
      // their runtimes so), so this is a warning, not an error.
      std::set<std::string> warned;
      for (const auto& p : plan->probes) {
        if (p.spec.binary == "exe" || p.spec.binary.starts_with("/") || p.binary_path == target.exe_path ||
            !warned.insert(p.binary_path).second)
          continue;
        if (!LinksLibrary(target, p.binary_path))
          log::Warning("profile {}: {} does not link {}; its probes fire only if the program loads it at run time",
                       profile.name, target.exe_path, p.binary_path);
      }
    }
    log::V1("profile {} ({}): {} probe points", profile.name, profile.source, plan->probes.size());
    return std::pair{std::move(profile), std::move(*plan)};
  }
  Detection d = DetectProfile(target, /*stop_at_first=*/true);
  if (d.picked) return std::pair{std::move(d.profile), std::move(d.plan)};
  std::string tried;
  for (const auto& c : d.candidates) tried += (tried.empty() ? "" : ", ") + c.name;
  return MakeError(
      fmt::format("no built-in profile matches {} (tried {})", who, tried), ExitCode::kProfile,
      fmt::format("pass --profile FILE with the target's probe points (see docs/profiles-and-runtimes.md); "
                  "`looptrace probes {}` says why no built-in fits",
                  target.pid > 0 ? fmt::format("-p {}", target.pid) : "--exe " + target.exe_path));
}

}  // namespace looptrace::loader
