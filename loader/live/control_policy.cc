#include "loader/live/control_policy.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

namespace looptrace::loader {
namespace {

using nlohmann::json;

std::string ModeText(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

}  // namespace

std::string RunDirectory() {
  if (const char* dir = getenv("LOOPTRACE_RUN_DIR"); dir && *dir) return dir;
  return "/run/looptrace";
}

std::string ControlSocketPath(pid_t pid) { return fmt::format("{}/{}.sock", RunDirectory(), pid); }
std::string TombstonePath(pid_t pid) { return fmt::format("{}/{}.ended", RunDirectory(), pid); }

std::string EndedSessionText(pid_t pid) {
  const std::string path = TombstonePath(pid);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_size > 65536) return "";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t n = read(fd, text.data(), text.size());
  close(fd);
  if (n != st.st_size) return "";
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return "";
  std::string reason = j.value("reason", "");
  std::string report = j.value("report", "");
  std::string ended = j.value("ended", "");
  std::string out = fmt::format("the session of pid {} ended ({}{})", pid, reason, ended.empty() ? "" : " at " + ended);
  if (!report.empty()) out += "; its report: " + report;
  return out;
}

Result<void> CheckRunDirectory(bool create) {
  const std::string dir = RunDirectory();
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && create) {
      const mode_t old = umask(077);
      int made = mkdir(dir.c_str(), 0700);
      const int err = errno;
      umask(old);
      if (made != 0 && err != EEXIST)
        return SystemError(fmt::format("cannot create {}", dir), err, ExitCode::kEndpoint);
      return CheckRunDirectory(false);
    }
    if (errno == ENOENT)
      return MakeError("no background sessions (no " + dir + ")", ExitCode::kSession,
                       "start one with `looptrace attach -p PID`");
    if (errno == EACCES)
      return SystemError(dir, errno, ExitCode::kPermission, "background sessions are root's: run as root");
    return SystemError(dir, errno, ExitCode::kEndpoint);
  }
  if (!S_ISDIR(st.st_mode))
    return MakeError(fmt::format("{} is not a directory: refusing it", dir), ExitCode::kPermission);
  if (st.st_uid != 0)
    return MakeError(fmt::format("{} is owned by uid {}, not root: refusing it", dir, st.st_uid),
                     ExitCode::kPermission);
  if (st.st_mode & 077)
    return MakeError(fmt::format("{} has mode {} (expected 0700): refusing it", dir, ModeText(st.st_mode)),
                     ExitCode::kPermission, fmt::format("chmod 700 {}", dir));
  if (geteuid() != 0 && access(dir.c_str(), X_OK) != 0)
    return MakeError(fmt::format("{}: permission denied", dir), ExitCode::kPermission,
                     "background sessions are root's: run as root");
  return {};
}

Result<void> CheckSocketFile(const std::string& path, const struct stat& st) {
  if (!S_ISSOCK(st.st_mode))
    return MakeError(fmt::format("{} exists and is not a socket: refusing to use or remove it", path),
                     ExitCode::kPermission, "remove it if it is not looptrace's");
  if (st.st_uid != 0)
    return MakeError(fmt::format("control socket {} is owned by uid {}, not root: refusing it", path, st.st_uid),
                     ExitCode::kPermission, "remove it if it is not looptrace's");
  if (st.st_mode & 077)
    return MakeError(
        fmt::format("control socket {} has mode {} (expected 0600): refusing it", path, ModeText(st.st_mode)),
        ExitCode::kPermission, "remove it if it is not looptrace's");
  return {};
}

int PeerUid(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
  return static_cast<int>(cred.uid);
}

Result<sockaddr_un> SocketAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path))
    return MakeError(fmt::format("control socket path {} is too long", path), ExitCode::kEndpoint,
                     "use a shorter LOOPTRACE_RUN_DIR");
  std::copy(path.begin(), path.end(), addr.sun_path);
  return addr;
}

std::vector<pid_t> SessionSockets() {
  std::vector<pid_t> pids;
  DIR* dir = opendir(RunDirectory().c_str());
  if (!dir) return pids;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (!name.ends_with(".sock")) continue;
    name.remove_suffix(5);
    char* end = nullptr;
    std::string digits(name);
    long pid = std::strtol(digits.c_str(), &end, 10);
    if (!digits.empty() && end && *end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(dir);
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace looptrace::loader
