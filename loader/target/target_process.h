// The target process: finding a command to run, starting it held before exec (so probes are
// attached first), and what looptrace needs to know of a running one.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

// The executable `command` runs: itself when it has a '/', else searched in PATH. A
// directory, a missing file or one without execute permission is a target error.
Result<std::string> FindInPath(const std::string& command);

// The binary whose probes a command needs: the command itself, or for a `#!` script its
// interpreter (which must exist and be executable); for `#!/usr/bin/env NAME`, the NAME
// found in PATH (itself followed if it is a script).
Result<std::string> ProbedBinaryOf(const std::string& command_path);

// /proc/PID/exe's target (the link itself when deleted or not accessible).
Result<std::string> ExecutableOf(pid_t pid);

// A pidfd that becomes readable when the process exits (invalid on old kernels).
UniqueFd OpenPidFd(pid_t pid);

// A child forked and held before exec: it runs the command only when released, so probes
// can be attached first. Destroyed unreleased, it exits (127) without running the command.
class HeldChild {
 public:
  static Result<HeldChild> Fork(const std::string& path, const std::vector<std::string>& argv);
  HeldChild(HeldChild&&) noexcept;
  HeldChild& operator=(HeldChild&&) = delete;
  ~HeldChild();

  pid_t pid() const { return pid_; }
  int pid_fd() const { return pid_fd_.get(); }
  // Lets the child exec; an exec failure comes back as an error with execv's errno.
  Result<void> Release();

 private:
  HeldChild() = default;
  void Abandon();

  pid_t pid_ = -1;
  UniqueFd pid_fd_;
  UniqueFd release_;     // closing it without writing tells the child to give up
  UniqueFd exec_error_;  // the child writes execv's errno here (closes on a good exec)
  std::string path_;
  bool released_ = false;
};

}  // namespace looptrace::loader
