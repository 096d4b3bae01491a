// Control commands of background sessions, from any shell (as root): sessions, status,
// snapshot, detach (and report -p, in cmd_report.cc). Each asks the session's daemon over
// its control socket (control_client.h) and prints the answer.
#include <fmt/format.h>
#include <time.h>

#include <filesystem>
#include <iostream>

#include "loader/cli/cli.h"
#include "loader/live/control_client.h"
#include "loader/live/control_policy.h"
#include "loader/live/daemon.h"
#include "loader/session/output_file.h"
#include "looptrace/report/json_codecs.h"
#include "looptrace/report/live_view.h"
#include "looptrace/report/render.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

uint64_t WallNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

Result<std::string> Ask(pid_t pid, const std::string& command, const std::string& format = "",
                        int timeout_ms = 60'000) {
  ASSIGN_OR_RETURN(auto response, loader::CallSession(pid, loader::ControlRequest{command, format}, timeout_ms));
  if (!response.ok) return MakeError(response.error, static_cast<ExitCode>(response.code), response.hint);
  return response.body;
}

// Writes `text` to -o FILE (atomically) or stdout.
int Emit(const std::string& path, const std::string& text) {
  auto out = loader::OutputFile::Create(path);
  if (!out) return Fail(out.error());
  (*out)->stream() << text;
  if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
  if (!path.empty()) log::Info("written to {}", path);
  return 0;
}

constexpr const char* kControlTroubleshooting = R"(
CONTROL COMMANDS:
  They talk to the daemon `looptrace attach` left behind, over /run/looptrace/PID.sock
  (LOOPTRACE_RUN_DIR overrides the directory). Root only: the directory is 0700 and the
  daemon refuses peers that are not root. Exit 8: no session for that pid (`looptrace
  sessions` lists them); exit 4: a socket or directory with the wrong owner or mode.
)";

class SessionsCommand : public Command {
 public:
  std::string_view name() const override { return "sessions"; }
  void Setup(CLI::App* cmd) override {
    cmd->add_option("-f,--format", format_, "text (a table) or json (one object a line)")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->footer(
        Footer(R"(  looptrace sessions                           every background session: pid, target, since, counters
  looptrace sessions -f json | jq .pid
)") + kControlTroubleshooting);
  }
  int Run(std::vector<std::string>) override {
    if (auto ok = loader::CheckRunDirectory(false); !ok) {
      if (ok.error().code != ExitCode::kSession) return Fail(ok.error());
      if (format_ == "text") std::cout << "no background sessions\n";
      return 0;
    }
    std::vector<SessionRow> rows;
    for (pid_t pid : loader::SessionSockets()) {
      SessionRow row;
      row.summary.pid = static_cast<uint32_t>(pid);
      auto body = Ask(pid, "info", "", 5'000);
      if (!body) {
        row.note = body.error().message;
      } else if (auto summary = SessionSummaryFromJson(*body); summary) {
        row.summary = *summary;
      } else {
        row.note = summary.error().message;
      }
      rows.push_back(std::move(row));
    }
    if (format_ == "json") {
      for (const auto& row : rows)
        if (row.note.empty()) std::cout << SessionSummaryToJson(row.summary) << "\n";
      return 0;
    }
    std::cout << FormatSessions(rows, WallNowNs());
    return 0;
  }

 private:
  std::string format_ = "text";
};

class StatusCommand : public Command {
 public:
  std::string_view name() const override { return "status"; }
  void Setup(CLI::App* cmd) override {
    cmd->add_option("-p,--pid", pid_, "traced process")->required()->check(CLI::PositiveNumber);
    cmd->add_option("-f,--format", format_, "text, or json ({\"session\": ..., \"status\": ...})")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
    cmd->footer(
        Footer(R"(  looptrace status -p 1234                     messages/s, p50/p99, busy %, FPS, the running message
  looptrace status -p 1234 -f json | jq .status.p99_ns
  watch -n1 looptrace status -p 1234           or: looptrace top -p 1234
)") + kControlTroubleshooting);
  }
  int Run(std::vector<std::string>) override {
    auto body = Ask(pid_, "status");
    if (!body) return Fail(body.error());
    if (format_ == "json") {
      std::cout << *body << "\n";
      return 0;
    }
    auto parsed = loader::ParseStatusBody(*body);
    if (!parsed) return Fail(parsed.error());
    std::cout << FormatStatus(parsed->first, parsed->second);
    return 0;
  }

 private:
  pid_t pid_ = 0;
  std::string format_ = "text";
};

class SnapshotCommand : public Command {
 public:
  std::string_view name() const override { return "snapshot"; }
  void Setup(CLI::App* cmd) override {
    cmd->add_option("-p,--pid", pid_, "traced process")->required()->check(CLI::PositiveNumber);
    cmd->add_option("-f,--format", format_,
                    "text (like Android's kill -3 traces), or any report format: " + RendererNames())
        ->check([](const std::string& format) { return FindRenderer(format) ? "" : "formats: " + RendererNames(); })
        ->capture_default_str();
    cmd->add_option("-o,--output", output_, "write it to FILE (.gz compresses) instead of stdout");
    cmd->footer(
        Footer(
            R"(  looptrace snapshot -p 1234                   every thread now: state, wait channel, lock owner, stacks
  looptrace snapshot -p 1234 -f json -o dump.json
  looptrace snapshot -p 1234 -f html -o dump.html      the same as a page
)") + kControlTroubleshooting +
        R"(
  The snapshot is taken now, whatever the main thread does; it is not added to the session's
  report (ANR and LAG snapshots, taken at their thresholds, are).
)");
  }
  int Run(std::vector<std::string>) override {
    auto body = Ask(pid_, "snapshot", format_);
    if (!body) return Fail(body.error());
    return Emit(output_, *body);
  }

 private:
  pid_t pid_ = 0;
  std::string format_ = "text";
  std::string output_;
};

class DetachCommand : public Command {
 public:
  std::string_view name() const override { return "detach"; }
  void Setup(CLI::App* cmd) override {
    cmd->add_option("-p,--pid", pids_, "traced process (repeat or comma-separate for several)")
        ->required()
        ->check(CLI::PositiveNumber)
        ->delimiter(',');
    cmd->footer(Footer(R"(  looptrace detach -p 1234                     final report to attach's -o, probes removed
  looptrace detach -p 1234,1250
)") + kControlTroubleshooting +
                R"(
  A session whose target exited on its own already wrote its report: detach then says where
  it went and exits 0.
)");
  }
  int Run(std::vector<std::string>) override {
    int status = 0;
    for (int pid : pids_) {
      auto body = Ask(pid, "detach");
      if (body) {
        std::string text = *body;
        while (!text.empty() && text.back() == '\n') text.pop_back();
        log::Info("pid {}: {}", pid, text);
        continue;
      }
      // Lost the race with the target's exit: the session ended and said where its report went.
      if (body.error().code == ExitCode::kSession && std::filesystem::exists(loader::TombstonePath(pid)) &&
          body.error().message.find("ended") != std::string::npos) {
        log::Info("pid {}: {}", pid, body.error().message);
        continue;
      }
      status = Fail(body.error());
    }
    return status;
  }

 private:
  std::vector<int> pids_;
};

}  // namespace

std::unique_ptr<Command> MakeSessionsCommand() { return std::make_unique<SessionsCommand>(); }
std::unique_ptr<Command> MakeStatusCommand() { return std::make_unique<StatusCommand>(); }
std::unique_ptr<Command> MakeSnapshotCommand() { return std::make_unique<SnapshotCommand>(); }
std::unique_ptr<Command> MakeDetachCommand() { return std::make_unique<DetachCommand>(); }

}  // namespace looptrace::cli
