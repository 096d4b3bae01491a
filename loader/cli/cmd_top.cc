// looptrace top -p PID: a live view refreshed in place (the running message, messages/s,
// p99, busy %, FPS and jank, recent slow messages, ANR/LAG state); q or Ctrl-C quits. It
// reads a background session when the pid has one, else traces the pid itself for as long
// as it runs. When stdout is not a terminal it prints one plain line per refresh instead.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>

#include "loader/cli/cli.h"
#include "loader/live/control_client.h"
#include "loader/live/control_policy.h"
#include "loader/live/daemon.h"
#include "loader/live/live_session.h"
#include "looptrace/report/live_view.h"
#include "looptrace/tracers/messages.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

uint64_t Now(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The terminal while top runs: alternate screen, no echo, keys one at a time. Restored by
// the destructor on every way out.
class Terminal {
 public:
  explicit Terminal(bool interactive) : interactive_(interactive) {
    if (!interactive_) return;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C is SIGINT
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      raw_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    Write("\x1b[?1049h\x1b[?25l");
  }
  ~Terminal() {
    if (!interactive_) return;
    Write("\x1b[?25h\x1b[?1049l");
    if (raw_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  bool interactive() const { return interactive_; }
  bool keys() const { return raw_; }

  void Draw(const std::vector<std::string>& lines) {
    std::string frame = "\x1b[H";
    for (const auto& line : lines) frame += line + "\x1b[K\r\n";
    frame += "\x1b[J";
    Write(frame);
  }
  void Line(const std::string& line) { Write(line + "\n"); }
  std::pair<int, int> Size() const {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) return {ws.ws_col, ws.ws_row};
    return {80, 24};
  }
  // True when q was pressed.
  bool Quit() {
    char buf[64];
    ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] == 'q' || buf[i] == 'Q') return true;
    return false;
  }

 private:
  static void Write(std::string_view text) {
    while (!text.empty()) {
      ssize_t n = write(STDOUT_FILENO, text.data(), text.size());
      if (n <= 0) return;
      text.remove_prefix(static_cast<size_t>(n));
    }
  }
  bool interactive_;
  bool raw_ = false;
  termios saved_{};
};

class TopCommand : public Command {
 public:
  std::string_view name() const override { return "top"; }

  void Setup(CLI::App* cmd) override {
    app_ = cmd;
    cmd->add_option("-p,--pid", pid_, "process to watch (its background session, or traced by top itself)")
        ->required()
        ->check(CLI::PositiveNumber);
    cmd->add_option("-d,--delay", delay_s_, "seconds between refreshes")
        ->check(FiniteNumber(0.1, 3600, "seconds"))
        ->capture_default_str();
    cmd->add_option("-n,--iterations", iterations_, "refresh this many times, then quit (0 = until q)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    AddSessionOptions(cmd, flags_);
    AddAnalysisOptions(cmd, analysis_);
    cmd->footer(
        Footer(R"(  looptrace top -p 1234                        live view of a background session (or trace it now)
  looptrace top -p 1234 -n 10 -d 2 > top.log   plain lines when stdout is not a terminal
)") + R"(
KEYS:
  q       quit (Ctrl-C too). Without a background session top attaches itself and
          detaches when it quits; the session options below apply only then.
)");
  }

  int Run(std::vector<std::string>) override {
    auto signal_fd = loader::BlockTerminationSignals();
    if (!signal_fd) return Fail(signal_fd.error());
    if (std::filesystem::exists(loader::ControlSocketPath(pid_))) {
      auto probe = loader::CallSession(pid_, loader::ControlRequest{"info", ""}, 5'000);
      if (probe && probe->ok) return Remote(signal_fd->get());
      if (probe && !probe->ok) return Fail(Error{probe->error, probe->hint, static_cast<ExitCode>(probe->code)});
      if (!probe && probe.error().code != ExitCode::kSession) return Fail(probe.error());
    }
    return Local(signal_fd->get());
  }

 private:
  // Waits a refresh interval for q or a signal; false: quit.
  bool Wait(Terminal& terminal, int signal_fd) {
    const uint64_t until = Now(CLOCK_MONOTONIC) + static_cast<uint64_t>(delay_s_ * 1e9);
    for (;;) {
      const uint64_t now = Now(CLOCK_MONOTONIC);
      if (now >= until) return true;
      pollfd fds[2] = {{signal_fd, POLLIN, 0}, {terminal.keys() ? STDIN_FILENO : -1, POLLIN, 0}};
      poll(fds, 2, static_cast<int>((until - now) / 1'000'000) + 1);
      if (fds[0].revents & POLLIN) return false;
      if ((fds[1].revents & POLLIN) && terminal.Quit()) return false;
    }
  }

  void Show(Terminal& terminal, const SessionSummary& summary, const LiveStatus& status) {
    if (terminal.interactive()) {
      auto [width, height] = terminal.Size();
      terminal.Draw(TopScreen(summary, status, width, height));
    } else {
      terminal.Line(TopLine(status, Now(CLOCK_REALTIME)));
    }
  }

  int Remote(int signal_fd) {
    Terminal terminal(isatty(STDOUT_FILENO));
    for (int i = 0; iterations_ == 0 || i < iterations_; ++i) {
      auto response = loader::CallSession(pid_, loader::ControlRequest{"status", ""}, 10'000);
      if (!response || !response->ok) {
        std::string why = response ? response->error : response.error().message;
        if (terminal.interactive())
          terminal.Draw({fmt::format("looptrace top: {}", why), "", "q: quit"});
        else
          terminal.Line(fmt::format("looptrace top: {}", why));
        break;  // the session ended (or cannot be asked): nothing more to show
      }
      auto parsed = loader::ParseStatusBody(response->body);
      if (!parsed) return Fail(parsed.error());
      Show(terminal, parsed->first, parsed->second);
      if (iterations_ && i + 1 == iterations_) break;
      if (!Wait(terminal, signal_fd)) break;
    }
    return 0;
  }

  // No background session: trace the pid here, until q, Ctrl-C or its exit.
  int Local(int signal_fd) {
    if (geteuid() != 0)
      return Fail(Error{fmt::format("pid {} has no background session, and tracing it needs root", pid_),
                        "run as root, or `looptrace attach -p PID` first", ExitCode::kPermission});
    if (auto ok = flags_.Resolve(); !ok) return Fail(ok.error());
    if (!(app_ && app_->count("--keep-messages")))
      analysis_.Mutable<MessagesOptions>("messages").keep_messages = 100'000;
    loader::LiveSessionConfig config;
    config.pid = pid_;
    config.session = flags_.session;
    auto session = loader::LiveSession::Start(config, analysis_, signal_fd);
    if (!session) return Fail(session.error());
    auto loop = loader::EventLoop::Create();
    if (!loop) return Fail(loop.error());
    bool exited = false;
    if (auto ok = (*session)->Join(**loop, [&] { exited = true; }); !ok) return Fail(ok.error());

    SessionSummary summary;
    summary.pid = static_cast<uint32_t>(pid_);
    summary.command = (*session)->command();
    summary.profile = (*session)->profile();
    summary.since_wall_ns = (*session)->started_wall_ns();
    summary.daemon_pid = static_cast<uint32_t>(getpid());
    summary.probe_points = (*session)->probe_points();
    {
      Terminal terminal(isatty(STDOUT_FILENO));
      uint64_t next_draw = 0;
      int drawn = 0;
      for (;;) {
        // The loop drains the rings every 25 ms; the view is drawn every delay.
        if (auto ok = (*loop)->RunOnce(0); !ok) break;
        if (auto ok = (*session)->Drain(); !ok) break;
        if (exited) break;
        const uint64_t now = Now(CLOCK_MONOTONIC);
        if (now >= next_draw) {
          Show(terminal, summary, (*session)->Status(now));
          next_draw = now + static_cast<uint64_t>(delay_s_ * 1e9);
          if (iterations_ && ++drawn >= iterations_) break;
        }
        pollfd fds[2] = {{signal_fd, POLLIN, 0}, {terminal.keys() ? STDIN_FILENO : -1, POLLIN, 0}};
        poll(fds, 2, 25);
        if (fds[0].revents & POLLIN) break;
        if ((fds[1].revents & POLLIN) && terminal.Quit()) break;
      }
    }
    Result<void> written;
    (*session)->End(**loop, exited ? "target-exited" : "interrupted", &written);
    if (exited) log::Info("pid {} exited", pid_);
    return 0;
  }

  pid_t pid_ = 0;
  double delay_s_ = 1;
  int iterations_ = 0;
  SessionFlags flags_;
  AnalysisOptions analysis_;
  CLI::App* app_ = nullptr;
};

}  // namespace

std::unique_ptr<Command> MakeTopCommand() { return std::make_unique<TopCommand>(); }

}  // namespace looptrace::cli
