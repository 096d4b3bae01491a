// looptrace attach -p PID [options]: a background session. Attaches, leaves the terminal
// (loader/live/daemonize.h) and returns once the probes are attached (its exit status says
// whether they were); the session then lives in a daemon of its own until the target exits
// or `detach`.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "loader/cli/cli.h"
#include "loader/decode/mapping_namer.h"
#include "loader/live/control_policy.h"
#include "loader/live/daemon.h"
#include "loader/live/daemonize.h"
#include "loader/target/proc_readers.h"
#include "looptrace/report/render.h"
#include "looptrace/tracers/messages.h"
#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::cli {
namespace {

constexpr const char* kExamples =
    R"(  looptrace attach -p 1234 -o /var/log/app.json -f json     trace in the background, then:
  looptrace status -p 1234                      live figures from any shell
  looptrace top -p 1234                         a live view
  looptrace snapshot -p 1234                    every thread now, like kill -3
  looptrace report -p 1234                      the report so far (the session goes on)
  looptrace detach -p 1234                      the final report goes to -o, probes go away
  looptrace attach --name myapp --metrics :9464 --clickhouse http://ch:8123/
                                                every process named myapp, one daemon, Prometheus
                                                on port 9464, rows into ClickHouse
  looptrace attach -p 1234 --foreground --metrics 127.0.0.1:9464   stay in the terminal (systemd)
)";

// "%p" in an output path is the target's pid; relative paths are made absolute now, since
// the daemon runs from /.
Result<std::string> OutputFor(const std::string& pattern, pid_t pid, size_t targets, std::string_view flag) {
  if (pattern.empty() || pattern == "-") {
    if (pattern == "-")
      return MakeError(fmt::format("{} -: a background session has no terminal to write to", flag), ExitCode::kUsage,
                       "give a file");
    return std::string();
  }
  std::string path = pattern;
  const bool has_pid = path.find("%p") != std::string::npos;
  if (targets > 1 && !has_pid)
    return MakeError(fmt::format("{} {}: several targets need %p in the file name", flag, pattern), ExitCode::kUsage,
                     fmt::format("example: {} /var/log/looptrace/app-%p.json", flag));
  for (size_t at; (at = path.find("%p")) != std::string::npos;) path.replace(at, 2, std::to_string(pid));
  return std::filesystem::absolute(path).lexically_normal().string();
}

class AttachCommand : public Command {
 public:
  std::string_view name() const override { return "attach"; }

  void Setup(CLI::App* cmd) override {
    app_ = cmd;
    cmd->add_option("-p,--pid", pids_, "process to trace (repeat for several: one daemon)")
        ->check(CLI::PositiveNumber)
        ->delimiter(',');
    cmd->add_option("--name", name_, "every running process whose name (comm or executable) is NAME");
    AddSessionOptions(cmd, flags_);
    cmd->add_option("--save", save_, "also save the decoded event stream (JSON lines, .gz ok; %p = pid)");
    cmd->add_option("-o,--output", output_.path,
                    "where the final report goes when the session ends (%p = pid); fixed now, never changed later");
    cmd->add_option("-f,--format", output_.format, "format of the final report: " + RendererNames())
        ->capture_default_str();
    cmd->add_option("--method-mapping", output_.method_mapping, "Matrix methodMapping.txt naming method ids");
    cmd->add_option("--metrics", metrics_,
                    "serve Prometheus/OpenMetrics text at http://ADDR:PORT/metrics (:PORT = 127.0.0.1 only; "
                    "0.0.0.0:PORT or [::]:PORT for every interface)");
    cmd->add_option("--clickhouse", clickhouse_,
                    "insert report rows into ClickHouse over HTTP: http://[user@]host[:8123][/?database=looptrace] "
                    "(the password: --clickhouse-password-file or CLICKHOUSE_PASSWORD, never the command line)");
    cmd->add_option("--clickhouse-password-file", clickhouse_password_file_,
                    "the ClickHouse user's password: the first line of FILE (keep it 0600)");
    cmd->add_option("--clickhouse-interval", clickhouse_interval_, "seconds between ClickHouse inserts")
        ->check(FiniteNumber(1, 3600, "seconds"))
        ->capture_default_str();
    cmd->add_option("--clickhouse-slow-threshold", clickhouse_slow_ms_,
                    "messages at least MS long become slow_messages rows")
        ->check(FiniteNumber(1, 1e7, "ms"))
        ->capture_default_str();
    cmd->add_option("--clickhouse-buffer-mb", clickhouse_buffer_mb_, "MiB of rows waiting for ClickHouse at most")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    cmd->add_option("--host", host_, "host label of metrics and rows (default: the hostname)");
    cmd->add_option("--build", build_, "build column of rows (default: the executable's GNU build id)");
    cmd->add_flag("--foreground", foreground_, "stay in the terminal (for systemd); Ctrl-C ends the sessions");
    cmd->add_option("--log", log_, "the background session's log (default: /run/looptrace/PID.log)");
    AddAnalysisOptions(cmd, analysis_);
    cmd->footer(Footer(kExamples) + R"(
BACKGROUND SESSIONS:
  As root. Each traced pid gets a control socket /run/looptrace/PID.sock (0600, directory
  0700) that status, snapshot, report -p, detach and top use. A session ends when its target
  exits (the final report is written, the socket removed), on detach, or when the daemon gets
  SIGTERM. A second attach to the same pid fails (exit 8). Messages listed in the report are
  capped at --keep-messages (default here 100000); summaries count every message.
)");
  }

  int Run(std::vector<std::string>) override {
    if (geteuid() != 0)
      return Fail(Error{"attach needs root (it loads BPF programs and owns /run/looptrace)", "run it with sudo",
                        ExitCode::kPermission});
    if (auto ok = CheckFormat(output_.format); !ok) return Fail(ok.error());
    if (auto ok = flags_.Resolve(); !ok) return Fail(ok.error());
    std::vector<pid_t> pids(pids_.begin(), pids_.end());
    if (!name_.empty()) {
      auto named = loader::PidsNamed(name_);
      if (named.empty())
        return Fail(
            Error{fmt::format("no running process is named '{}'", name_), "check with pgrep -l", ExitCode::kTarget});
      pids.insert(pids.end(), named.begin(), named.end());
    }
    if (pids.empty())
      return Fail(Error{"attach needs -p PID or --name NAME", "example: looptrace attach -p 1234 -o report.txt",
                        ExitCode::kUsage});
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());

    loader::DaemonOptions daemon;
    if (!metrics_.empty()) {
      auto address = loader::ParseMetricsAddress(metrics_);
      if (!address) return Fail(address.error());
      daemon.metrics = *address;
    }
    if (!clickhouse_.empty()) {
      auto options = loader::ParseClickHouseUrl(clickhouse_);
      if (!options) return Fail(options.error());
      if (auto ok = ClickHousePassword(*options); !ok) return Fail(ok.error());
      options->max_queued_bytes = static_cast<size_t>(clickhouse_buffer_mb_) << 20;
      daemon.clickhouse = *options;
    }
    daemon.clickhouse_interval_s = clickhouse_interval_;
    daemon.clickhouse_slow_ns = static_cast<uint64_t>(clickhouse_slow_ms_ * 1e6);
    daemon.host = host_;
    daemon.build = build_;
    // A long session must not grow without bound: list the latest messages only.
    if (!keep_messages_given()) analysis_.Mutable<MessagesOptions>("messages").keep_messages = 100'000;

    std::vector<loader::LiveSessionConfig> configs;
    for (pid_t pid : pids) {
      loader::LiveSessionConfig c;
      c.pid = pid;
      c.session = flags_.session;
      c.format = output_.format;
      c.render = analysis_.Rendering();
      c.render.full = true;  // a background session's text report stays whole
      auto out = OutputFor(output_.path, pid, pids.size(), "-o");
      if (!out) return Fail(out.error());
      c.output_path = *out;
      auto save = OutputFor(save_, pid, pids.size(), "--save");
      if (!save) return Fail(save.error());
      c.save_path = *save;
      if (auto ok = CheckNotSameFile(c.output_path, c.save_path, "--save"); !ok) return Fail(ok.error());
      configs.push_back(std::move(c));
    }
    if (auto ok = loader::CheckRunDirectory(true); !ok) return Fail(ok.error());
    auto namer = LoadMethodMapping(output_, analysis_);
    if (!namer) return Fail(namer.error());
    if (!foreground_) {
      if (log_.empty()) log_ = fmt::format("{}/{}.log", loader::RunDirectory(), pids.front());
      log_ = std::filesystem::absolute(log_).lexically_normal().string();
    }
    daemon.log_path = log_;

    // Signals are taken through a signalfd from here on (the child inherits the mask).
    auto signal_fd = loader::BlockTerminationSignals();
    if (!signal_fd) return Fail(signal_fd.error());
    if (!foreground_) {
      loader::Daemonized forked = loader::Daemonize(log_, signal_fd->get());
      if (!forked.child) {  // the terminal's side: done once the session said how it went
        if (!forked.parent) return Fail(forked.parent.error());
        for (const auto& line : *forked.parent) log::Info("{}", line);
        return 0;
      }
      ready_ = std::move(*forked.child);
      log::Info("attaching to pid {}{} (looptrace daemon pid {})", pids.front(),
                pids.size() > 1 ? fmt::format(" and {} more", pids.size() - 1) : "", getpid());
      // The child: a new signalfd (its mask is inherited).
      signal_fd = loader::BlockTerminationSignals();
      if (!signal_fd) return Report(signal_fd.error());
    }
    // The daemon writes to pipes and sockets whose readers may be gone: errors, not death.
    signal(SIGPIPE, SIG_IGN);
    return Serve(daemon, configs, signal_fd->get());
  }

 private:
  bool keep_messages_given() const { return app_ && app_->count("--keep-messages") > 0; }

  // The password, from the file, else CLICKHOUSE_PASSWORD, else the URL (said to be a bad
  // place: argv is every local user's to read until main hides it).
  Result<void> ClickHousePassword(loader::ClickHouseOptions& options) const {
    if (!clickhouse_password_file_.empty()) {
      ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(clickhouse_password_file_, "the ClickHouse password file", 4096,
                                                        ExitCode::kUsage));
      struct stat st {};
      if (fstat(file.fd.get(), &st) == 0 && (st.st_mode & 077))
        log::Warning("{}: other users may read it (mode {:o}): chmod 600 it", clickhouse_password_file_,
                     st.st_mode & 0777);
      ASSIGN_OR_RETURN(std::string text, ReadOpenedFile(file, clickhouse_password_file_, "the ClickHouse password file",
                                                        4096, ExitCode::kUsage));
      options.password = text.substr(0, text.find_first_of("\r\n"));
    } else if (const char* env = std::getenv("CLICKHOUSE_PASSWORD"); env && *env) {
      options.password = env;
    } else if (options.password_in_url) {
      log::Warning(
          "--clickhouse: a password in the URL shows in the process list until looptrace hides it; pass it with "
          "--clickhouse-password-file FILE or CLICKHOUSE_PASSWORD instead");
    }
    if (!options.password.empty() && options.user.empty()) options.user = "default";
    return {};
  }

  // An error of the background session: to the terminal waiting for it, and to its log.
  int Report(const Error& error) {
    ready_.Failed(error);
    return Fail(error);
  }

  int Serve(const loader::DaemonOptions& options, const std::vector<loader::LiveSessionConfig>& configs,
            int signal_fd) {
    auto daemon = loader::Daemon::Create(options, signal_fd);
    if (!daemon) return Report(daemon.error());
    std::vector<std::string> lines;
    for (const auto& config : configs) {
      if (auto ok = (*daemon)->Reserve(config.pid); !ok) return Report(ok.error());
      auto session = loader::LiveSession::Start(config, analysis_, signal_fd);
      if (!session) {
        (*daemon)->Release(config.pid);
        return Report(session.error());
      }
      lines.push_back(fmt::format("pid {} ({}): profile {}, {} probe points attached; control {}; final report {}",
                                  config.pid, (*session)->command(), (*session)->profile(), (*session)->probe_points(),
                                  loader::ControlSocketPath(config.pid),
                                  config.output_path.empty() ? "none (no -o)" : config.output_path));
      if (auto ok = (*daemon)->Add(std::move(*session)); !ok) return Report(ok.error());
    }
    if (!(*daemon)->metrics_url().empty()) lines.push_back("metrics: " + (*daemon)->metrics_url());
    if (!foreground_) lines.push_back(fmt::format("daemon pid {}, log {}", getpid(), log_));
    for (const auto& line : lines) {
      if (!foreground_) log::Info("{}", line);  // the log
    }
    if (ready_.waiting()) {
      ready_.Ready(lines);
    } else {
      for (const auto& line : lines) log::Info("{}", line);
      log::Info("Ctrl-C ends the session{}", configs.size() > 1 ? "s" : "");
    }
    return (*daemon)->Run();
  }

  std::vector<int> pids_;
  std::string name_;
  SessionFlags flags_;
  std::string save_;
  ReportOutput output_;
  std::string metrics_;
  std::string clickhouse_;
  std::string clickhouse_password_file_;
  double clickhouse_interval_ = 10;
  double clickhouse_slow_ms_ = 100;
  int clickhouse_buffer_mb_ = 16;
  std::string host_;
  std::string build_;
  bool foreground_ = false;
  std::string log_;
  CLI::App* app_ = nullptr;
  AnalysisOptions analysis_;
  loader::ReadyChannel ready_;  // background: the terminal waiting for the word
};

}  // namespace

std::unique_ptr<Command> MakeAttachCommand() { return std::make_unique<AttachCommand>(); }

}  // namespace looptrace::cli
