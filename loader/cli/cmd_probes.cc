// looptrace probes (-p PID | --exe PATH) [--profile P]: resolve probe points, attach nothing.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "loader/cli/cli.h"
#include "loader/plan/probe_listing.h"
#include "loader/plan/profile_choice.h"
#include "loader/plan/runtime_checks.h"
#include "loader/runtimes/runtimes.h"
#include "loader/target/target_process.h"
#include "looptrace/symbols/probe_cost.h"
#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::cli {
namespace {

class ProbesCommand : public Command {
 public:
  std::string_view name() const override { return "probes"; }

  void Setup(CLI::App* cmd) override {
    auto* pid = cmd->add_option("-p,--pid", pid_, "process whose binaries to resolve")->check(CLI::PositiveNumber);
    cmd->add_option("--exe", exe_, "resolve against this executable instead of a pid")->excludes(pid);
    cmd->add_option("--profile", profile_, "built-in profile name or profile file (default: detect)");
    cmd->add_flag("--exact-entry", exact_entry_, "show the points without relocation (probe_placement.h)");
    cmd->footer(Footer(R"(  looptrace probes -p 1234                     which profile matches, and its points
  looptrace probes --exe ./app --profile my.profile
)"));
  }

  int Run(std::vector<std::string>) override {
    loader::TargetBinaries target;
    if (pid_ > 0) {
      target.pid = pid_;
      auto exe = loader::ExecutableOf(pid_);
      if (!exe) return Fail(exe.error());
      target.exe_path = *exe;
    } else if (!exe_.empty()) {
      // A FIFO or a device would block or lie to every profile's checks: refused first.
      if (auto file = OpenRegularFile(exe_, "executable", kMaxElfBytes, ExitCode::kTarget); !file)
        return Fail(file.error());
      auto binary = loader::ProbedBinaryOf(exe_);
      if (!binary) return Fail(binary.error());
      target.exe_path = *binary;
    } else {
      return Fail(Error{"probes needs -p PID or --exe PATH", "example: looptrace probes -p 1234", ExitCode::kUsage});
    }
    target.exact_entry = exact_entry_;
    const loader::TargetCommand command = pid_ > 0 ? loader::ReadTargetCommand(pid_) : loader::TargetCommand{};
    loader::Profile profile;
    loader::AttachPlan plan;
    if (profile_.empty()) {
      // Auto-detection, explained: every built-in in detection order, and why it fits or not.
      loader::Detection d = loader::DetectProfile(target, /*stop_at_first=*/false);
      // The runtime checks `record` makes on the picked profile (a JVM whose method probes are
      // off): the same verdict here. An executable alone has no command line to judge by.
      std::optional<Error> refused;
      if (d.picked && pid_ > 0)
        if (auto checked = loader::CheckRuntimes(d.profile, d.plan, target, command); !checked)
          refused = checked.error();
      std::cout << "auto-detection (built-in profiles in order; the first that fits is used):\n";
      for (size_t i = 0; i < d.candidates.size(); ++i) {
        const auto& c = d.candidates[i];
        const bool picked = d.picked == i;
        const char* verdict = picked ? (refused ? "refused" : "picked") : c.matches ? "fits too" : "no";
        std::cout << fmt::format("  {:<14} {:<8} {}\n", c.name, verdict,
                                 picked && refused ? refused->message : c.reason);
      }
      std::cout << "\n";
      if (refused) {
        std::cout.flush();
        return Fail(*refused);
      }
      if (!d.picked) {
        std::cout.flush();
        // A runtime looptrace knows, missing what its profiles need, says so (runtimes.h).
        std::string why = loader::DiagnoseRuntime(target, command);
        return Fail(Error{
            fmt::format("no built-in profile fits {}", pid_ > 0 ? fmt::format("pid {}", pid_) : exe_),
            !why.empty() ? why
                         : "pass --profile FILE with the target's probe points (see docs/profiles-and-runtimes.md)",
            ExitCode::kProfile});
      }
      profile = std::move(d.profile);
      plan = std::move(d.plan);
      if (profile.runtimes.empty())
        if (std::string why = loader::DiagnoseRuntime(target, command); !why.empty())
          log::Warning("{}; detected profile {} sees only what it defines", why, profile.name);
    } else {
      auto chosen = loader::ChooseProfile(profile_, target);
      if (!chosen) return Fail(chosen.error());
      if (pid_ > 0)
        if (auto checked = loader::CheckRuntimes(chosen->first, chosen->second, target, command); !checked)
          return Fail(checked.error());
      profile = std::move(chosen->first);
      plan = std::move(chosen->second);
    }
    const size_t slow = loader::PrintProbeList(profile, plan, std::cout);
    std::cout.flush();  // the table before any warning on stderr
    if (slow)
      log::Warning(
          "{} probe point{} start with an instruction the kernel single-steps (~15x slower "
          "per hit than an emulated nop/push) and could not be moved (see above); prefer a "
          "nop5-padded or frame-pointer entry",
          slow, slow == 1 ? "" : "s");
    return 0;
  }

 private:
  pid_t pid_ = 0;
  std::string exe_;
  std::string profile_;
  bool exact_entry_ = false;
};

class ProfilesCommand : public Command {
 public:
  std::string_view name() const override { return "profiles"; }
  void Setup(CLI::App* cmd) override { cmd->footer(Footer("  looptrace profiles\n")); }
  int Run(std::vector<std::string>) override {
    // Detection order; fragments (shared lines for `include`) after.
    std::cout << "built-in profiles, in auto-detection order:\n";
    for (bool fragments : {false, true}) {
      const bool any = std::any_of(loader::BuiltinProfiles().begin(), loader::BuiltinProfiles().end(),
                                   [&](const loader::BuiltinProfile& b) { return b.fragment == fragments; });
      if (fragments && any) std::cout << "\nfragments (lines other profiles include):\n";
      for (const auto& builtin : loader::BuiltinProfiles()) {
        if (builtin.fragment != fragments) continue;
        auto profile = loader::ParseProfile(builtin.text, builtin.name);
        std::cout << fmt::format("{:<15} {}\n", builtin.name,
                                 profile ? profile->description : "(invalid: " + profile.error().message + ")");
      }
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> MakeProbesCommand() { return std::make_unique<ProbesCommand>(); }
std::unique_ptr<Command> MakeProfilesCommand() { return std::make_unique<ProfilesCommand>(); }

}  // namespace looptrace::cli
