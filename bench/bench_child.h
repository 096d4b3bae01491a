// A child process with pipes on stdin, stdout and stderr, for the benchmarks that run a
// target and a tracer as separate processes.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace looptrace::bench {

using Clock = std::chrono::steady_clock;

// A child process with pipes on stdin, stdout and stderr.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      Wait();
    }
    for (int fd : {in_, out_, err_})
      if (fd >= 0) close(fd);
  }
  pid_t pid() const { return pid_; }
  void Write(const std::string& text) {
    if (write(in_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) std::abort();
  }
  // Reads stdout (or stderr) until `pattern` appears; the text read so far is kept.
  bool WaitFor(bool from_stderr, const std::string& pattern, int timeout_s) {
    std::string& buffer = from_stderr ? err_text_ : out_text_;
    auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    while (buffer.find(pattern) == std::string::npos) {
      if (!Pump(deadline)) return false;
    }
    return true;
  }
  // Drains both pipes until they close (the child exited), counting lines of stdout.
  void Drain(int timeout_s) {
    auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
    while ((out_ >= 0 || err_ >= 0) && Pump(deadline)) {
    }
  }
  int Wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    waited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& out() const { return out_text_; }
  const std::string& err() const { return err_text_; }
  size_t out_lines() const { return out_lines_; }
  void KeepOutput(bool keep) { keep_out_ = keep; }

 private:
  bool Pump(Clock::time_point deadline) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return false;
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    if (poll(fds, 2, left) <= 0) return false;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out_ : err_;
      if (fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fd);
        fd = -1;
        continue;
      }
      if (i == 0) {
        out_lines_ += std::count(buf, buf + n, '\n');
        if (keep_out_ || out_text_.size() < (1 << 16)) out_text_.append(buf, n);
      } else {
        err_text_.append(buf, n);
      }
    }
    return true;
  }
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  bool waited_ = false, keep_out_ = true;
  std::string out_text_, err_text_;
  size_t out_lines_ = 0;
};

// The timing a bench target prints when it finishes ("ns_per_iteration N"); nullopt with
// the reason in `why` when it did not finish within 10 minutes or printed none.
inline std::optional<double> TargetTiming(Child& target, std::string* why) {
  if (!target.WaitFor(false, "ns_per_iteration", 600)) {
    *why = "the target did not finish: " + target.err();
    return std::nullopt;
  }
  std::smatch m;
  static const std::regex re("ns_per_iteration ([0-9.]+)");
  if (!std::regex_search(target.out(), m, re)) {
    *why = "no timing from the target";
    return std::nullopt;
  }
  return std::stod(m[1]);
}

}  // namespace looptrace::bench
