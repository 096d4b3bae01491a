#include "loader/live/daemonize.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

using nlohmann::json;

// The word of the background process to the one waiting in the terminal: a JSON line.
// The terminal's process may be gone (killed, its terminal closed): the write then fails
// with EPIPE (SIGPIPE is ignored), and the session goes on without it.
void Tell(int fd, const json& message) {
  const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    log::Warning("the attach command that started this daemon is gone ({}); the session goes on",
                 errno == EPIPE ? "nobody reads its pipe" : strerror(errno));
}

// The child, once forked: a session of its own, no terminal, stderr to the log.
void LeaveTerminal(const std::string& log_path) {
  setsid();
  // A daemon outlives its readers: a closed pipe or socket is an error to handle, not death.
  signal(SIGPIPE, SIG_IGN);
  if (chdir("/") != 0) {
  }
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
  }
  if (log >= 0)
    dup2(log, 2);
  else if (null >= 0)
    dup2(null, 2);
  if (null > 2) close(null);
  if (log > 2) close(log);
  log::WithTimestamps() = true;
}

// The parent: reads the child's word, forwarding termination signals to it meanwhile.
Result<std::vector<std::string>> WaitForChild(pid_t child, int ready, int signal_fd, const std::string& log_path) {
  std::string data;
  for (;;) {
    pollfd fds[2] = {{ready, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info;
      // Ctrl-C or SIGTERM stops the attach (it detaches what it attached and says which
      // signal). SIGHUP, the terminal going away, does not: the session is meant to outlive it.
      while (read(signal_fd, &info, sizeof(info)) == sizeof(info))
        if (info.ssi_signo != SIGHUP) kill(child, static_cast<int>(info.ssi_signo));
    }
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      ssize_t n = read(ready, buf, sizeof(buf));
      if (n <= 0) break;
      data.append(buf, static_cast<size_t>(n));
    }
  }
  // A child that failed exits; reap it so no zombie is left (a ready one keeps running).
  json word = json::parse(data.substr(0, data.find('\n')), nullptr, false);
  if (!word.is_object()) {
    int status = 0;
    waitpid(child, &status, 0);
    return std::unexpected(
        Error{"the background session died while attaching", "see its log: " + log_path, ExitCode::kRuntime});
  }
  if (!word.value("ok", false)) {
    int status = 0;
    waitpid(child, &status, 0);
    return std::unexpected(Error{word.value("error", "attach failed"), word.value("hint", ""),
                                 static_cast<ExitCode>(word.value("code", 1))});
  }
  return word.value("lines", std::vector<std::string>{});
}

}  // namespace

void ReadyChannel::Ready(const std::vector<std::string>& lines) {
  if (!fd_.valid()) return;
  Tell(fd_.get(), json{{"ok", true}, {"lines", lines}});
  fd_.Reset();
}

void ReadyChannel::Failed(const Error& error) {
  if (!fd_.valid()) return;
  Tell(fd_.get(),
       json{{"ok", false}, {"error", error.message}, {"hint", error.hint}, {"code", static_cast<int>(error.code)}});
  fd_.Reset();
}

Daemonized Daemonize(const std::string& log_path, int signal_fd) {
  Daemonized result;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.parent = std::unexpected(Error{fmt::format("pipe: {}", strerror(errno)), "", ExitCode::kRuntime});
    return result;
  }
  const pid_t child = fork();
  if (child < 0) {
    result.parent = std::unexpected(Error{fmt::format("fork: {}", strerror(errno)), "", ExitCode::kRuntime});
    return result;
  }
  if (child == 0) {
    close(pipe_fds[0]);
    LeaveTerminal(log_path);
    result.child.emplace(UniqueFd(pipe_fds[1]));
    return result;
  }
  close(pipe_fds[1]);
  result.parent = WaitForChild(child, pipe_fds[0], signal_fd, log_path);
  close(pipe_fds[0]);
  return result;
}

}  // namespace looptrace::loader
