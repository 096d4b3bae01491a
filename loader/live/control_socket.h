// The control channel of background sessions: one Unix stream socket per traced pid,
// RUN_DIR/PID.sock (RUN_DIR: /run/looptrace, 0700 root; the socket 0600 root), through
// which `status`, `snapshot`, `report -p`, `detach` and `sessions` reach the daemon.
//
// Protocol (version 1): the client sends one JSON line of at most kMaxRequestBytes,
//   {"v":1,"cmd":"status"}        cmd: info | status | snapshot | report | detach
//   {"v":1,"cmd":"report","format":"json"}
// and the daemon answers one JSON header line, then the body until it closes:
//   {"v":1,"ok":true}\n<body>
//   {"v":1,"ok":false,"error":"...","hint":"...","code":8}\n
// The daemon only talks to root peers (SO_PEERCRED), gives a client 5 s to send its line,
// never writes a file a request names (report bodies go back over the socket), and a client
// that sends nothing or garbage only loses its own connection.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "loader/live/event_loop.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

inline constexpr int kControlProtocolVersion = 1;
inline constexpr size_t kMaxRequestBytes = 4096;
inline constexpr uint64_t kRequestTimeoutMs = 5'000;
inline constexpr uint64_t kResponseTimeoutMs = 60'000;
inline constexpr size_t kMaxClientsPerSocket = 16;

// /run/looptrace, or $LOOPTRACE_RUN_DIR when set (tests, containers).
std::string RunDirectory();
std::string ControlSocketPath(pid_t pid);
// Written when a session ends (reason, report path), so a `detach` that lost the race with
// the target's exit can still say where the report went.
std::string TombstonePath(pid_t pid);
// The tombstone of pid's ended session as a sentence (how it ended, where its report went),
// or "" if there is none.
std::string EndedSessionText(pid_t pid);

// The run directory must be a real directory (not a link) owned by root with mode 0700.
// `create`: make it if missing (the daemon); otherwise a missing directory is an error with
// kSession ("no session"), as the client sees it.
Result<void> CheckRunDirectory(bool create);

struct ControlRequest {
  std::string command;  // info | status | snapshot | report | detach
  std::string format;   // report / snapshot: a renderer name; "" = text
};
Result<ControlRequest> ParseControlRequest(std::string_view line);
std::string FormatControlRequest(const ControlRequest& request);

struct ControlResponse {
  bool ok = true;
  std::string body;
  std::string error;  // when !ok
  std::string hint;
  int code = 1;  // an ExitCode
  static ControlResponse Fail(const Error& error);
};
// The header line and the body, as the daemon sends them.
std::string FormatControlResponse(const ControlResponse& response);
Result<ControlResponse> ParseControlResponse(std::string_view data);

// The listening socket of one session and its connected clients, on the session's loop.
class ControlServer {
 public:
  using Handler = std::function<ControlResponse(const ControlRequest&)>;

  // Binds RUN_DIR/PID.sock (0600). A socket there whose session answers is a kSession
  // error; one nobody listens on (a killed session's) is removed; anything else there, or
  // a socket of another owner or mode, is refused.
  static Result<std::unique_ptr<ControlServer>> Create(pid_t pid, Handler handler);
  ~ControlServer();

  Result<void> Join(EventLoop& loop);
  // Stops accepting and removes the socket file; answers being written still go out.
  void Close();
  // Drops clients past their deadline; true once closed and every client is gone.
  bool Expire(uint64_t now_ms);
  const std::string& path() const { return path_; }
  size_t clients() const { return clients_.size(); }

 private:
  struct Client {
    UniqueFd fd;
    std::string in;
    std::string out;
    size_t written = 0;
    uint64_t deadline_ms = 0;
    bool answering = false;
  };
  ControlServer() = default;
  void Accept();
  void OnClient(int fd, uint32_t events);
  void Answer(Client& client, const ControlResponse& response);
  void Drop(int fd);

  pid_t pid_ = 0;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  UniqueFd listen_;
  Handler handler_;
  EventLoop* loop_ = nullptr;
  std::map<int, Client> clients_;
  bool closed_ = false;
};

// What a client finds at RUN_DIR/PID.sock.
enum class SocketState { kMissing, kLive, kStale };

// Sends one request to the session of `pid` and reads the answer. Before connecting it
// checks the directory and the socket (owner root, no group/other access) and after, that
// the peer is root. No session: kSession (a stale socket is removed on the way); a socket
// it must not trust: kPermission.
Result<ControlResponse> CallSession(pid_t pid, const ControlRequest& request, int timeout_ms = 60'000);

// The pids with a socket in the run directory (live or not), sorted.
std::vector<pid_t> SessionSockets();

// Monotonic milliseconds (client deadlines).
uint64_t NowMs();

}  // namespace looptrace::loader
