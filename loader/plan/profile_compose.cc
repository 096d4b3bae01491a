// Profiles together: `include` (a built-in name or a file), --profile a,b (composition), and
// the checks a whole profile must pass.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "loader/plan/profile_parser.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {

namespace {

// Parses one file (or built-in) of a load: `identity` tells a cycle (a file including one
// that is being parsed) from a repeat (one included before: nothing new, not read again).
Result<Profile> ParseOnce(std::string_view text, const std::string& source, const std::string& identity, uid_t owner,
                          ProfileLoad& load) {
  for (const std::string& open : load.stack)
    if (open == identity) return MakeError(fmt::format("{} is already being included (an include cycle)", source));
  if (load.loaded.contains(identity)) return Profile{};
  const uid_t including_owner = load.owner;
  load.owner = owner;
  load.stack.push_back(identity);
  auto profile = ParseProfileText(text, source, load);
  load.stack.pop_back();
  load.owner = including_owner;
  load.loaded.insert(identity);
  return profile;
}

}  // namespace

Result<Profile> LoadNamedProfile(std::string_view name_or_path, std::string_view including, ProfileLoad& load) {
  for (const auto& builtin : BuiltinProfiles())
    if (builtin.name == name_or_path) {
      const std::string source = "builtin:" + std::string(builtin.name);
      return ParseOnce(builtin.text, source, source, /*owner=*/0, load);
    }
  if (name_or_path.find('/') == std::string_view::npos && name_or_path.find('.') == std::string_view::npos) {
    std::vector<std::string_view> names;
    for (const auto& builtin : BuiltinProfiles()) names.push_back(builtin.name);
    return MakeError(fmt::format("no built-in profile named '{}'", name_or_path), ExitCode::kProfile,
                     fmt::format("built-in profiles: {}; or pass a profile file path", fmt::join(names, ", ")));
  }
  // A file: a path relative to the including file's directory, else as given. Read as any
  // profile file is: a regular file of bounded size, opened so that a FIFO or device cannot
  // block, never a kernel file (/proc/self/environ is root's environment), and, when
  // included, one the including file's owner could read (/etc/shadow is not).
  std::string path(name_or_path);
  if (!path.starts_with("/") && !including.starts_with("builtin:") && !including.empty())
    if (auto dir = std::filesystem::path(std::string(including)).parent_path(); !dir.empty())
      path = (dir / path).string();
  ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path, "profile", kMaxProfileBytes, ExitCode::kProfile));
  RETURN_IF_ERROR(CheckNotKernelFile(file.fd.get(), path, "profile", ExitCode::kProfile));
  struct stat st {};
  if (fstat(file.fd.get(), &st) != 0) return SystemError("cannot read profile " + path, errno, ExitCode::kProfile);
  if (!load.stack.empty() && !ReadableBy(file.fd.get(), load.owner))
    return MakeError(fmt::format("cannot read profile {}: the including profile's owner (uid {}) could not read it",
                                 path, load.owner),
                     ExitCode::kProfile, "include only files the profile's owner can read");
  ASSIGN_OR_RETURN(std::string text, ReadOpenedFile(file, path, "profile", kMaxProfileBytes, ExitCode::kProfile));
  return ParseOnce(text, path, fmt::format("{}:{}", st.st_dev, st.st_ino), st.st_uid, load);
}

// Begin/end roles must come in pairs so the tracers never see half a span: every role the
// role table pairs (a span's begin and end, a method's enter and exit) needs its partner.
Result<void> CheckPairs(const Profile& profile) {
  for (const RoleInfo& info : AllRoles()) {
    if (info.partner == info.role || !profile.HasRole(info.role) || profile.HasRole(info.partner)) continue;
    const ProbeSpec& where = *std::find_if(profile.probes.begin(), profile.probes.end(),
                                           [&](const ProbeSpec& p) { return p.role == info.role; });
    return MakeError(fmt::format("{}: maps {} but no {}", where.Where(), info.name, RoleName(info.partner)),
                     ExitCode::kProfile);
  }
  const Role needed = profile.message_definition == "poll-bounded" ? Role::kPollBegin : Role::kDispatchBegin;
  if (!profile.message_definition.empty() && !profile.message_definition.starts_with("wait-bounded ") &&
      !profile.HasRole(needed))
    return MakeError(fmt::format("{}: messages {} needs {} and its end", profile.message_definition_where,
                                 profile.message_definition, RoleName(needed)),
                     ExitCode::kProfile);
  return {};
}

Result<Profile> ParseProfile(std::string_view text, std::string_view source) {
  // Text from memory: written by whoever runs looptrace, whose includes are read as theirs.
  ProfileLoad load;
  load.owner = geteuid();
  load.stack.push_back("text:" + std::string(source));
  ASSIGN_OR_RETURN(Profile profile, ParseProfileText(text, source, load));
  ASSIGN_OR_RETURN(Profile composed, ComposeProfiles({std::move(profile)}));
  RETURN_IF_ERROR(CheckPairs(composed));
  return composed;
}

Result<Profile> ComposeProfiles(std::vector<Profile> profiles) {
  Profile out;
  for (const Profile& p : profiles) {
    out.name += (out.name.empty() ? "" : "+") + p.name;
    out.source += (out.source.empty() ? "" : ",") + p.source;
    if (!p.description.empty()) out.description += (out.description.empty() ? "" : "; ") + p.description;
    for (const auto& r : p.runtimes)
      if (std::find(out.runtimes.begin(), out.runtimes.end(), r) == out.runtimes.end()) out.runtimes.push_back(r);
    if (p.thread.mode == ThreadChoice::Mode::kUnset) continue;
    if (out.thread.mode != ThreadChoice::Mode::kUnset && !(out.thread == p.thread))
      return MakeError(fmt::format("{}: thread {} conflicts with thread {} at {}", p.thread.where, p.thread.Describe(),
                                   out.thread.Describe(), out.thread.where),
                       ExitCode::kProfile, "keep one thread directive, or choose with --threads");
    out.thread = p.thread;
  }
  for (Profile& p : profiles) {
    for (Requirement& r : p.requirements)
      if (std::find(out.requirements.begin(), out.requirements.end(), r) == out.requirements.end())
        out.requirements.push_back(std::move(r));
    for (CallRequirement& r : p.call_requirements)
      if (std::find(out.call_requirements.begin(), out.call_requirements.end(), r) == out.call_requirements.end())
        out.call_requirements.push_back(std::move(r));
    for (LoadedRequirement& r : p.loaded_requirements)
      if (std::find(out.loaded_requirements.begin(), out.loaded_requirements.end(), r) == out.loaded_requirements.end())
        out.loaded_requirements.push_back(std::move(r));
    if (!p.message_definition.empty()) {
      if (!out.message_definition.empty() && out.message_definition != p.message_definition)
        return MakeError(fmt::format("{}: messages {} conflicts with messages {} at {}", p.message_definition_where,
                                     p.message_definition, out.message_definition, out.message_definition_where),
                         ExitCode::kProfile, "compose profiles that define messages the same way");
      out.message_definition = p.message_definition;
      out.message_definition_where = p.message_definition_where;
    }
    for (ProbeSpec& probe : p.probes) {
      auto same_point = [&](const ProbeSpec& o) {
        return o.role == probe.role && o.kind == probe.kind && o.binary == probe.binary && o.point == probe.point;
      };
      auto it = std::find_if(out.probes.begin(), out.probes.end(), same_point);
      if (it == out.probes.end()) {
        out.probes.push_back(std::move(probe));
        continue;
      }
      // The same line twice (a profile included by two others) counts once; bound differently
      // it would make two events of one hit.
      if (it->args == probe.args && it->conditions == probe.conditions) continue;
      return MakeError(fmt::format("{}: {} at {} {} is already bound differently at {}", probe.Where(),
                                   RoleName(probe.role), probe.binary, probe.point, it->Where()),
                       ExitCode::kProfile,
                       "keep one of the two lines (or give them the same arguments and conditions)");
    }
  }
  return out;
}

Result<Profile> LoadProfile(std::string_view names_or_paths) {
  std::vector<Profile> profiles;
  size_t start = 0;
  while (start <= names_or_paths.size()) {
    size_t comma = names_or_paths.find(',', start);
    if (comma == std::string_view::npos) comma = names_or_paths.size();
    std::string_view one = names_or_paths.substr(start, comma - start);
    start = comma + 1;
    if (one.empty()) continue;
    ProfileLoad load;
    ASSIGN_OR_RETURN(Profile profile, LoadNamedProfile(one, "", load));
    profiles.push_back(std::move(profile));
  }
  if (profiles.empty()) return MakeError("no profile named", ExitCode::kUsage, "example: --profile glib,python");
  ASSIGN_OR_RETURN(Profile composed, ComposeProfiles(std::move(profiles)));
  RETURN_IF_ERROR(CheckPairs(composed));
  return composed;
}

}  // namespace looptrace::loader
