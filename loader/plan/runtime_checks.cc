#include "loader/plan/runtime_checks.h"

#include <fmt/format.h>

#include "loader/runtimes/runtimes.h"

namespace looptrace::loader {
namespace {

std::string Describe(const TargetBinaries& target) {
  if (target.pid > 0) return fmt::format("pid {} ({})", target.pid, target.exe_path);
  return target.exe_path;
}

}  // namespace

Result<void> CheckRuntimePresent(const Profile& profile, const TargetBinaries& target) {
  if (profile.runtimes.empty()) return {};
  const RuntimeInfo info = IdentifyRuntime(target);
  for (const std::string& name : profile.runtimes) {
    const Runtime* runtime = FindRuntime(name);
    if (!runtime || info.name == name) continue;  // a runtime without checks, or the target's
    const std::string what = info.name.empty() ? "no runtime looptrace knows" : info.what;
    return MakeError(
        fmt::format("profile {} is for {}, but {} runs {}", profile.name, runtime->title(), Describe(target), what),
        ExitCode::kProfile,
        info.name.empty() ? "leave --profile out to detect the target's profile"
                          : fmt::format("use --profile {} (or leave --profile out to detect it)", info.name));
  }
  // Present, but perhaps without the probes the profile reads.
  std::vector<std::string> usdt_points;
  for (const ProbeSpec& p : profile.probes)
    if (p.kind == ProbeKind::kUsdt && !p.optional) usdt_points.push_back(p.point);
  for (const std::string& name : profile.runtimes)
    if (const Runtime* runtime = FindRuntime(name)) RETURN_IF_ERROR(runtime->CheckPresent(info, target, usdt_points));
  return {};
}

Result<void> CheckRuntimes(const Profile& profile, const AttachPlan& plan, const TargetBinaries& target,
                           const TargetCommand& command) {
  RuntimeCheck check;
  check.profile_name = profile.name;
  for (const ResolvedProbe& p : plan.probes) check.points.push_back(p.symbol);
  for (const std::string& name : profile.runtimes)
    if (const Runtime* runtime = FindRuntime(name)) RETURN_IF_ERROR(runtime->Check(check, target, command));
  return {};
}

}  // namespace looptrace::loader
