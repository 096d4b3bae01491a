// The daemon's end of a session's control socket (control_policy.h, control_protocol.h): it
// only talks to root peers, gives a client 5 s to send its line, and a client that sends
// nothing or garbage only loses its own connection.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "loader/live/control_protocol.h"
#include "loader/session/event_loop.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

inline constexpr size_t kMaxClientsPerSocket = 16;

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

}  // namespace looptrace::loader
