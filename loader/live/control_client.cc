#include "loader/live/control_client.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "loader/live/control_policy.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

Result<void> WriteAll(int fd, std::string_view data, uint64_t deadline_ms) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return SystemError("control socket: send", errno);
    const uint64_t now = NowMs();
    if (now >= deadline_ms) return MakeError("control socket: the session did not read the request in time");
    pollfd p{fd, POLLOUT, 0};
    poll(&p, 1, static_cast<int>(deadline_ms - now));
  }
  return {};
}

Result<std::string> ReadAll(int fd, uint64_t deadline_ms) {
  std::string data;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      data.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return data;
    if (errno != EAGAIN && errno != EINTR) return SystemError("control socket: recv", errno);
    const uint64_t now = NowMs();
    if (now >= deadline_ms)
      return MakeError("the session did not answer in time", ExitCode::kRuntime,
                       "it may be busy; see its log, or try again");
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<uint64_t>(deadline_ms - now, 1000)));
  }
}

std::string NoSessionHint(pid_t pid) {
  return fmt::format("`looptrace sessions` lists them; start one with `looptrace attach -p {}`", pid);
}

}  // namespace

Result<UniqueFd> ConnectToSocket(const std::string& path, int* error_number) {
  ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(path));
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SystemError("socket", errno);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error_number = errno;
    return SystemError(fmt::format("cannot connect to {}", path), errno);
  }
  *error_number = 0;
  return fd;
}

Result<ControlResponse> CallSession(pid_t pid, const ControlRequest& request, int timeout_ms) {
  RETURN_IF_ERROR(CheckRunDirectory(false));
  const std::string path = ControlSocketPath(pid);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == EACCES)
      return SystemError(path, errno, ExitCode::kPermission, "background sessions are root's: run as root");
    std::string ended = EndedSessionText(pid);
    if (!ended.empty()) return MakeError(ended, ExitCode::kSession);
    return MakeError(fmt::format("no looptrace session for pid {}", pid), ExitCode::kSession, NoSessionHint(pid));
  }
  RETURN_IF_ERROR(CheckSocketFile(path, st));
  int err = 0;
  auto fd = ConnectToSocket(path, &err);
  if (!fd) {
    if (err == ECONNREFUSED) {
      if (unlink(path.c_str()) == 0) log::Info("removed the stale control socket {} (its session was killed)", path);
      return MakeError(fmt::format("no looptrace session for pid {} (its session was killed)", pid), ExitCode::kSession,
                       NoSessionHint(pid));
    }
    if (err == EACCES) return std::unexpected(Error{fd.error().message, "run as root", ExitCode::kPermission});
    return std::unexpected(fd.error());
  }
  if (int uid = PeerUid(fd->get()); uid != 0)
    return MakeError(fmt::format("{} is served by uid {}, not root: refusing to talk to it", path, uid),
                     ExitCode::kPermission);
  const uint64_t deadline = NowMs() + static_cast<uint64_t>(timeout_ms);
  // The session may end while we talk (its target exited): its socket then goes away with
  // our connection, and its tombstone says how it ended.
  auto ended = [&](const Error& error) -> Result<ControlResponse> {
    std::string text = EndedSessionText(pid);
    if (!text.empty()) return MakeError(text, ExitCode::kSession);
    return std::unexpected(error);
  };
  if (auto ok = WriteAll(fd->get(), FormatControlRequest(request), deadline); !ok) return ended(ok.error());
  shutdown(fd->get(), SHUT_WR);
  auto data = ReadAll(fd->get(), deadline);
  if (!data) return ended(data.error());
  auto response = ParseControlResponse(*data);
  if (!response) return ended(response.error());
  return response;
}

}  // namespace looptrace::loader
