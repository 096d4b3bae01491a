// What the runtimes share: reading a target's command line, telling runtimes apart, and
// the checks every runtime profile goes through (runtimes.h). Each runtime's own knowledge
// is in runtime_python.cc and runtime_jvm.cc.
#include "loader/runtimes/runtimes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

extern char** environ;

namespace looptrace::loader {
namespace {

// NUL-separated words of a /proc file.
std::optional<std::vector<std::string>> ReadNulSeparated(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    words.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

std::string Describe(const TargetBinaries& target) {
  if (target.pid > 0) return fmt::format("pid {} ({})", target.pid, target.exe_path);
  return target.exe_path;
}

}  // namespace

TargetCommand ReadTargetCommand(int pid) {
  TargetCommand c;
  auto argv = ReadNulSeparated(fmt::format("/proc/{}/cmdline", pid));
  auto env = ReadNulSeparated(fmt::format("/proc/{}/environ", pid));
  c.known = argv.has_value() && env.has_value();
  if (argv) c.argv = std::move(*argv);
  if (env) c.environ = std::move(*env);
  return c;
}

TargetCommand CommandOf(const std::vector<std::string>& argv) {
  TargetCommand c;
  c.argv = argv;
  for (char** e = environ; e && *e; ++e) c.environ.emplace_back(*e);
  c.known = true;
  return c;
}

RuntimeInfo IdentifyRuntime(const TargetBinaries& target) {
  RuntimeInfo info;
  if (jvm::Looks(target, &info)) return info;
  if (python::Looks(target, &info)) return info;
  return info;
}

Result<void> CheckRuntimePresent(const Profile& profile, const TargetBinaries& target) {
  if (profile.runtimes.empty()) return {};
  const RuntimeInfo info = IdentifyRuntime(target);
  for (const std::string& runtime : profile.runtimes) {
    if (runtime != "python" && runtime != "jvm") continue;  // a runtime without checks here
    if (info.name == runtime) continue;
    const std::string what = info.name.empty() ? "no runtime looptrace knows" : info.what;
    return MakeError(fmt::format("profile {} is for {}, but {} runs {}", profile.name,
                                 runtime == "python" ? "CPython" : "a HotSpot JVM", Describe(target), what),
                     ExitCode::kProfile,
                     info.name == "python" ? "use --profile python (or leave --profile out to detect it)"
                     : info.name == "jvm"  ? "use --profile jvm (or leave --profile out to detect it)"
                                           : "leave --profile out to detect the target's profile");
  }
  // Present, but perhaps without the probes the profile reads.
  for (const std::string& runtime : profile.runtimes) {
    if (runtime == "python" && info.binary.empty()) {
      std::string why = python::Diagnose(target, TargetCommand{});
      return MakeError(why.empty() ? fmt::format("{} has no CPython USDT probes", Describe(target)) : why,
                       ExitCode::kProfile,
                       "use a CPython configured --with-dtrace, such as Debian's /usr/bin/python3.11 "
                       "(readelf -n shows its 'python' probes)");
    }
  }
  return {};
}

Result<void> CheckRuntimes(const Profile& profile, const AttachPlan& plan, const TargetBinaries& target,
                           const TargetCommand& command) {
  for (const std::string& runtime : profile.runtimes) {
    if (runtime == "python") RETURN_IF_ERROR(python::Check(profile, plan, target, command));
    if (runtime == "jvm") RETURN_IF_ERROR(jvm::Check(profile, plan, target, command));
  }
  return {};
}

std::string DiagnoseRuntime(const TargetBinaries& target, const TargetCommand& command) {
  if (std::string why = jvm::Diagnose(target, command); !why.empty()) return why;
  return python::Diagnose(target, command);
}

}  // namespace looptrace::loader
