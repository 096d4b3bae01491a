#include "loader/target/target_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "looptrace/util/safe_file.h"

namespace looptrace::loader {
namespace {

// Why `path` cannot be run, or "" when it can.
std::string CannotRun(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return strerror(errno);
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (!S_ISREG(st.st_mode)) return "it is not a regular file";
  if (access(path.c_str(), X_OK) != 0) return strerror(errno);
  return "";
}

}  // namespace

Result<std::string> FindInPath(const std::string& command) {
  if (command.find('/') != std::string::npos) {
    if (std::string why = CannotRun(command); !why.empty())
      return MakeError(fmt::format("cannot run {}: {}", command, why), ExitCode::kTarget);
    return command;
  }
  const char* path_env = getenv("PATH");
  std::string paths = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= paths.size()) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos) end = paths.size();
    // An empty PATH entry is the current directory.
    std::string candidate = (end > start ? paths.substr(start, end - start) : std::string(1, '.')) + "/" + command;
    if (CannotRun(candidate).empty()) return candidate;
    start = end + 1;
  }
  return MakeError(fmt::format("command not found: {}", command), ExitCode::kTarget,
                   "give the path of the program, or fix PATH");
}

namespace {

Result<std::string> InterpreterOf(const std::string& command_path, int depth) {
  // The first line only, at most 4 KiB of it, never blocking (the kernel reads 256 bytes).
  auto file = OpenRegularFile(command_path, "", kMaxElfBytes, ExitCode::kTarget);
  if (!file) return command_path;  // exec(2) will say what is wrong with it
  char head[4096];
  ssize_t n;
  do {
    n = pread(file->fd.get(), head, sizeof(head), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 2 || head[0] != '#' || head[1] != '!') return command_path;
  std::string first(head + 2, static_cast<size_t>(n) - 2);
  first.resize(std::min(first.size(), first.find('\n')));
  size_t begin = first.find_first_not_of(" \t");
  if (begin == std::string::npos)
    return MakeError(fmt::format("cannot run {}: its #! line names no interpreter", command_path), ExitCode::kTarget);
  size_t end = first.find_first_of(" \t\r", begin);
  std::string interpreter = first.substr(begin, end - begin);
  // "#!/usr/bin/env python3": env runs the program PATH finds (the one to probe).
  if (interpreter.ends_with("/env") && end != std::string::npos) {
    size_t word = first.find_first_not_of(" \t", end);
    if (word != std::string::npos && first[word] != '-') {
      std::string program = first.substr(word, first.find_first_of(" \t\r", word) - word);
      if (auto found = FindInPath(program); found && depth < 4) return InterpreterOf(*found, depth + 1);
    }
  }
  if (std::string why = CannotRun(interpreter); !why.empty())
    return MakeError(fmt::format("cannot run {}: bad interpreter {}: {}", command_path, interpreter, why),
                     ExitCode::kTarget);
  return interpreter;
}

}  // namespace

Result<std::string> ProbedBinaryOf(const std::string& command_path) { return InterpreterOf(command_path, 0); }

Result<std::string> ExecutableOf(pid_t pid) {
  std::string link = fmt::format("/proc/{}/exe", pid);
  char buf[4096];
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) {
    const int err = errno;
    if (err == ENOENT) {
      // A zombie keeps its /proc entry but has no executable any more.
      if (access(fmt::format("/proc/{}", pid).c_str(), F_OK) == 0)
        return MakeError(fmt::format("pid {} has exited (a zombie waiting to be reaped)", pid), ExitCode::kTarget);
      return MakeError(fmt::format("no process with pid {}", pid), ExitCode::kTarget);
    }
    const bool refused = err == EACCES || err == EPERM;
    return SystemError(fmt::format("cannot read {}", link), err, refused ? ExitCode::kPermission : ExitCode::kTarget,
                       refused
                           ? PermissionHint("the kernel refuses root access to that process (another container or user "
                                            "namespace, not dumpable, or a Yama/LSM policy)")
                           : "");
  }
  std::string path(buf, n);
  // A deleted or container-private executable is still reachable through the link.
  if (path.ends_with(" (deleted)") || access(path.c_str(), R_OK) != 0) return link;
  return path;
}

UniqueFd OpenPidFd(pid_t pid) { return UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))); }

Result<HeldChild> HeldChild::Fork(const std::string& path, const std::vector<std::string>& argv) {
  int release[2], exec_error[2];
  if (pipe2(release, O_CLOEXEC) != 0) return SystemError("pipe", errno);
  UniqueFd release_read(release[0]), release_write(release[1]);
  if (pipe2(exec_error, O_CLOEXEC) != 0) return SystemError("pipe", errno);
  UniqueFd error_read(exec_error[0]), error_write(exec_error[1]);
  // Everything the child needs is built before fork: it only calls async-signal-safe code.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t child = fork();
  if (child < 0) return SystemError("fork", errno);
  if (child == 0) {
    close(release_write.get());  // else the read below never sees looptrace give up
    close(error_read.get());
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    char go;
    if (read(release_read.get(), &go, 1) != 1) _exit(127);  // looptrace gave up: never run untraced
    execv(path.c_str(), args.data());
    int err = errno;
    (void)!write(error_write.get(), &err, sizeof(err));
    _exit(127);
  }
  HeldChild held;
  held.pid_ = child;
  held.path_ = path;
  held.pid_fd_ = OpenPidFd(child);
  held.release_ = std::move(release_write);
  held.exec_error_ = std::move(error_read);
  return held;
}

HeldChild::HeldChild(HeldChild&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pid_fd_(std::move(other.pid_fd_)),
      release_(std::move(other.release_)),
      exec_error_(std::move(other.exec_error_)),
      path_(std::move(other.path_)),
      released_(other.released_) {}

HeldChild::~HeldChild() {
  if (pid_ > 0 && !released_) Abandon();
}

void HeldChild::Abandon() {
  release_.Reset();  // the child reads EOF and exits without running the command
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

Result<void> HeldChild::Release() {
  released_ = true;
  if (write(release_.get(), "g", 1) != 1) return SystemError("cannot start the command", errno);
  release_.Reset();
  int err = 0;
  if (read(exec_error_.get(), &err, sizeof(err)) == sizeof(err)) {
    waitpid(pid_, nullptr, 0);
    return SystemError(fmt::format("cannot run {}", path_), err, ExitCode::kTarget);
  }
  return {};
}

}  // namespace looptrace::loader
