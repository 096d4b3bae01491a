#include "looptrace/loader/live_session.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "looptrace/loader/bpf_session.h"
#include "looptrace/loader/event_decoder.h"
#include "looptrace/loader/stall_snapshot.h"
#include "looptrace/loader/string_reader.h"
#include "looptrace/symbols/process_symbolizer.h"
#include "looptrace/tracers/event_sanitize.h"
#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {
namespace {

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
}

// Closes an fd on scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~ScopedFd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Returns the signal number if one is pending on the signalfd, else 0.
int TakePendingSignal(int signal_fd) {
  signalfd_siginfo info;
  ssize_t n = read(signal_fd, &info, sizeof(info));
  return n == sizeof(info) ? static_cast<int>(info.ssi_signo) : 0;
}

// The name may hold any byte but NUL, newlines included: only the kernel's final one goes.
std::string ReadComm(pid_t pid) {
  std::string comm = ReadRegularFile(fmt::format("/proc/{}/comm", pid), "", 4096).value_or("");
  if (comm.ends_with('\n')) comm.pop_back();
  return comm;
}

// Ends (dispatch.end, ...) are attached before begins, so a half-attached session sees
// at most an end without its begin, never a begin whose end is missed.
bool IsEndRole(Role role) {
  switch (role) {
    case Role::kDispatchEnd:
    case Role::kFrameEnd:
    case Role::kPhaseEnd:
    case Role::kMethodExit:
    case Role::kIdleEnd:
    case Role::kInputFinish:
    case Role::kAppCreateEnd:
    case Role::kPollEnd:
    case Role::kBarrierRemove:
      return true;
    default:
      return false;
  }
}

std::string DescribeProbeCount(const AttachPlan& plan) {
  return fmt::format("{} probe{}", plan.probes.size(), plan.probes.size() == 1 ? "" : "s");
}

// Names up to three slow probe points; more are summarized (listed with -v).
void WarnAboutExpensiveProbes(const AttachPlan& plan) {
  std::vector<const ResolvedProbe*> slow;
  for (const auto& p : plan.probes)
    if (p.instruction.cost == symbols::ProbeCost::kSingleStep) slow.push_back(&p);
  for (const ResolvedProbe* p : slow) {
    auto text = fmt::format("{}:{} starts with '{}', which the kernel single-steps (~15x the cost "
                            "of an emulated instruction)",
                            p->binary_path, p->symbol, p->instruction.mnemonic);
    if (slow.size() <= 3) log::Warning("{}", text);
    else log::V1("{}", text);
  }
  if (slow.size() > 3)
    log::Warning("{} of {} probe points start with an instruction the kernel single-steps (~15x "
                 "the cost of an emulated one); -v lists them, `looptrace probes` shows all",
                 slow.size(), plan.probes.size());
}

// Names -finstrument-functions addresses from the target's ELF symbols.
class SymbolizingAddressNamer : public AddressNamer {
 public:
  explicit SymbolizingAddressNamer(int pid) : symbolizer_(pid) {}
  symbols::ProcessSymbolizer* symbolizer() { return &symbolizer_; }
  void Prime() { symbolizer_.ReadMaps(); }
  std::optional<std::string> Name(uint32_t, uint64_t address) override {
    auto where = symbolizer_.Symbolize(address);
    if (!where || where->function.empty()) return std::nullopt;
    if (where->function_offset == 0) return where->function;
    return fmt::format("{}+{:#x}", where->function, where->function_offset);
  }

 private:
  symbols::ProcessSymbolizer symbolizer_;
};

// Matrix's device block: machine level by total RAM (DeviceUtil), memory, and the
// process's CPU share since boot (utime+stime over the sum of /proc/stat's cpu line).
DeviceInfo ReadDeviceInfo(pid_t pid) {
  DeviceInfo info;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemTotal:") info.mem_total_bytes = value * 1024;
    if (key == "MemAvailable:") info.mem_available_kb = value;
  }
  const uint64_t mb = info.mem_total_bytes / (1024 * 1024);
  const long cores = sysconf(_SC_NPROCESSORS_CONF);
  if (mb >= 8 * 1024) info.machine = "BEST";
  else if (mb >= 6 * 1024) info.machine = "HIGH";
  else if (mb >= 4 * 1024) info.machine = "MIDDLE";
  else if (mb >= 2 * 1024) info.machine = cores >= 4 ? "MIDDLE" : "LOW";
  else if (mb > 0) info.machine = "BAD";
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t total = 0;
  stat >> cpu;
  for (int i = 0; i < 7 && stat >> value; ++i) total += value;
  // The whole file: the comm in it may hold ')' and newlines (prctl(PR_SET_NAME)).
  std::string line = ReadRegularFile(fmt::format("/proc/{}/stat", pid), "", kMaxProcFileBytes).value_or("");
  if (size_t paren = line.rfind(')'); paren != std::string::npos && total) {
    std::istringstream fields(line.substr(paren + 1));
    uint64_t utime = 0, stime = 0;
    std::string field;
    for (int i = 3; fields >> field; ++i) {  // field 3 is the state
      if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
      if (i == 15) {
        stime = std::strtoull(field.c_str(), nullptr, 10);
        break;
      }
    }
    info.cpu_app_percent = 100.0 * static_cast<double>(utime + stime) / static_cast<double>(total);
  }
  return info;
}

// Everything a running session owns. Destruction detaches all probes.
class Session {
 public:
  Session(const SessionOptions& options, int signal_fd, EventSink& sink)
      : options_(options), signal_fd_(signal_fd), safe_sink_(sink), sink_(safe_sink_) {}

  Result<void> Prepare(const Profile& profile, AttachPlan plan, uint32_t tgid) {
    profile_name_ = profile.name;
    plan_ = std::move(plan);
    addresses_.emplace(static_cast<int>(tgid));
    BpfSessionOptions bpf_options;
    bpf_options.target_tgid = tgid;
    bpf_options.all_threads = options_.all_threads;
    bpf_options.ringbuf_bytes = options_.ringbuf_bytes;
    bpf_options.beat_capacity = options_.beat_capacity;
    bpf_options.dwarf_unwind = options_.dwarf_unwind;
    bpf_options.btf_path = options_.btf_path;
    ASSIGN_OR_RETURN(bpf_, BpfSession::Open(bpf_options, [this](std::span<const uint8_t> raw) {
                       if (!primed_) {
                         // The first record proves the target runs its own image now.
                         addresses_->Prime();
                         primed_ = true;
                       }
                       decoded_.clear();
                       decoder_->Decode(raw, &decoded_);
                       for (const Event& event : decoded_) sink_.OnEvent(event);
                     }));
    DecoderOptions decoder_options;
    decoder_options.beat_min_cost_ns = options_.beat_min_cost_ns;
    decoder_options.cold_startup_beats_ns = options_.cold_startup_beats_ns;
    decoder_options.warm_startup_beats_ns = options_.warm_startup_beats_ns;
    kernel_stacks_.emplace(bpf_.get());
    decoder_.emplace(&plan_, &strings_, &decoder_stats_, bpf_.get(), &*addresses_, decoder_options,
                     &*kernel_stacks_);
    tgid_ = tgid;
    snapshots_.emplace(static_cast<pid_t>(tgid), bpf_.get(), &*kernel_stacks_, addresses_->symbolizer(),
                       &decoder_stats_);
    return {};
  }

  // Off-CPU reasons, wakeups, SIGQUIT and stacks; a kernel without them only loses those.
  void AttachThreadTracking() {
    if (!options_.thread_tracking) return;
    if (auto ok = bpf_->AttachThreadTracking(static_cast<int>(tgid_), options_.sample_hz); !ok) {
      log::Warning("thread-state tracing is off: {}", ok.error().message);
      decoder_stats_.Add(StatId::thread_tracking_off);
    }
  }

  // LAG / ANR snapshots of the main thread's message while it still runs.
  void Watchdog(uint64_t now_ns) {
    if (now_ns - last_cpu_sample_ns_ >= 500'000'000) {
      snapshots_->SampleCpu(now_ns);
      last_cpu_sample_ns_ = now_ns;
    }
    auto begin = decoder_->OpenMessageBegin(tgid_);
    if (!begin || now_ns < *begin) return;
    const uint64_t running = now_ns - *begin;
    for (bool anr : {false, true}) {
      const uint64_t threshold = anr ? options_.anr_threshold_ns : options_.lag_threshold_ns;
      if (running < threshold || !snapshotted_.insert({*begin, anr}).second) continue;
      StallSnapshot snapshot = snapshots_->Take(tgid_, *begin, anr, now_ns);
      log::V1("{} snapshot of the message running for {:.3f} s", anr ? "ANR" : "LAG", running / 1e9);
      sink_.OnEvent(snapshot);
      if (auto beats = decoder_->OpenMessageBeats(tgid_, now_ns)) sink_.OnEvent(*beats);
    }
  }

  // Attaches ends before begins, one group per (binary, kind): with uprobe_multi a
  // group is a single link.
  Result<void> Attach(pid_t pid) {
    std::vector<const ResolvedProbe*> order;
    for (const auto& p : plan_.probes) order.push_back(&p);
    std::stable_partition(order.begin(), order.end(),
                          [](const ResolvedProbe* p) { return IsEndRole(p->spec.role); });
    std::vector<std::vector<const ResolvedProbe*>> groups;
    for (const ResolvedProbe* p : order) {
      auto same_group = [&](const std::vector<const ResolvedProbe*>& g) {
        const ResolvedProbe* f = g.front();
        return IsEndRole(f->spec.role) == IsEndRole(p->spec.role) && f->spec.kind == p->spec.kind &&
               f->binary_path == p->binary_path && p->spec.kind != ProbeKind::kUsdt &&
               UsesFastBeats(*f) == UsesFastBeats(*p) && (!UsesFastBeats(*p) || f->spec.role == p->spec.role);
      };
      auto it = std::find_if(groups.begin(), groups.end(), same_group);
      if (it == groups.end()) groups.push_back({p});
      else it->push_back(p);
    }
    auto started = std::chrono::steady_clock::now();
    for (const auto& group : groups) {
      if (int sig = TakePendingSignal(signal_fd_)) {
        size_t attached = bpf_->attached_points();
        bpf_->Detach();
        return MakeError(fmt::format("interrupted by SIG{} while attaching ({} of {} probe points "
                                     "attached, all detached)",
                                     sigabbrev_np(sig), attached, order.size()),
                         ExitCode::kInterrupted);
      }
      RETURN_IF_ERROR(bpf_->Attach(group, pid));
      if (std::chrono::steady_clock::now() - started > std::chrono::seconds(2))
        log::Info("attached {} of {} probe points...", bpf_->attached_points(), order.size());
    }
    log::V1("attached {} probe points with {}", bpf_->attached_points(),
            bpf_->uses_uprobe_multi() ? "uprobe_multi links" : "one perf-event link each");
    if (size_t skipped = bpf_->skipped_points())
      log::Warning("{} probe point{} matched by a pattern could not be probed and {} skipped "
                   "(-v lists them)", skipped, skipped == 1 ? "" : "s", skipped == 1 ? "was" : "were");
    return {};
  }

  void Start(SessionStart start) {
    start.ts_ns = NowNs(CLOCK_MONOTONIC);
    start.wall_time_ns = NowNs(CLOCK_REALTIME);
    start.profile = profile_name_;
    start.thread_filter = options_.all_threads ? "all" : "main";
    for (const auto& p : plan_.probes)
      start.probes.push_back({p.probe_id, p.spec.role, std::string(ProbeKindName(p.spec.kind)),
                              p.binary_path, p.symbol, p.file_offset});
    sink_.OnEvent(start);
  }

  // Streams events until the duration ends, a signal arrives or pid_fd becomes readable.
  Result<std::string> Stream(int pid_fd) {
    ScopedFd epoll(epoll_create1(EPOLL_CLOEXEC));
    if (epoll.get() < 0) return SystemError("epoll_create1", errno);
    ScopedFd timer;
    auto add = [&](int fd, uint32_t tag) -> Result<void> {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = tag;
      if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, fd, &ev) != 0) return SystemError("epoll_ctl", errno);
      return {};
    };
    enum : uint32_t { kRing, kSignal, kTarget, kTimer };
    RETURN_IF_ERROR(add(bpf_->ring_epoll_fd(), kRing));
    RETURN_IF_ERROR(add(signal_fd_, kSignal));
    if (pid_fd >= 0) RETURN_IF_ERROR(add(pid_fd, kTarget));
    if (options_.duration_s > 0) {
      timer = ScopedFd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
      itimerspec spec{};
      auto ns = static_cast<uint64_t>(options_.duration_s * 1e9);
      spec.it_value.tv_sec = ns / 1'000'000'000ull;
      spec.it_value.tv_nsec = ns % 1'000'000'000ull;
      timerfd_settime(timer.get(), 0, &spec, nullptr);
      RETURN_IF_ERROR(add(timer.get(), kTimer));
    }
    std::string reason;
    while (reason.empty()) {
      epoll_event events[4];
      int n = epoll_wait(epoll.get(), events, 4, options_.poll_interval_ms);
      if (n < 0 && errno != EINTR) return SystemError("epoll_wait", errno);
      for (int i = 0; i < n; ++i) {
        switch (events[i].data.u32) {
          case kSignal: {
            int sig = TakePendingSignal(signal_fd_);
            if (sig) {
              reason = "interrupted";
              log::V1("{} received, stopping", strsignal(sig));
            }
            break;
          }
          case kTarget: reason = "target-exited"; break;
          case kTimer: reason = "duration"; break;
          default: break;
        }
      }
      RETURN_IF_ERROR(bpf_->Consume());
      Watchdog(NowNs(CLOCK_MONOTONIC));
    }
    return reason;
  }

  // Detaches, drains what is left and closes the stream.
  void Finish(const std::string& reason, std::optional<int> exit_status = std::nullopt) {
    uint64_t end_ns = NowNs(CLOCK_MONOTONIC);
    bpf_->Detach();
    (void)bpf_->Consume();
    Stats losses = bpf_->ReadCounters();
    losses.Merge(decoder_stats_);
    sink_.OnEvent(LossCounters{losses});
    sink_.OnEvent(SessionEnd{end_ns, reason, exit_status});
    if (losses.Get(StatId::ringbuf_full))
      log::Warning("{} events were lost because the ring buffer was full; try a larger "
                   "--ringbuf-size", losses.Get(StatId::ringbuf_full));
  }

  size_t attached() const { return bpf_->attached_points(); }
  const AttachPlan& plan() const { return plan_; }

 private:
  SessionOptions options_;
  int signal_fd_;
  SanitizingSink safe_sink_;  // names from the target: valid UTF-8, capped, before any tracer
  EventSink& sink_;
  std::string profile_name_;
  AttachPlan plan_;
  ProcessStringReader strings_;
  Stats decoder_stats_;
  std::optional<SymbolizingAddressNamer> addresses_;
  std::optional<EventDecoder> decoder_;
  std::vector<Event> decoded_;
  bool primed_ = false;
  std::optional<BpfKernelStacks> kernel_stacks_;
  std::optional<SnapshotTaker> snapshots_;
  uint32_t tgid_ = 0;
  uint64_t last_cpu_sample_ns_ = 0;
  std::set<std::pair<uint64_t, bool>> snapshotted_;  // (message begin, anr level) done
  std::unique_ptr<BpfSession> bpf_;
};

ScopedFd OpenPidFd(pid_t pid) {
  return ScopedFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
}

Result<std::string> ExecutableOf(pid_t pid) {
  std::string link = fmt::format("/proc/{}/exe", pid);
  char buf[4096];
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) {
    if (errno == ENOENT) return MakeError(fmt::format("no process with pid {}", pid), ExitCode::kTarget);
    return SystemError(fmt::format("cannot read {}", link), errno,
                       errno == EACCES ? ExitCode::kPermission : ExitCode::kTarget);
  }
  std::string path(buf, n);
  // A deleted or container-private executable is still reachable through the link.
  if (path.ends_with(" (deleted)") || access(path.c_str(), R_OK) != 0) return link;
  return path;
}

// `#!/usr/bin/python3 -u` scripts run the interpreter: that is the binary to probe.
std::string InterpreterOrSelf(const std::string& path) {
  // The first line only (the kernel reads at most 256 bytes of it), never blocking.
  auto file = OpenRegularFile(path, "", kMaxElfBytes);
  if (!file) return path;
  char head[256];
  const ssize_t n = read(file->fd.get(), head, sizeof(head));
  std::string first(head, n > 0 ? static_cast<size_t>(n) : 0);
  first = first.substr(0, first.find('\n'));
  if (!first.starts_with("#!")) return path;
  std::string rest = first.substr(2);
  rest.erase(0, rest.find_first_not_of(" \t"));
  std::string interpreter = rest.substr(0, rest.find_first_of(" \t"));
  return interpreter.empty() ? path : interpreter;
}

Result<std::string> FindInPath(const std::string& command) {
  if (command.find('/') != std::string::npos) {
    if (access(command.c_str(), X_OK) == 0) return command;
    return SystemError(fmt::format("cannot run {}", command), errno, ExitCode::kTarget);
  }
  const char* path_env = getenv("PATH");
  std::string paths = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= paths.size()) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos) end = paths.size();
    std::string dir = paths.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + command;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return MakeError(fmt::format("command not found: {}", command), ExitCode::kTarget,
                   "give the path of the program, or fix PATH");
}

}  // namespace

Result<int> BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return SystemError("sigprocmask", errno);
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return SystemError("signalfd", errno);
  return fd;
}

Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested,
                                                     const TargetBinaries& target) {
  if (!requested.empty()) {
    ASSIGN_OR_RETURN(Profile profile, LoadProfile(requested));
    ASSIGN_OR_RETURN(AttachPlan plan, ResolveProfile(profile, target));
    return std::pair{std::move(profile), std::move(plan)};
  }
  std::string tried;
  TargetBinaries strict = target;
  strict.require_linked = true;
  for (const auto& builtin : BuiltinProfiles()) {
    ASSIGN_OR_RETURN(Profile profile, ParseProfile(builtin.text, "builtin:" + std::string(builtin.name)));
    auto plan = ResolveProfile(profile, strict);
    if (plan) {
      log::V1("profile {} matches the target", profile.name);
      return std::pair{std::move(profile), std::move(*plan)};
    }
    log::V1("profile {} does not match: {}", profile.name, plan.error().message);
    tried += (tried.empty() ? "" : ", ") + profile.name;
  }
  return MakeError(fmt::format("no built-in profile matches {} (tried {})",
                               target.pid > 0 ? fmt::format("pid {}", target.pid) : target.exe_path,
                               tried),
                   ExitCode::kProfile, "pass --profile FILE with the target's probe points (see README \"Profiles\")");
}

Result<void> RecordProcess(pid_t pid, const SessionOptions& options, int signal_fd,
                           EventSink& sink) {
  if (pid <= 0) return MakeError(fmt::format("invalid pid {}", pid), ExitCode::kUsage);
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return MakeError(fmt::format("no process with pid {}", pid), ExitCode::kTarget,
                     "check the pid with ps or pgrep");
  ScopedFd pid_fd = OpenPidFd(pid);
  if (pid_fd.get() < 0)
    return SystemError(fmt::format("cannot watch pid {}", pid), errno, ExitCode::kTarget);
  RETURN_IF_ERROR(CheckBpfPrerequisites(options.btf_path));

  TargetBinaries target;
  target.pid = pid;
  ASSIGN_OR_RETURN(target.exe_path, ExecutableOf(pid));
  ASSIGN_OR_RETURN(auto chosen, ChooseProfile(options.profile, target));
  auto& [profile, plan] = chosen;
  WarnAboutExpensiveProbes(plan);

  Session session(options, signal_fd, sink);
  RETURN_IF_ERROR(session.Prepare(profile, std::move(plan), static_cast<uint32_t>(pid)));
  if (auto attached = session.Attach(pid); !attached) {
    if (kill(pid, 0) != 0 && errno == ESRCH)
      return MakeError(fmt::format("pid {} exited while probes were being attached", pid),
                       ExitCode::kTarget);
    return std::unexpected(attached.error());
  }
  session.AttachThreadTracking();
  SessionStart start;
  start.pid = static_cast<uint32_t>(pid);
  start.command = ReadComm(pid);
  start.device = ReadDeviceInfo(pid);
  session.Start(start);
  log::Info("tracing pid {} ({}) with profile {}: {} attached; Ctrl-C to stop", pid, start.command,
            profile.name, DescribeProbeCount(session.plan()));
  ASSIGN_OR_RETURN(std::string reason, session.Stream(pid_fd.get()));
  if (reason == "target-exited") log::Info("pid {} exited", pid);
  session.Finish(reason);
  return {};
}

Result<RunResult> RunCommand(const std::vector<std::string>& argv, const SessionOptions& options,
                             int signal_fd, EventSink& sink) {
  if (argv.empty()) return MakeError("run needs a command after --", ExitCode::kUsage);
  ASSIGN_OR_RETURN(std::string command_path, FindInPath(argv[0]));
  RETURN_IF_ERROR(CheckBpfPrerequisites(options.btf_path));

  TargetBinaries target;
  target.exe_path = InterpreterOrSelf(command_path);
  if (const char* ld = getenv("LD_LIBRARY_PATH")) target.ld_library_path = ld;
  ASSIGN_OR_RETURN(auto chosen, ChooseProfile(options.profile, target));
  auto& [profile, plan] = chosen;
  WarnAboutExpensiveProbes(plan);

  // The child waits on `release` before exec; `exec_error` reports a failed exec.
  int release[2], exec_error[2];
  if (pipe2(release, O_CLOEXEC) != 0 || pipe2(exec_error, O_CLOEXEC) != 0)
    return SystemError("pipe", errno);
  pid_t child = fork();
  if (child < 0) return SystemError("fork", errno);
  if (child == 0) {
    close(release[1]);
    close(exec_error[0]);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    char go;
    if (read(release[0], &go, 1) != 1) _exit(127);  // looptrace gave up: never run untraced
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(command_path.c_str(), args.data());
    int err = errno;
    (void)!write(exec_error[1], &err, sizeof(err));
    _exit(127);
  }
  close(release[0]);
  close(exec_error[1]);
  ScopedFd release_fd(release[1]), exec_error_fd(exec_error[0]);
  ScopedFd pid_fd = OpenPidFd(child);

  auto abandon_child = [&]() {
    release_fd.Reset();  // the child reads EOF and exits without running the command
    waitpid(child, nullptr, 0);
  };

  Session session(options, signal_fd, sink);
  if (auto ok = session.Prepare(profile, std::move(plan), static_cast<uint32_t>(child)); !ok) {
    abandon_child();
    return std::unexpected(ok.error());
  }
  if (auto ok = session.Attach(child); !ok) {
    abandon_child();
    return std::unexpected(ok.error());
  }
  session.AttachThreadTracking();
  SessionStart start;
  start.pid = static_cast<uint32_t>(child);
  start.command = argv[0].substr(argv[0].find_last_of('/') + 1);
  start.device = ReadDeviceInfo(getpid());
  session.Start(start);
  log::Info("running {} as pid {} with profile {}: {} attached", argv[0], child, profile.name,
            DescribeProbeCount(session.plan()));
  if (write(release_fd.get(), "g", 1) != 1) return SystemError("cannot start the command", errno);
  release_fd.Reset();
  int err = 0;
  if (read(exec_error_fd.get(), &err, sizeof(err)) == sizeof(err)) {
    waitpid(child, nullptr, 0);
    return SystemError(fmt::format("cannot run {}", command_path), err, ExitCode::kTarget);
  }

  ASSIGN_OR_RETURN(std::string reason, session.Stream(pid_fd.get()));
  RunResult result;
  result.pid = child;
  if (reason == "interrupted") {
    // Like perf: the workload does not outlive an interrupted session.
    kill(child, SIGTERM);
    for (int i = 0; i < 200; ++i) {
      siginfo_t info{};
      if (waitid(P_PID, child, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid) break;
      usleep(10'000);
    }
    kill(child, SIGKILL);  // no-op if it is already gone (zombie until reaped below)
  }
  if (reason != "duration") {
    int status = 0;
    if (waitpid(child, &status, 0) == child) {
      if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) result.exit_signal = WTERMSIG(status);
    }
  } else {
    log::Info("duration reached; pid {} keeps running untraced", child);
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
