// The metrics endpoint against clients that stall it: 40 idle connections and two that
// trickle their headers a byte at a time must not keep a scrape waiting (before, with a
// thread per connection, a scrape waited 99 s), a connection's time is bounded, and
// `--metrics :PORT` means loopback.
#include "loader/live/metrics_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

int FreePort() {
  UniqueFd probe(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(probe.get(), reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

UniqueFd Connect(int port) {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  return fd;
}

// Everything the server sends until it closes, or until `within` passes.
std::string ReadAll(int fd, std::chrono::milliseconds within) {
  std::string text;
  const auto deadline = Clock::now() + within;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return text + "<timeout>";
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

// A server on its own loop thread, as in the daemon.
class MetricsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop);
    loop_ = std::move(*loop);
    port_ = FreePort();
    auto server = MetricsServer::Start({"127.0.0.1", port_}, *loop_, [](bool) { return std::string("up 1\n"); });
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    thread_ = std::thread([this] {
      while (!stop_) (void)loop_->RunOnce(50);
    });
  }
  void TearDown() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  std::string Scrape(std::chrono::milliseconds within) {
    UniqueFd fd = Connect(port_);
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    EXPECT_EQ(send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    return ReadAll(fd.get(), within);
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<MetricsServer> server_;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST_F(MetricsServerTest, IdleAndTricklingClientsDoNotBlockAScrape) {
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(Connect(port_));
  std::vector<UniqueFd> trickling;
  for (int i = 0; i < 2; ++i) trickling.push_back(Connect(port_));
  std::atomic<bool> done{false};
  std::thread trickler([&] {
    const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    for (size_t i = 0; !done && i < head.size(); ++i) {
      for (auto& fd : trickling) (void)!send(fd.get(), head.data() + i, 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);
  const auto start = Clock::now();
  const std::string answer = Scrape(2000ms);
  const auto took = Clock::now() - start;
  done = true;
  trickler.join();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_NE(answer.find("\r\n\r\nup 1\n"), std::string::npos) << answer;
  EXPECT_LT(took, 1s);
}

TEST_F(MetricsServerTest, ConnectionsHaveADeadlineAndACap) {
  // A client that says nothing is closed at the request deadline.
  UniqueFd idle = Connect(port_);
  const auto start = Clock::now();
  EXPECT_EQ(ReadAll(idle.get(), std::chrono::milliseconds(kMetricsRequestDeadlineMs + 2000)), "");
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(kMetricsRequestDeadlineMs - 200));

  // More connections than the cap: the oldest waiting ones make room, a scrape still works.
  std::vector<UniqueFd> many;
  for (size_t i = 0; i < 3 * kMaxMetricsConnections; ++i) many.push_back(Connect(port_));
  EXPECT_NE(Scrape(2000ms).find("up 1"), std::string::npos);
  EXPECT_EQ(ReadAll(many.front().get(), 1000ms), "");  // closed to make room
}

TEST_F(MetricsServerTest, RequestsAreBoundedAndChecked) {
  UniqueFd big = Connect(port_);
  const std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(2 * kMaxMetricsRequestBytes, 'a');
  (void)!send(big.get(), huge.data(), huge.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(ReadAll(big.get(), 2000ms).starts_with("HTTP/1.1 431 ")) << "a head over the cap";

  UniqueFd garbage = Connect(port_);
  const std::string line = "\x16\x03\x01 hello\r\n\r\n";
  (void)!send(garbage.get(), line.data(), line.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(ReadAll(garbage.get(), 2000ms).starts_with("HTTP/1.1 400 "));

  UniqueFd post = Connect(port_);
  const std::string request = "POST /metrics HTTP/1.1\r\n\r\n";
  (void)!send(post.get(), request.data(), request.size(), MSG_NOSIGNAL);
  EXPECT_TRUE(ReadAll(post.get(), 2000ms).starts_with("HTTP/1.1 405 "));
}

TEST(MetricsAddress, APortAloneMeansLoopback) {
  auto port_only = ParseMetricsAddress(":9464");
  ASSERT_TRUE(port_only) << port_only.error().message;
  EXPECT_EQ(port_only->host, "127.0.0.1");
  auto every = ParseMetricsAddress("0.0.0.0:9464");
  ASSERT_TRUE(every);
  EXPECT_EQ(every->host, "0.0.0.0");
  auto v6 = ParseMetricsAddress("[::1]:9464");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_FALSE(ParseMetricsAddress("9464"));
  EXPECT_FALSE(ParseMetricsAddress(":0"));
}

}  // namespace
}  // namespace looptrace::loader
