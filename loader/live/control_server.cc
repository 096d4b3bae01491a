#include "loader/live/control_server.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "loader/live/control_client.h"
#include "loader/live/control_policy.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {

Result<std::unique_ptr<ControlServer>> ControlServer::Create(pid_t pid, Handler handler) {
  RETURN_IF_ERROR(CheckRunDirectory(true));
  std::unique_ptr<ControlServer> server(new ControlServer());
  server->pid_ = pid;
  server->path_ = ControlSocketPath(pid);
  server->handler_ = std::move(handler);
  const std::string& path = server->path_;

  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    RETURN_IF_ERROR(CheckSocketFile(path, st));
    int err = 0;
    auto fd = ConnectToSocket(path, &err);
    if (fd) {
      return MakeError(fmt::format("pid {} already has a looptrace session ({})", pid, path), ExitCode::kSession,
                       fmt::format("`looptrace status -p {}` shows it; `looptrace detach -p {}` ends it", pid, pid));
    }
    if (err != ECONNREFUSED) return std::unexpected(fd.error());
    // Nobody listens: its session was killed. Replace it.
    if (unlink(path.c_str()) != 0 && errno != ENOENT) return SystemError(fmt::format("cannot remove {}", path), errno);
    log::Info("removed the stale control socket {} (its session was killed)", path);
  }
  unlink(TombstonePath(pid).c_str());

  ASSIGN_OR_RETURN(sockaddr_un addr, SocketAddress(path));
  server->listen_ = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!server->listen_) return SystemError("socket", errno);
  const mode_t old = umask(077);
  int bound = bind(server->listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  umask(old);
  if (bound != 0) {
    if (err == EADDRINUSE)
      return MakeError(fmt::format("pid {} already has a looptrace session ({} appeared meanwhile)", pid, path),
                       ExitCode::kSession);
    return SystemError(fmt::format("cannot create {}", path), err, ExitCode::kEndpoint);
  }
  if (chmod(path.c_str(), 0600) != 0) return SystemError(fmt::format("chmod {}", path), errno, ExitCode::kEndpoint);
  if (lstat(path.c_str(), &st) != 0) return SystemError(path, errno, ExitCode::kEndpoint);
  server->dev_ = st.st_dev;
  server->ino_ = st.st_ino;
  if (listen(server->listen_.get(), 16) != 0) return SystemError(fmt::format("listen {}", path), errno);
  return server;
}

ControlServer::~ControlServer() {
  if (loop_) {
    for (auto& [fd, client] : clients_) loop_->Remove(fd);
    if (listen_) loop_->Remove(listen_.get());
  }
  Close();
}

Result<void> ControlServer::Join(EventLoop& loop) {
  loop_ = &loop;
  return loop.Add(listen_.get(), EPOLLIN, [this](uint32_t) { Accept(); });
}

void ControlServer::Close() {
  if (closed_) return;
  // Connections waiting in the backlog are taken in and answered (the session has ended),
  // rather than reset when the listening socket closes.
  if (listen_) Accept();
  closed_ = true;
  if (loop_ && listen_) loop_->Remove(listen_.get());
  listen_.Reset();
  // Only our own socket: a later session may already have replaced it.
  struct stat st {};
  if (!path_.empty() && lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) unlink(path_.c_str());
}

void ControlServer::Accept() {
  for (;;) {
    int fd = accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: no more; other errors: the next wake-up retries
    UniqueFd owned(fd);
    if (clients_.size() >= kMaxClientsPerSocket) continue;  // closed: the client sees EOF
    Client client;
    client.fd = std::move(owned);
    client.deadline_ms = NowMs() + kRequestTimeoutMs;
    const int uid = PeerUid(fd);
    auto [it, added] = clients_.emplace(fd, std::move(client));
    if (!loop_->Add(fd, EPOLLIN, [this, fd](uint32_t events) { OnClient(fd, events); })) {
      clients_.erase(it);
      continue;
    }
    if (uid != 0) {
      log::Warning("control socket {}: refused a client with uid {} (only root may control sessions)", path_, uid);
      Answer(it->second, ControlResponse::Fail(Error{fmt::format("permission denied: uid {} is not root", uid),
                                                     "control commands need root", ExitCode::kPermission}));
    }
  }
}

void ControlServer::Answer(Client& client, const ControlResponse& response) {
  client.answering = true;
  client.in.clear();
  client.out = FormatControlResponse(response);
  client.written = 0;
  client.deadline_ms = NowMs() + kResponseTimeoutMs;
  (void)loop_->Modify(client.fd.get(), EPOLLOUT);
  OnClient(client.fd.get(), EPOLLOUT);
}

void ControlServer::OnClient(int fd, uint32_t events) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  Client& c = it->second;
  if (c.answering) {
    while (c.written < c.out.size()) {
      ssize_t n = send(fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.written += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;  // EPOLLOUT again later
      break;                                                     // the client went away
    }
    Drop(fd);
    return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
    char buf[1024];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        if (c.in.size() > kMaxRequestBytes && c.in.find('\n') == std::string::npos) {
          Answer(c, ControlResponse::Fail(Error{"bad request: longer than 4096 bytes", "", ExitCode::kUsage}));
          return;
        }
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        if (c.in.find('\n') == std::string::npos) {
          Drop(fd);  // closed before a whole request: nothing to answer
          return;
        }
      }
      break;
    }
    const size_t eol = c.in.find('\n');
    if (eol == std::string::npos) return;
    auto request = ParseControlRequest(std::string_view(c.in).substr(0, eol));
    if (!request) {
      Answer(c, ControlResponse::Fail(request.error()));
      return;
    }
    ControlResponse response = handler_(*request);
    // The handler may have closed this server (detach); the client is still ours.
    it = clients_.find(fd);
    if (it == clients_.end()) return;
    Answer(it->second, response);
  }
}

void ControlServer::Drop(int fd) {
  if (loop_) loop_->Remove(fd);
  clients_.erase(fd);
}

bool ControlServer::Expire(uint64_t now_ms) {
  std::vector<int> late;
  for (const auto& [fd, c] : clients_)
    if (now_ms >= c.deadline_ms) late.push_back(fd);
  for (int fd : late) Drop(fd);
  return closed_ && clients_.empty();
}

}  // namespace looptrace::loader
