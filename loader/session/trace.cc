#include "loader/session/trace.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string_view>

#include "loader/bpf/bpf_prerequisites.h"
#include "loader/plan/profile_choice.h"
#include "loader/plan/runtime_checks.h"
#include "loader/plan/usdt_semaphores.h"
#include "loader/runtimes/runtimes.h"
#include "loader/target/proc_readers.h"
#include "loader/target/target_process.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

// The profile for the target; when none matches, what looptrace sees of a runtime it knows
// (a CPython without USDT probes, a shim script) becomes the hint. Then the runtime checks.
Result<std::pair<Profile, AttachPlan>> ChooseAndCheck(const SessionOptions& options, const TargetBinaries& target,
                                                      const TargetCommand& command) {
  auto chosen = ChooseProfile(options.profile, target);
  if (!chosen) {
    Error e = chosen.error();
    if (options.profile.empty())
      if (std::string why = DiagnoseRuntime(target, command); !why.empty()) e.hint = why;
    return std::unexpected(e);
  }
  // A detected profile the target's runtime cannot serve as it runs (a JVM without method
  // probes): the runtime's other built-in profile.
  if (options.profile.empty())
    for (const std::string& name : chosen->first.runtimes) {
      const Runtime* runtime = FindRuntime(name);
      auto other = runtime ? runtime->ProfileInstead(chosen->first.name, target, command) : std::nullopt;
      if (!other) continue;
      ASSIGN_OR_RETURN(Profile profile, LoadProfile(other->profile));
      auto plan = ResolveProfile(profile, target);
      if (!plan) return std::unexpected(Error(plan.error()));
      log::Info("{}", other->why);
      chosen = std::pair{std::move(profile), std::move(*plan)};
      break;
    }
  // A runtime looptrace knows but cannot see into, traced by a generic profile: say why.
  if (options.profile.empty() && chosen->first.runtimes.empty())
    if (std::string why = DiagnoseRuntime(target, command); !why.empty())
      log::Warning("{}; detected profile {} sees only what it defines", why, chosen->first.name);
  RETURN_IF_ERROR(CheckRuntimes(chosen->first, chosen->second, target, command));
  // A mark a program not started yet cannot show (or an explicit profile lacks): messages may
  // never come, and the user should know which other profile to try.
  const std::string probes_args = target.pid > 0 ? fmt::format("-p {}", target.pid) : "--exe " + target.exe_path;
  for (const std::string& assumption : chosen->second.assumptions)
    log::Warning(
        "profile {}{} {}; without it the profile shows no messages: `looptrace probes {}` lists the "
        "profiles that fit (epoll fits any poll loop)",
        chosen->first.name, options.profile.empty() ? " (auto-detected)" : "", assumption, probes_args);
  for (const std::string& warning : chosen->second.warnings) log::Warning("{}", warning);
  return chosen;
}

std::string DescribeProbeCount(const AttachPlan& plan) {
  return fmt::format("{} probe{}", plan.probes.size(), plan.probes.size() == 1 ? "" : "s");
}

// Names up to three slow probe points; more are summarized (listed with -v).
void WarnAboutExpensiveProbes(const AttachPlan& plan) {
  // A uprobe and a uretprobe on one function trap on the same first instruction: one point.
  std::vector<const ResolvedProbe*> slow;
  std::set<std::pair<std::string, uint64_t>> points;
  for (const auto& p : plan.probes)
    if (points.insert({p.binary_path, p.address}).second && p.instruction.cost == symbols::ProbeCost::kSingleStep)
      slow.push_back(&p);
  for (const ResolvedProbe* p : slow) {
    auto text = fmt::format(
        "{}:{} fires on '{}', which the kernel single-steps (~15x the cost "
        "of an emulated instruction; `looptrace probes` says why it was not moved)",
        p->binary_path, p->symbol, p->instruction.mnemonic);
    if (slow.size() <= 3)
      log::Warning("{}", text);
    else
      log::V1("{}", text);
  }
  if (slow.size() > 3)
    log::Warning(
        "{} of {} probe points start with an instruction the kernel single-steps (~15x "
        "the cost of an emulated one); -v lists them, `looptrace probes` shows all",
        slow.size(), points.size());
}

// What a session's start costs, wall and the loader's CPU (profile choice, unwind rows, the
// BPF verifier, attaching): said on the start line, and per phase with -v.
class StartClock {
 public:
  StartClock() : wall_ns_(Now(CLOCK_MONOTONIC)), cpu_ns_(Now(CLOCK_PROCESS_CPUTIME_ID)) {}
  // -v: the phase that ended now, and what it took since the previous one.
  void Phase(std::string_view what) {
    const uint64_t wall = Now(CLOCK_MONOTONIC), cpu = Now(CLOCK_PROCESS_CPUTIME_ID);
    log::V1("start: {} in {:.0f} ms ({:.0f} ms CPU)", what, (wall - phase_wall_ns_) / 1e6, (cpu - phase_cpu_ns_) / 1e6);
    phase_wall_ns_ = wall;
    phase_cpu_ns_ = cpu;
  }
  std::string Text() const {
    return fmt::format("{:.2f} s ({:.2f} s CPU)", (Now(CLOCK_MONOTONIC) - wall_ns_) / 1e9,
                       (Now(CLOCK_PROCESS_CPUTIME_ID) - cpu_ns_) / 1e9);
  }

 private:
  static uint64_t Now(clockid_t clock) {
    timespec ts;
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
  }
  uint64_t wall_ns_, cpu_ns_;
  uint64_t phase_wall_ns_ = wall_ns_, phase_cpu_ns_ = cpu_ns_;
};

}  // namespace

Result<AttachedProcess> AttachProcess(pid_t pid, const SessionOptions& options, int signal_fd, Pipeline& pipeline) {
  StartClock clock;
  if (pid <= 0) return MakeError(fmt::format("invalid pid {}", pid), ExitCode::kUsage);
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return MakeError(fmt::format("no process with pid {}", pid), ExitCode::kTarget, "check the pid with ps or pgrep");
  RETURN_IF_ERROR(CheckBpfPrerequisites(options.btf_path));
  TargetBinaries target;
  target.pid = pid;
  target.exact_entry = options.exact_entry;
  ASSIGN_OR_RETURN(target.exe_path, ExecutableOf(pid));
  AttachedProcess attached;
  attached.pid_fd = OpenPidFd(pid);
  if (!attached.pid_fd) return SystemError(fmt::format("cannot watch pid {}", pid), errno, ExitCode::kTarget);
  ASSIGN_OR_RETURN(auto chosen, ChooseAndCheck(options, target, ReadTargetCommand(pid)));
  auto& [profile, plan] = chosen;
  WarnAboutExpensiveProbes(plan);
  clock.Phase("profile chosen and resolved");

  attached.session = std::make_unique<Session>(options, signal_fd, pipeline);
  Session& session = *attached.session;
  session.SetInterpreter(InterpreterOf(target, pid));
  clock.Phase("interpreter found");
  session.PrepareUnwindRows(pid, target.exe_path, target.ld_library_path);
  clock.Phase("unwind rows compiled");
  RETURN_IF_ERROR(session.Prepare(profile, std::move(plan), static_cast<uint32_t>(pid)));
  clock.Phase("bpf loaded, rows published");
  // Thread tracking first: the target is running, and the loop thread's records carry its
  // exact CPU time only once sched_switch is traced, so its first record already does (a
  // message begun on the kernel's tick-granular figure and ended on the exact one would be
  // off by up to a tick).
  session.AttachThreadTracking();
  if (auto ok = session.Attach(pid); !ok) {
    if (kill(pid, 0) != 0 && errno == ESRCH)
      return MakeError(fmt::format("pid {} exited while probes were being attached", pid), ExitCode::kTarget);
    return std::unexpected(ok.error());
  }
  for (const std::string& disabled : DisabledUsdtProbes(pid, session.plan())) log::Warning("{}", disabled);
  SessionStart start;
  start.pid = static_cast<uint32_t>(pid);
  start.command = ReadComm(pid);
  start.command_line = ReadCommandLine(pid);
  start.device = ReadDeviceInfo(pid);
  clock.Phase("probes attached");
  session.Start(start);
  attached.command = start.command;
  attached.profile = profile.name;
  attached.start_cost = clock.Text();
  return attached;
}

Result<void> RecordProcess(pid_t pid, const SessionOptions& options, int signal_fd, Pipeline& pipeline) {
  ASSIGN_OR_RETURN(AttachedProcess attached, AttachProcess(pid, options, signal_fd, pipeline));
  Session& session = *attached.session;
  log::Info("tracing pid {} ({}) with profile {}: {} attached in {}; Ctrl-C to stop", pid, attached.command,
            attached.profile, DescribeProbeCount(session.plan()), attached.start_cost);
  ASSIGN_OR_RETURN(std::string reason, session.Stream(attached.pid_fd.get()));
  if (reason == "target-exited") log::Info("pid {} exited", pid);
  session.Finish(reason);
  return {};
}

Result<RunResult> RunCommand(const std::vector<std::string>& argv, const SessionOptions& options, int signal_fd,
                             Pipeline& pipeline) {
  StartClock clock;
  if (argv.empty()) return MakeError("run needs a command after --", ExitCode::kUsage);
  ASSIGN_OR_RETURN(std::string command_path, FindInPath(argv[0]));
  TargetBinaries target;
  target.exact_entry = options.exact_entry;
  ASSIGN_OR_RETURN(target.exe_path, ProbedBinaryOf(command_path));
  RETURN_IF_ERROR(CheckBpfPrerequisites(options.btf_path));
  if (const char* ld = getenv("LD_LIBRARY_PATH")) target.ld_library_path = ld;
  ASSIGN_OR_RETURN(auto chosen, ChooseAndCheck(options, target, CommandOf(argv)));
  auto& [profile, plan] = chosen;
  WarnAboutExpensiveProbes(plan);
  clock.Phase("profile chosen and resolved");

  ASSIGN_OR_RETURN(HeldChild child, HeldChild::Fork(command_path, argv));
  SessionOptions held = options;
  held.held_child = true;
  Session session(held, signal_fd, pipeline);
  session.SetInterpreter(InterpreterOf(target, child.pid()));
  clock.Phase("interpreter found");
  session.PrepareUnwindRows(child.pid(), target.exe_path, target.ld_library_path);
  clock.Phase("unwind rows compiled");
  RETURN_IF_ERROR(session.Prepare(profile, std::move(plan), static_cast<uint32_t>(child.pid())));
  clock.Phase("bpf loaded");
  session.AttachThreadTracking();  // before the probes, as for a running process (above)
  RETURN_IF_ERROR(session.Attach(child.pid()));
  clock.Phase("probes attached");
  SessionStart start;
  start.pid = static_cast<uint32_t>(child.pid());
  start.command = argv[0].substr(argv[0].find_last_of('/') + 1);
  start.command_line = CommandLineText(argv);
  start.device = ReadDeviceInfo(getpid());
  session.Start(start);
  log::Info("running {} as pid {} with profile {}: {} attached in {}", argv[0], child.pid(), profile.name,
            DescribeProbeCount(session.plan()), clock.Text());
  RETURN_IF_ERROR(child.Release());

  ASSIGN_OR_RETURN(std::string reason, session.Stream(child.pid_fd()));
  RunResult result;
  result.pid = child.pid();
  if (reason == "interrupted") {
    // Like perf: the workload does not outlive an interrupted session.
    kill(child.pid(), SIGTERM);
    for (int i = 0; i < 200; ++i) {
      siginfo_t info{};
      if (waitid(P_PID, child.pid(), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid) break;
      usleep(10'000);
    }
    kill(child.pid(), SIGKILL);  // no-op if it is already gone (zombie until reaped below)
  }
  if (reason != "duration") {
    int status = 0;
    if (waitpid(child.pid(), &status, 0) == child.pid()) {
      if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) result.exit_signal = WTERMSIG(status);
    }
  } else {
    log::Info("duration reached; pid {} keeps running untraced", child.pid());
  }
  std::optional<int> status = result.exit_status;
  if (result.exit_signal) status = 128 + *result.exit_signal;
  session.Finish(reason, status);
  if (result.exit_status && *result.exit_status != 0)
    log::Warning("{} exited with status {}", argv[0], *result.exit_status);
  if (result.exit_signal) log::Warning("{} was killed by signal {}", argv[0], strsignal(*result.exit_signal));
  return result;
}

}  // namespace looptrace::loader
