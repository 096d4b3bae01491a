// looptrace probes (-p PID | --exe PATH) [--profile P]: resolve probe points, attach nothing.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/runtimes.h"
#include "looptrace/loader/target_process.h"
#include "looptrace/symbols/probe_cost.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

class ProbesCommand : public Command {
 public:
  std::string_view name() const override { return "probes"; }

  void Setup(CLI::App* cmd) override {
    auto* pid = cmd->add_option("-p,--pid", pid_, "process whose binaries to resolve")->check(CLI::PositiveNumber);
    cmd->add_option("--exe", exe_, "resolve against this executable instead of a pid")->excludes(pid);
    cmd->add_option("--profile", profile_, "built-in profile name or profile file (default: detect)");
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
      auto binary = loader::ProbedBinaryOf(exe_);
      if (!binary) return Fail(binary.error());
      target.exe_path = *binary;
    } else {
      return Fail(Error{"probes needs -p PID or --exe PATH", "example: looptrace probes -p 1234", ExitCode::kUsage});
    }
    auto chosen = loader::ChooseProfile(profile_, target);
    if (!chosen) {
      // A runtime looptrace knows, missing what its profiles need, says so (runtimes.h).
      Error e = chosen.error();
      if (profile_.empty())
        if (std::string why = loader::DiagnoseRuntime(target, pid_ > 0 ? loader::ReadTargetCommand(pid_)
                                                                        : loader::TargetCommand{});
            !why.empty())
          e.hint = why;
      return Fail(e);
    }
    const auto& [profile, plan] = *chosen;
    std::cout << fmt::format("profile {} ({})\n", profile.name, profile.source);
    std::cout << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>10}  {:<12} {}\n", "id", "role", "kind", "point", "offset",
                             "cost", "binary");
    size_t slow = 0;
    for (const auto& p : plan.probes) {
      std::string cost = std::string(symbols::ProbeCostName(p.instruction.cost));
      if (!p.instruction.mnemonic.empty()) cost += " (" + p.instruction.mnemonic + ")";
      if (p.instruction.cost == symbols::ProbeCost::kSingleStep) ++slow;
      std::string point = p.symbol;
      if (p.usdt_sites > 1) point += fmt::format(" [{} sites]", p.usdt_sites);
      std::cout << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>#10x}  {:<12} {}\n", p.probe_id, RoleName(p.spec.role),
                               loader::ProbeKindName(p.spec.kind), point, p.file_offset, cost, p.binary_path);
    }
    std::cout.flush();  // the table before any warning on stderr
    if (slow)
      log::Warning("{} probe point{} start with an instruction the kernel single-steps (~15x slower "
                   "per hit than an emulated nop/push); prefer a nop5-padded or frame-pointer entry",
                   slow, slow == 1 ? "" : "s");
    return 0;
  }

 private:
  pid_t pid_ = 0;
  std::string exe_;
  std::string profile_;
};

class ProfilesCommand : public Command {
 public:
  std::string_view name() const override { return "profiles"; }
  void Setup(CLI::App* cmd) override { cmd->footer(Footer("  looptrace profiles\n")); }
  int Run(std::vector<std::string>) override {
    for (const auto& builtin : loader::BuiltinProfiles()) {
      auto profile = loader::ParseProfile(builtin.text, builtin.name);
      std::cout << fmt::format("{:<14} {}\n", builtin.name,
                               profile ? profile->description : "(invalid: " + profile.error().message + ")");
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> MakeProbesCommand() { return std::make_unique<ProbesCommand>(); }
std::unique_ptr<Command> MakeProfilesCommand() { return std::make_unique<ProfilesCommand>(); }

}  // namespace looptrace::cli
