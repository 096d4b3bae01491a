// Small readers of /proc for a target: its name, stat fields, memory, the device block; and
// the processes of a name.
// Missing files (the process exited) read as empty, never as an error or an exception.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "looptrace/tracers/event.h"

namespace looptrace::loader {

// A /proc file in full: bounded (kMaxProcFileBytes), never blocking, "" when unreadable.
std::string ReadProcFile(const std::string& path);
// The first line of a file, "" when unreadable.
std::string ReadFirstLine(const std::string& path);
// A comm file (process or thread name): every byte the name holds, newlines included
// (prctl(PR_SET_NAME) allows them); only the kernel's final newline is dropped.
std::string ReadName(const std::string& path);
// Fields of a /proc/.../stat line after "(comm)": index 0 is field 3 (the state).
std::vector<std::string> StatFields(const std::string& path);
// A whole unsigned number in base 10 or 16, or nothing (never throws).
std::optional<uint64_t> ParseUnsigned(std::string_view text, int base = 10);
std::optional<int64_t> ParseSigned(std::string_view text);

std::string ReadComm(pid_t pid);
// The comm of each of a process's threads (/proc/PID/task/*/comm), in no order; empty when
// the process is gone.
std::vector<std::string> ThreadComms(pid_t pid);
// A command line as one line a shell would read back: words joined by spaces, each word with
// a space, a quote or another shell character in single quotes; past kMaxCommandLineBytes
// cut and marked (text_safety.h's kTruncatedMark).
inline constexpr size_t kMaxCommandLineBytes = 1024;
std::string CommandLineText(const std::vector<std::string>& argv);
// /proc/PID/cmdline as CommandLineText; "" when unreadable or empty (a kernel thread, a zombie).
std::string ReadCommandLine(pid_t pid);
// Every process whose comm (or executable's name) is `name`, this one left out; sorted.
std::vector<pid_t> PidsNamed(const std::string& name);
// utime + stime of a process, in clock ticks.
std::optional<uint64_t> ReadCpuTicks(pid_t pid);
// /proc/PID/status Vm* and Rss* fields, in kB.
std::vector<std::pair<std::string, uint64_t>> ReadMemoryFields(pid_t pid);
// Matrix's device block: machine level by total RAM, memory, the process's CPU share.
DeviceInfo ReadDeviceInfo(pid_t pid);

}  // namespace looptrace::loader
