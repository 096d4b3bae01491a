#include "loader/live/control_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

using nlohmann::json;

constexpr std::string_view kCommands[] = {"info", "status", "snapshot", "report", "detach"};

std::string ModeText(mode_t mode) { return fmt::format("{:04o}", mode & 07777); }

Result<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path))
    return MakeError(fmt::format("control socket path {} is too long", path), ExitCode::kEndpoint,
                     "use a shorter LOOPTRACE_RUN_DIR");
  std::copy(path.begin(), path.end(), addr.sun_path);
  return addr;
}

// A socket file we may talk to or replace: a socket, root's, no group/other access.
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

// Connects to `path`; ECONNREFUSED means nobody listens (a stale socket).
Result<UniqueFd> ConnectTo(const std::string& path, int* error_number) {
  ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(path));
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return SystemError("socket", errno);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error_number = errno;
    return SystemError(fmt::format("cannot connect to {}", path), errno);
  }
  *error_number = 0;
  return fd;
}

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

// The tombstone of an ended session, as a sentence, or "".
std::string TombstoneText(pid_t pid) {
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

}  // namespace

uint64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000 + static_cast<uint64_t>(ts.tv_nsec) / 1'000'000;
}

std::string RunDirectory() {
  if (const char* dir = getenv("LOOPTRACE_RUN_DIR"); dir && *dir) return dir;
  return "/run/looptrace";
}

std::string ControlSocketPath(pid_t pid) { return fmt::format("{}/{}.sock", RunDirectory(), pid); }
std::string TombstonePath(pid_t pid) { return fmt::format("{}/{}.ended", RunDirectory(), pid); }

std::string EndedSessionText(pid_t pid) { return TombstoneText(pid); }

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

Result<ControlRequest> ParseControlRequest(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return MakeError("bad request: not a JSON object", ExitCode::kUsage);
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<int64_t>() != kControlProtocolVersion)
    return MakeError(fmt::format("bad request: protocol version is not {}", kControlProtocolVersion), ExitCode::kUsage,
                     "the client and the daemon are different looptrace versions: detach and attach again");
  auto cmd = j.find("cmd");
  if (cmd == j.end() || !cmd->is_string()) return MakeError("bad request: no command", ExitCode::kUsage);
  ControlRequest request;
  request.command = cmd->get<std::string>();
  if (std::find(std::begin(kCommands), std::end(kCommands), request.command) == std::end(kCommands))
    return MakeError(fmt::format("bad request: unknown command '{}'", request.command.substr(0, 40)), ExitCode::kUsage);
  if (auto f = j.find("format"); f != j.end()) {
    if (!f->is_string() || f->get<std::string>().size() > 32)
      return MakeError("bad request: bad format", ExitCode::kUsage);
    request.format = f->get<std::string>();
  }
  return request;
}

std::string FormatControlRequest(const ControlRequest& request) {
  json j{{"v", kControlProtocolVersion}, {"cmd", request.command}};
  if (!request.format.empty()) j["format"] = request.format;
  return j.dump() + "\n";
}

ControlResponse ControlResponse::Fail(const Error& error) {
  ControlResponse r;
  r.ok = false;
  r.error = error.message;
  r.hint = error.hint;
  r.code = static_cast<int>(error.code);
  return r;
}

std::string FormatControlResponse(const ControlResponse& r) {
  json j{{"v", kControlProtocolVersion}, {"ok", r.ok}};
  if (!r.ok) {
    j["error"] = r.error;
    j["hint"] = r.hint;
    j["code"] = r.code;
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n" + (r.ok ? r.body : "");
}

Result<ControlResponse> ParseControlResponse(std::string_view data) {
  const size_t eol = data.find('\n');
  if (eol == std::string_view::npos) return MakeError("the session closed the connection without an answer");
  json j = json::parse(data.substr(0, eol), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ok") || !j["ok"].is_boolean())
    return MakeError("the session's answer is not understood");
  if (j.value("v", 0) != kControlProtocolVersion)
    return MakeError("the session speaks another protocol version", ExitCode::kRuntime,
                     "the client and the daemon are different looptrace versions");
  ControlResponse r;
  r.ok = j["ok"].get<bool>();
  if (!r.ok) {
    r.error = j.value("error", "the session refused the request");
    r.hint = j.value("hint", "");
    r.code = j.value("code", 1);
    return r;
  }
  r.body = std::string(data.substr(eol + 1));
  return r;
}

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
    auto fd = ConnectTo(path, &err);
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

  ASSIGN_OR_RETURN(sockaddr_un addr, AddressOf(path));
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

Result<ControlResponse> CallSession(pid_t pid, const ControlRequest& request, int timeout_ms) {
  RETURN_IF_ERROR(CheckRunDirectory(false));
  const std::string path = ControlSocketPath(pid);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == EACCES)
      return SystemError(path, errno, ExitCode::kPermission, "background sessions are root's: run as root");
    std::string ended = TombstoneText(pid);
    if (!ended.empty()) return MakeError(ended, ExitCode::kSession);
    return MakeError(fmt::format("no looptrace session for pid {}", pid), ExitCode::kSession, NoSessionHint(pid));
  }
  RETURN_IF_ERROR(CheckSocketFile(path, st));
  int err = 0;
  auto fd = ConnectTo(path, &err);
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
