// End-to-end background sessions: `looptrace attach` against the real sample target, then
// sessions / status / snapshot / report -p / detach from "another shell", the live view
// under tmux, and the exporters against the real servers Debian ships (prometheus,
// clickhouse-server), each started by the test on 127.0.0.1 with its data in a temp dir.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Polls `done` every 100 ms until it holds or `timeout_s` passed; returns its last value.
bool WaitUntil(const std::function<bool()>& done, int timeout_s) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// A TCP port nobody listens on now (the kernel's pick).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    std::abort();
  close(fd);
  return ntohs(a.sin_port);
}

uint64_t SummedCount(const std::vector<json>& lines) {
  uint64_t n = 0;
  for (const auto& s : OfType(lines, "message_summary")) n += s["count"].get<uint64_t>();
  return n;
}

class LiveSessionTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    // A run directory of the test's own (mkdtemp: root, 0700) instead of /run/looptrace.
    setenv("LOOPTRACE_RUN_DIR", run_.path().c_str(), 1);
  }
  void TearDown() override {
    // A session a failed test left behind ends here, so the BPF check below is meaningful.
    for (const auto& entry : std::filesystem::directory_iterator(run_.path())) {
      if (entry.path().extension() != ".sock") continue;
      RunCommand({Looptrace(), "detach", "-p", entry.path().stem().string()}, 30);
    }
    unsetenv("LOOPTRACE_RUN_DIR");
    BpfTest::TearDown();
  }

  CommandResult Lt(std::vector<std::string> args, int timeout_s = 60) {
    args.insert(args.begin(), Looptrace());
    return RunCommand(args, timeout_s);
  }

  std::string Socket(pid_t pid) const { return run_ / (std::to_string(pid) + ".sock"); }

  json Status(pid_t pid) {
    auto r = Lt({"status", "-p", std::to_string(pid), "-f", "json"}, 20);
    if (r.exit_code != 0) return json();
    return json::parse(r.out, nullptr, false);
  }

  static uint64_t StatusMessages(const json& status) {
    uint64_t n = 0;
    if (!status.is_object()) return 0;
    for (const auto& t : status["status"]["threads"]) n += t.value("messages", uint64_t{0});
    return n;
  }

  // The sample target stuck in a deadlock after `count` short messages: a session whose
  // figures stop changing, with one ANR once --anr-threshold passed.
  std::unique_ptr<Process> StartDeadlocked(int count = 5) {
    return std::make_unique<Process>(std::vector<std::string>{SampleApp(), "--scenario", "anr-deadlock", "--count",
                                                              std::to_string(count), "--start-delay-ms", "1000"});
  }

  TempDir dir_;
  TempDir run_;
};

TEST_F(LiveSessionTest, BackgroundSessionFromAnyShell) {
  auto app = StartDeadlocked();
  const std::string pid = std::to_string(app->pid());
  const auto t0 = Clock::now();
  auto attached = Lt({"attach", "--profile", SampleProfile(), "-p", pid, "-o", dir_ / "final.json", "-f", "json",
                      "--anr-threshold", "1500"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  std::cout << "attach returned after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() << " ms\n";
  EXPECT_NE(attached.err.find("probe points attached"), std::string::npos) << attached.err;

  // The control socket: root's, 0600, in a 0700 directory.
  struct stat st {};
  ASSERT_EQ(stat(Socket(app->pid()).c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_uid, 0u);
  ASSERT_EQ(stat(run_.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // A second attach to the same pid: a clear error, the first session untouched.
  auto again = Lt({"attach", "--profile", SampleProfile(), "-p", pid});
  EXPECT_EQ(again.exit_code, 8) << again.err;
  EXPECT_NE(again.err.find(pid), std::string::npos) << again.err;

  auto sessions = Lt({"sessions", "-f", "json"});
  ASSERT_EQ(sessions.exit_code, 0) << sessions.err;
  auto listed = ParseJsonLines(sessions.out);
  ASSERT_EQ(listed.size(), 1u) << sessions.out;
  EXPECT_EQ(listed[0]["pid"], app->pid());
  auto table = Lt({"sessions"});
  EXPECT_NE(table.out.find(pid), std::string::npos) << table.out;

  // The five messages, then the deadlock past the ANR threshold.
  json status;
  EXPECT_TRUE(WaitUntil(
      [&] {
        status = Status(app->pid());
        return StatusMessages(status) == 5 && status["status"].value("anrs", 0) == 1;
      },
      20))
      << status.dump();
  auto text_status = Lt({"status", "-p", pid});
  EXPECT_EQ(text_status.exit_code, 0) << text_status.err;
  EXPECT_NE(text_status.out.find("anr.deadlock"), std::string::npos) << text_status.out;

  // Clients that send garbage, or nothing, only lose their own connection.
  for (const std::string& junk : {std::string("garbage\n"), std::string(10000, 'x'), std::string()}) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", Socket(app->pid()).c_str());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    if (!junk.empty()) (void)!write(fd, junk.data(), junk.size());
    close(fd);
  }
  EXPECT_EQ(StatusMessages(Status(app->pid())), 5u);

  // Every thread now: the main thread and the one it is deadlocked with.
  auto snapshot = Lt({"snapshot", "-p", pid, "-f", "json"});
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  json dump = json::parse(snapshot.out, nullptr, false);
  ASSERT_TRUE(dump.is_object()) << snapshot.out;
  std::set<std::string> names;
  for (const auto& t : dump["threads"]) names.insert(t.value("name", ""));
  EXPECT_TRUE(names.contains("sample-deadlock")) << snapshot.out.substr(0, 2000);
  EXPECT_GE(dump["threads"].size(), 2u);
  // The same dump in every report format: a trace with a thread per thread, a page, stacks.
  auto chrome = Lt({"snapshot", "-p", pid, "-f", "chrome"});
  ASSERT_EQ(chrome.exit_code, 0) << chrome.err;
  json trace = json::parse(chrome.out, nullptr, false);
  ASSERT_TRUE(trace.is_object()) << chrome.out.substr(0, 2000);
  size_t thread_states = 0;
  for (const auto& e : trace["traceEvents"]) thread_states += e.value("cat", "") == "thread";
  EXPECT_EQ(thread_states, dump["threads"].size());
  auto html = Lt({"snapshot", "-p", pid, "-f", "html"});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  EXPECT_TRUE(html.out.starts_with("<!DOCTYPE html>")) << html.out.substr(0, 500);
  EXPECT_NE(html.out.find("sample-deadlock"), std::string::npos);
  auto folded = Lt({"snapshot", "-p", pid, "-f", "folded"});
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  EXPECT_NE(folded.out.find("sample-deadlock (tid "), std::string::npos) << folded.out.substr(0, 2000);
  EXPECT_EQ(Lt({"snapshot", "-p", pid, "-f", "pdf"}).exit_code, 2);

  // The report so far: the session goes on.
  auto so_far = Lt({"report", "-p", pid, "-f", "json"});
  ASSERT_EQ(so_far.exit_code, 0) << so_far.err;
  auto lines = ParseJsonLines(so_far.out);
  EXPECT_EQ(SummedCount(lines), 5u);
  EXPECT_EQ(OfType(lines, "anr").size(), 1u);
  EXPECT_EQ(Lt({"status", "-p", pid}).exit_code, 0);

  // Detach: the final report where attach -o said, the socket gone, the probes gone.
  auto detached = Lt({"detach", "-p", pid});
  EXPECT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_NE(detached.err.find(dir_ / "final.json"), std::string::npos) << detached.err;
  auto final_lines = ReadJsonLines(dir_ / "final.json");
  EXPECT_EQ(SummedCount(final_lines), 5u);
  EXPECT_EQ(OfType(final_lines, "anr").size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(Socket(app->pid())));
  auto gone = Lt({"status", "-p", pid});
  EXPECT_EQ(gone.exit_code, 8) << gone.err;
  EXPECT_TRUE(WaitUntil([] { return AttachedLooptracePrograms().empty(); }, 5));
}

// The report so far has what the final one has for the messages that ended, sampled call
// trees included (every tracer's state is copied into the interim report).
TEST_F(LiveSessionTest, ReportSoFarHasSampledTrees) {
  Process app({SampleApp(), "--scenario", "messages", "--count", "2000", "--start-delay-ms", "500"});
  const std::string pid = std::to_string(app.pid());
  auto attached = Lt({"attach", "--profile", SampleProfile(), "-p", pid, "--evil-threshold", "2"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  ASSERT_TRUE(WaitUntil([&] { return StatusMessages(Status(app.pid())) >= 20; }, 20));
  auto so_far = Lt({"report", "-p", pid, "-f", "json"});
  ASSERT_EQ(so_far.exit_code, 0) << so_far.err;
  auto evils = OfType(ParseJsonLines(so_far.out), "evil_method");
  ASSERT_FALSE(evils.empty()) << so_far.out.substr(0, 2000);
  size_t with_tree = 0;
  for (const auto& e : evils) with_tree += e.contains("sampled_tree") && !e["sampled_tree"].empty();
  EXPECT_EQ(with_tree, evils.size()) << "every slow message of the interim report has its sampled tree";
  EXPECT_EQ(Lt({"detach", "-p", pid}).exit_code, 0);
}

TEST_F(LiveSessionTest, SessionEndsWithItsTarget) {
  Process app({SampleApp(), "--scenario", "messages", "--count", "60", "--start-delay-ms", "1000", "--truth",
               dir_ / "truth.jsonl"});
  const std::string pid = std::to_string(app.pid());
  auto attached = Lt({"attach", "--profile", SampleProfile(), "-p", pid, "-o", dir_ / "final.json", "-f", "json"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(app.Wait(30).exit_code, 0);
  // The session writes its report and removes its socket by itself.
  EXPECT_TRUE(WaitUntil([&] { return !std::filesystem::exists(Socket(app.pid())); }, 10));
  ASSERT_TRUE(std::filesystem::exists(dir_ / "final.json"));
  auto truth = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "message");
  auto lines = ReadJsonLines(dir_ / "final.json");
  EXPECT_EQ(SummedCount(lines), truth.size());
  EXPECT_EQ(OfType(lines, "message").size(), truth.size());
  // A detach that lost the race with the exit says where the report went, and succeeds.
  auto detached = Lt({"detach", "-p", pid});
  EXPECT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_NE(detached.err.find("ended"), std::string::npos) << detached.err;
  EXPECT_EQ(Lt({"status", "-p", pid}).exit_code, 8);
}

TEST_F(LiveSessionTest, NoSessionStaleSocketsAndUntrustedSockets) {
  // No session at all.
  auto none = Lt({"status", "-p", "999999"});
  EXPECT_EQ(none.exit_code, 8) << none.err;
  EXPECT_NE(none.err.find("999999"), std::string::npos) << none.err;
  EXPECT_EQ(Lt({"snapshot", "-p", "999999"}).exit_code, 8);
  EXPECT_EQ(Lt({"detach", "-p", "999999"}).exit_code, 8);
  EXPECT_EQ(Lt({"report", "-p", "999999"}).exit_code, 8);

  // A killed session's socket: nobody listens; detected, removed, "no session".
  auto bind_socket = [&](const std::string& path, mode_t mode) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    chmod(path.c_str(), mode);
    return fd;
  };
  close(bind_socket(Socket(999998), 0600));
  auto stale = Lt({"status", "-p", "999998"});
  EXPECT_EQ(stale.exit_code, 8) << stale.err;
  EXPECT_FALSE(std::filesystem::exists(Socket(999998)));

  // A socket others may write to is not trusted (and not removed).
  int open_fd = bind_socket(Socket(999997), 0666);
  listen(open_fd, 1);
  auto untrusted = Lt({"status", "-p", "999997"});
  EXPECT_EQ(untrusted.exit_code, 4) << untrusted.err;
  EXPECT_TRUE(std::filesystem::exists(Socket(999997)));
  close(open_fd);
  std::filesystem::remove(Socket(999997));

  // A run directory others can enter is refused.
  chmod(run_.path().c_str(), 0755);
  auto open_dir = Lt({"status", "-p", "999999"});
  EXPECT_EQ(open_dir.exit_code, 4) << open_dir.err;
  chmod(run_.path().c_str(), 0700);
}

// `detach` at the moment the target dies: whichever wins, detach succeeds and the one final
// report is where attach -o said.
TEST_F(LiveSessionTest, DetachRacingTheTargetsExit) {
  for (int round = 0; round < 3; ++round) {
    auto app = StartDeadlocked();
    const std::string pid = std::to_string(app->pid());
    const std::string out = dir_ / ("final-" + std::to_string(round) + ".json");
    ASSERT_EQ(Lt({"attach", "--profile", SampleProfile(), "-p", pid, "-o", out, "-f", "json"}).exit_code, 0);
    ASSERT_TRUE(WaitUntil([&] { return StatusMessages(Status(app->pid())) == 5; }, 20));
    Process detach({Looptrace(), "detach", "-p", pid});
    app->Signal(SIGKILL);
    auto r = detach.Wait(30);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(WaitUntil([&] { return !std::filesystem::exists(Socket(app->pid())); }, 10));
    EXPECT_EQ(SummedCount(ReadJsonLines(out)), 5u) << r.err;
    std::cout << "round " << round << ": " << r.err;
  }
}

TEST_F(LiveSessionTest, TopUnderTmux) {
  auto app = StartDeadlocked();
  const std::string pid = std::to_string(app->pid());
  ASSERT_EQ(Lt({"attach", "--profile", SampleProfile(), "-p", pid, "--anr-threshold", "1000"}).exit_code, 0);
  ASSERT_TRUE(WaitUntil([&] { return Status(app->pid())["status"].value("anrs", 0) == 1; }, 20));

  // A tmux server of the test's own (-L), so the environment is this process's.
  const std::string server = "looptrace-test-" + std::to_string(getpid());
  auto tmux = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"tmux", "-L", server});
    return RunCommand(args, 20);
  };
  ASSERT_EQ(tmux({"new-session", "-d", "-s", "top", "-x", "120", "-y", "40", "-e", "LOOPTRACE_RUN_DIR=" + run_.path(),
                  Looptrace() + " top -p " + pid})
                .exit_code,
            0);
  std::string screen;
  EXPECT_TRUE(WaitUntil(
      [&] {
        screen = tmux({"capture-pane", "-p", "-t", "top"}).out;
        return screen.find("anr.deadlock") != std::string::npos && screen.find("ANR") != std::string::npos;
      },
      10))
      << screen;
  EXPECT_NE(screen.find(pid), std::string::npos) << screen;
  tmux({"send-keys", "-t", "top", "q"});
  EXPECT_TRUE(WaitUntil([&] { return tmux({"has-session", "-t", "top"}).exit_code != 0; }, 5)) << "q did not quit";
  tmux({"kill-server"});

  // Not a terminal: plain lines, one a refresh, until Ctrl-C.
  Process plain({Looptrace(), "top", "-p", pid, "-d", "0.5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1800));
  plain.Signal(SIGINT);
  auto r = plain.Wait(10);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "escape sequences on a pipe";

  EXPECT_EQ(Lt({"detach", "-p", pid}).exit_code, 0);
}

// Prometheus from Debian, scraping --metrics: its query API must give the report's counts.
TEST_F(LiveSessionTest, PrometheusScrapesTheReportsCounts) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/prometheus")) << "apt-get install prometheus (scripts/setup.sh)";
  auto app = StartDeadlocked(7);
  const std::string pid = std::to_string(app->pid());
  const int metrics_port = FreePort();
  const std::string metrics = "127.0.0.1:" + std::to_string(metrics_port);
  auto attached =
      Lt({"attach", "--profile", SampleProfile(), "-p", pid, "--metrics", metrics, "--anr-threshold", "1500"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;

  // The port is taken now: a second daemon says so with exit 9 and attaches nothing.
  auto busy = Lt({"attach", "-p", std::to_string(getpid()), "--metrics", metrics});
  EXPECT_EQ(busy.exit_code, 9) << busy.err;
  EXPECT_NE(busy.err.find(std::to_string(metrics_port)), std::string::npos) << busy.err;

  const int prom_port = FreePort();
  {
    std::ofstream config(dir_ / "prometheus.yml");
    config << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
           << "scrape_configs:\n  - job_name: looptrace\n    static_configs:\n      - targets: ['" << metrics << "']\n";
  }
  Process prometheus({"/usr/bin/prometheus", "--config.file=" + (dir_ / "prometheus.yml"),
                      "--storage.tsdb.path=" + (dir_ / "tsdb"),
                      "--web.listen-address=127.0.0.1:" + std::to_string(prom_port), "--log.level=warn"});
  httplib::Client client("127.0.0.1", prom_port);
  client.set_connection_timeout(2);
  auto query = [&](const std::string& promql) -> std::optional<double> {
    auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!res || res->status != 200) return std::nullopt;
    json j = json::parse(res->body, nullptr, false);
    if (!j.is_object() || j["data"]["result"].empty()) return std::nullopt;
    return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
  };
  std::optional<double> messages, anrs;
  const auto t0 = Clock::now();
  EXPECT_TRUE(WaitUntil(
      [&] {
        messages = query("sum(looptrace_message_duration_seconds_count{pid=\"" + pid + "\"})");
        anrs = query("sum(looptrace_anrs_total{pid=\"" + pid + "\"})");
        return messages == 7.0 && anrs == 1.0;
      },
      30))
      << "messages " << messages.value_or(-1) << ", anrs " << anrs.value_or(-1);
  std::cout << "Prometheus had the counts after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() << " ms\n";

  // The same numbers as looptrace's own report.
  auto so_far = Lt({"report", "-p", pid, "-f", "json"});
  ASSERT_EQ(so_far.exit_code, 0) << so_far.err;
  auto lines = ParseJsonLines(so_far.out);
  EXPECT_EQ(static_cast<double>(SummedCount(lines)), messages.value_or(-1));
  EXPECT_EQ(static_cast<double>(OfType(lines, "anr").size()), anrs.value_or(-1));
  // The target is labelled, and the exposition is valid for Prometheus (it scraped: up == 1).
  EXPECT_EQ(query("up{job=\"looptrace\"}"), 1.0);
  EXPECT_EQ(query("count(looptrace_session_info{pid=\"" + pid + "\",comm=\"looptrace-sampl\"})"), 1.0);

  prometheus.Signal(SIGTERM);
  prometheus.Wait(20);
  EXPECT_EQ(Lt({"detach", "-p", pid}).exit_code, 0);
}

// ClickHouse from Debian (18.16) over HTTP: the rows of two targets' sessions give the counts,
// the ANR's cause and the evil method's stackKey of looptrace's own final reports.
class ClickHouseTest : public LiveSessionTest {
 protected:
  void StartServer() {
    http_port_ = FreePort();
    const std::string data = dir_ / "ch";
    std::filesystem::create_directories(data);
    std::ofstream(dir_ / "ch-config.xml")
        << "<?xml version=\"1.0\"?>\n<yandex>\n"
        << "  <logger><level>warning</level><log>" << data << "/server.log</log><errorlog>" << data
        << "/err.log</errorlog></logger>\n"
        << "  <http_port>" << http_port_ << "</http_port>\n  <tcp_port>" << FreePort() << "</tcp_port>\n"
        << "  <listen_host>127.0.0.1</listen_host>\n"
        << "  <path>" << data << "/</path>\n  <tmp_path>" << data << "/tmp/</tmp_path>\n"
        << "  <user_files_path>" << data << "/user_files/</user_files_path>\n"
        << "  <format_schema_path>" << data << "/format_schemas/</format_schema_path>\n"
        << "  <users_config>" << (dir_ / "ch-users.xml") << "</users_config>\n"
        << "  <default_profile>default</default_profile>\n  <default_database>default</default_database>\n"
        << "  <mark_cache_size>5368709</mark_cache_size>\n</yandex>\n";
    std::ofstream(dir_ / "ch-users.xml")
        << "<?xml version=\"1.0\"?>\n<yandex>\n  <profiles><default></default></profiles>\n"
        << "  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
        << "<profile>default</profile><quota>default</quota></default></users>\n"
        << "  <quotas><default></default></quotas>\n</yandex>\n";
    server_ = std::make_unique<Process>(
        std::vector<std::string>{"/usr/sbin/clickhouse-server", "--config-file=" + (dir_ / "ch-config.xml")});
    client_ = std::make_unique<httplib::Client>("127.0.0.1", http_port_);
    client_->set_connection_timeout(2);
    ASSERT_TRUE(WaitUntil(
        [&] {
          auto r = client_->Get("/ping");
          return r && r->status == 200;
        },
        20));
  }
  void TearDown() override {
    if (server_) {
      server_->Signal(SIGTERM);
      server_->Wait(20);
    }
    LiveSessionTest::TearDown();
  }
  std::string Sql(const std::string& sql) {
    auto r = client_->Post("/", sql, "text/plain");
    EXPECT_TRUE(r && r->status == 200) << sql << ": " << (r ? r->body : "no answer");
    return r ? r->body : "";
  }

  int http_port_ = 0;
  std::unique_ptr<Process> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ClickHouseTest, RowsMatchTheReports) {
  ASSERT_TRUE(std::filesystem::exists("/usr/sbin/clickhouse-server")) << "apt-get install clickhouse-server";
  StartServer();
  // The schema as `clickhouse-schema` prints it, one statement per request.
  auto schema = Lt({"clickhouse-schema"});
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  std::string statement;
  std::istringstream in(schema.out);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("--")) continue;
    statement += line + "\n";
    if (line.ends_with(";")) {
      Sql(statement);
      statement.clear();
    }
  }

  // The targets begin their work 3 s in: attaching to two processes took over 1 s on a loaded
  // CI machine, and the stalled message then began before its probes (no ANR report).
  Process evil({SampleApp(), "--scenario", "evil", "--start-delay-ms", "3000"});
  Process anr({SampleApp(), "--scenario", "anr-busy", "--stall-ms", "2000", "--start-delay-ms", "3000"});
  auto attached =
      Lt({"attach", "--profile", SampleProfile(), "-p", std::to_string(evil.pid()), "-p", std::to_string(anr.pid()),
          "-o", dir_ / "final-%p.json", "-f", "json", "--anr-threshold", "1500", "--clickhouse",
          "http://127.0.0.1:" + std::to_string(http_port_) + "/?database=looptrace", "--clickhouse-interval", "1"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(evil.Wait(30).exit_code, 0);
  EXPECT_EQ(anr.Wait(30).exit_code, 0);
  auto report = [&](pid_t pid) { return ReadJsonLines(dir_ / ("final-" + std::to_string(pid) + ".json")); };
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::filesystem::exists(dir_ / ("final-" + std::to_string(evil.pid()) + ".json")) &&
               std::filesystem::exists(dir_ / ("final-" + std::to_string(anr.pid()) + ".json"));
      },
      15));
  const auto evil_report = report(evil.pid());
  const auto anr_report = report(anr.pid());

  auto count = [&](pid_t pid) {
    std::string out = Sql("SELECT sum(count) FROM looptrace.message_summaries WHERE pid = " + std::to_string(pid));
    return out.empty() ? uint64_t{0} : std::stoull(out);
  };
  auto anrs = OfType(anr_report, "anr");
  ASSERT_EQ(anrs.size(), 1u);
  auto evils = OfType(evil_report, "evil_method");
  ASSERT_EQ(evils.size(), 1u);
  EXPECT_GT(SummedCount(evil_report), 0u);
  const std::string pids = std::to_string(evil.pid()) + ", " + std::to_string(anr.pid());
  auto stall_rows = [&] {
    return Sql("SELECT kind, cause FROM looptrace.stalls WHERE pid = " + std::to_string(anr.pid()) +
               " AND kind = 'anr' FORMAT TSV");
  };
  auto evil_rows = [&] {
    return Sql("SELECT stack_key FROM looptrace.evil_methods WHERE pid = " + std::to_string(evil.pid()) +
               " FORMAT TSV");
  };
  auto ended_sessions = [&] {
    return Sql("SELECT count() FROM looptrace.sessions FINAL WHERE end_reason = 'target-exited' AND pid IN (" + pids +
               ")");
  };
  const std::string want_stall = "anr\t" + anrs[0]["stuck_reason"].get<std::string>() + "\n";
  const std::string want_evil = evils[0]["stackKey"].get<std::string>() + "\n";
  // The daemons send their last rows, table by table, as they exit: wait for all of them.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return count(evil.pid()) == SummedCount(evil_report) && count(anr.pid()) == SummedCount(anr_report) &&
               stall_rows() == want_stall && evil_rows() == want_evil && ended_sessions() == "2\n";
      },
      20));
  EXPECT_EQ(count(evil.pid()), SummedCount(evil_report));
  EXPECT_EQ(count(anr.pid()), SummedCount(anr_report));
  EXPECT_EQ(stall_rows(), want_stall);
  EXPECT_EQ(evil_rows(), want_evil);
  EXPECT_EQ(ended_sessions(), "2\n") << "both sessions have their row, ended";
}

// ClickHouse refuses the inserts (no such database: not retried): rows counted as dropped,
// the reason shown, the session unaffected.
TEST_F(ClickHouseTest, RefusedInsertsAreDroppedAndCounted) {
  StartServer();
  auto app = StartDeadlocked();
  const std::string pid = std::to_string(app->pid());
  auto attached =
      Lt({"attach", "--profile", SampleProfile(), "-p", pid, "--clickhouse",
          "http://127.0.0.1:" + std::to_string(http_port_) + "/?database=missing", "--clickhouse-interval", "1"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  json status;
  EXPECT_TRUE(WaitUntil(
      [&] {
        status = Status(app->pid());
        return StatusMessages(status) == 5 && status["session"].value("rows_dropped", 0) > 0;
      },
      20))
      << status.dump();
  EXPECT_NE(status["session"].value("clickhouse_error", "").find("refused"), std::string::npos) << status.dump();
  EXPECT_EQ(status["session"].value("rows_sent", 1), 0);
  EXPECT_EQ(Lt({"detach", "-p", pid}).exit_code, 0);
}

// ClickHouse down: the session goes on, the rows are counted as dropped, the reason shown.
TEST_F(LiveSessionTest, ClickHouseUnreachableDoesNotStopTheSession) {
  auto app = StartDeadlocked();
  const std::string pid = std::to_string(app->pid());
  auto attached = Lt({"attach", "--profile", SampleProfile(), "-p", pid, "--clickhouse",
                      "http://127.0.0.1:" + std::to_string(FreePort()) + "/", "--clickhouse-interval", "1"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  json status;
  EXPECT_TRUE(WaitUntil(
      [&] {
        status = Status(app->pid());
        return StatusMessages(status) == 5 && !status["session"].value("clickhouse_error", "").empty();
      },
      20))
      << status.dump();
  EXPECT_EQ(Lt({"detach", "-p", pid}).exit_code, 0);
}

// Matrix issues from phones (report ISSUES --clickhouse) go into the tables live sessions use,
// marked as Matrix's (session_id "matrix:..."), named; ingesting them again adds nothing.
TEST_F(ClickHouseTest, MatrixIssuesGoIntoTheSameTablesOnce) {
  ASSERT_TRUE(std::filesystem::exists("/usr/sbin/clickhouse-server")) << "apt-get install clickhouse-server";
  StartServer();
  auto schema = Lt({"clickhouse-schema"});
  ASSERT_EQ(schema.exit_code, 0) << schema.err;
  std::string statement;
  std::istringstream in(schema.out);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("--")) continue;
    statement += line + "\n";
    if (line.ends_with(";")) {
      Sql(statement);
      statement.clear();
    }
  }
  const std::string fixtures = std::string(LOOPTRACE_SOURCE_DIR) + "/tests/fixtures/matrix/";
  const std::string url = "http://127.0.0.1:" + std::to_string(http_port_) + "/?database=looptrace";
  auto rows = [&](const std::string& table) {
    return Sql("SELECT count() FROM looptrace." + table + " WHERE session_id LIKE 'matrix:%' AND pid = 0");
  };
  for (int round = 0; round < 2; ++round) {
    auto r = Lt({"report", fixtures + "fleet.jsonl", "--method-mapping", fixtures + "fleet_methodMapping.txt",
                 "--clickhouse", url, "-f", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(OfType(ParseJsonLines(r.out), "matrix_issue").size(), 17u);
    // NORMAL x3 and STARTUP; ANR, SIGNAL_ANR x2, LAG; idle, touch, priority, timer slack; 3 starts.
    EXPECT_EQ(rows("evil_methods"), "4\n") << "round " << round;
    EXPECT_EQ(rows("stalls"), "4\n") << "round " << round;
    EXPECT_EQ(rows("lags"), "4\n") << "round " << round;
    EXPECT_EQ(rows("startups"), "3\n") << "round " << round;
  }
  EXPECT_EQ(Sql("SELECT host, build, stack_key_name, tree_name[3] FROM looptrace.evil_methods WHERE stack_key = '2|' "
                "ORDER BY time FORMAT TSV"),
            "Pixel 7\t5.1.0\tcom.example.Feed.load()V\tcom.example.Feed.load()V\n"
            "Redmi 9A\t5.1.0\tcom.example.Feed.load()V\tcom.example.Feed.load()V\n");
  EXPECT_EQ(Sql("SELECT kind, main_user_stack[2] FROM looptrace.stalls WHERE kind = 'anr' FORMAT TSV"),
            "anr\tcom.example.Feed.load(Feed.java:42)\n");
}

}  // namespace
}  // namespace looptrace::testing
