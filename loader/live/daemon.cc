#include "loader/live/daemon.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "loader/live/control_policy.h"
#include "looptrace/report/json_codecs.h"
#include "looptrace/report/render.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/local_time.h"
#include "looptrace/util/log.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

using nlohmann::json;

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// RUN_DIR/PID.ended, written atomically (the directory is root's, 0700).
void WriteTombstone(pid_t pid, const std::string& reason, const std::string& report) {
  const std::string path = TombstonePath(pid);
  const std::string temp = path + ".tmp";
  json j{{"pid", pid},
         {"reason", reason},
         {"report", report},
         {"ended", LocalTime(NowNs(CLOCK_REALTIME))},
         {"daemon_pid", getpid()}};
  const std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  unlink(temp.c_str());
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(temp.c_str(), path.c_str()) != 0) unlink(temp.c_str());
}

uint64_t DataLoss(const Stats& stats) {
  uint64_t loss = 0;
  for (int i = 0; i < kStatCount; ++i)
    if (StatSeverityOf(static_cast<StatId>(i)) == StatSeverity::kDataLoss) loss += stats.Get(static_cast<StatId>(i));
  return loss;
}

}  // namespace

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || !name[0]) return "localhost";
  return name;
}

std::string ExecutableBuildId(pid_t pid) {
  auto elf = symbols::ElfFile::Open(fmt::format("/proc/{}/exe", pid));
  return elf ? elf->build_id() : "";
}

Result<std::pair<SessionSummary, LiveStatus>> ParseStatusBody(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("session") || !j.contains("status"))
    return MakeError("the session's status is not understood");
  ASSIGN_OR_RETURN(SessionSummary summary, SessionSummaryFromJson(j["session"].dump()));
  ASSIGN_OR_RETURN(LiveStatus status, LiveStatusFromJson(j["status"].dump()));
  return std::pair{std::move(summary), std::move(status)};
}

Result<std::unique_ptr<Daemon>> Daemon::Create(const DaemonOptions& options, int signal_fd) {
  std::unique_ptr<Daemon> d(new Daemon());
  d->options_ = options;
  if (d->options_.host.empty()) d->options_.host = HostName();
  d->signal_fd_ = signal_fd;
  ASSIGN_OR_RETURN(d->loop_, EventLoop::Create());
  RETURN_IF_ERROR(CheckRunDirectory(true));
  if (options.metrics) {
    Daemon* self = d.get();
    ASSIGN_OR_RETURN(d->metrics_,
                     MetricsServer::Start(*options.metrics, *d->loop_, [self](bool om) { return self->Metrics(om); }));
  }
  if (options.clickhouse) {
    ASSIGN_OR_RETURN(d->clickhouse_, ClickHouseSink::Start(*options.clickhouse));
  }
  return d;
}

Daemon::~Daemon() {
  metrics_.reset();  // its connections are on the loop: closed first
  if (clickhouse_) clickhouse_->Stop(std::chrono::seconds(0));
}

Result<void> Daemon::Reserve(pid_t pid) {
  if (entries_.contains(pid)) return MakeError(fmt::format("pid {} is given twice", pid), ExitCode::kUsage);
  ASSIGN_OR_RETURN(auto control,
                   ControlServer::Create(pid, [this, pid](const ControlRequest& r) { return Handle(pid, r); }));
  entries_[pid].control = std::move(control);
  return {};
}

void Daemon::Release(pid_t pid) { entries_.erase(pid); }

Result<void> Daemon::Add(std::unique_ptr<LiveSession> session) {
  const pid_t pid = session->pid();
  auto it = entries_.find(pid);
  if (it == entries_.end()) return MakeError(fmt::format("pid {} was not reserved", pid));
  Entry& entry = it->second;
  RETURN_IF_ERROR(session->Join(*loop_, [this, pid] {
    auto e = entries_.find(pid);
    if (e != entries_.end() && e->second.end_reason.empty()) e->second.end_reason = "target-exited";
  }));
  RETURN_IF_ERROR(entry.control->Join(*loop_));
  if (clickhouse_) {
    session->live().KeepIntervals();
    RowIdentity id;
    id.host = options_.host;
    id.target = session->command();
    id.pid = static_cast<uint32_t>(pid);
    id.profile = session->profile();
    id.begin_wall_ns = session->started_wall_ns();
    const LiveStatus status = session->Status(0);
    id.begin_ns = status.begin_ns;
    id.session_id = fmt::format("{}:{}:{}", options_.host, pid, id.begin_wall_ns / 1'000'000);
    id.build = options_.build.empty() ? ExecutableBuildId(pid) : options_.build;
    entry.rows.emplace(std::move(id), options_.clickhouse_slow_ns);
  }
  entry.session = std::move(session);
  return {};
}

SessionSummary Daemon::Summary(const Entry& entry, uint64_t now_ns) const {
  const LiveSession& s = *entry.session;
  SessionSummary summary;
  summary.pid = static_cast<uint32_t>(s.pid());
  summary.command = s.command();
  summary.profile = s.profile();
  summary.since_wall_ns = s.started_wall_ns();
  summary.daemon_pid = static_cast<uint32_t>(getpid());
  summary.probe_points = s.probe_points();
  summary.output = s.output_path();
  summary.format = s.format();
  summary.metrics_url = metrics_url();
  summary.log_path = options_.log_path;
  const LiveStatus status = s.Status(now_ns);
  for (const auto& t : status.threads) summary.messages += t.messages;
  summary.anrs = status.anrs;
  summary.lags = status.lags;
  summary.data_loss = DataLoss(status.stats);
  if (clickhouse_) {
    const ExporterCounters c = clickhouse_->counters();
    summary.clickhouse = true;
    summary.clickhouse_url = clickhouse_->url();
    summary.rows_sent = c.rows_sent;
    summary.rows_dropped = c.rows_dropped;
    summary.rows_queued = c.rows_queued;
    summary.clickhouse_error = clickhouse_->last_error();
  }
  return summary;
}

ControlResponse Daemon::Handle(pid_t pid, const ControlRequest& request) {
  auto it = entries_.find(pid);
  if (it == entries_.end() || !it->second.session) {
    std::string ended = EndedSessionText(pid);
    if (ended.empty()) ended = fmt::format("the session of pid {} has ended", pid);
    return ControlResponse::Fail(Error{ended, "", ExitCode::kSession});
  }
  Entry& entry = it->second;
  LiveSession& session = *entry.session;
  const uint64_t now = NowNs(CLOCK_MONOTONIC);
  ControlResponse response;
  if (request.command == "info") {
    response.body = SessionSummaryToJson(Summary(entry, now));
  } else if (request.command == "status") {
    response.body = fmt::format("{{\"session\":{},\"status\":{}}}", SessionSummaryToJson(Summary(entry, now)),
                                LiveStatusToJson(session.Status(now)));
  } else if (request.command == "snapshot") {
    const std::string format = request.format.empty() ? "text" : request.format;
    const RendererEntry* renderer = FindRenderer(format);
    if (!renderer)
      return ControlResponse::Fail(Error{fmt::format("unknown format '{}' for a snapshot", format),
                                         "formats: " + RendererNames(), ExitCode::kUsage});
    auto dump = session.Dump(now, NowNs(CLOCK_REALTIME));
    if (!dump) return ControlResponse::Fail(Error{"the session takes no snapshots", "", ExitCode::kSession});
    // Thread names, wait channels and stacks come from the target: terminal-safe either way.
    const std::string body = session.Render(*dump, format);
    response.body = renderer->json ? EscapeJsonForTerminal(body) : EscapeForTerminalKeepLayout(body);
  } else if (request.command == "report") {
    const std::string format = request.format.empty() ? "text" : request.format;
    if (!MakeRenderer(format))
      return ControlResponse::Fail(
          Error{fmt::format("unknown format '{}'", format), "formats: " + RendererNames(), ExitCode::kUsage});
    response.body = session.Render(session.ReportSoFar(now), format);
  } else if (request.command == "detach") {
    Result<void> written;
    const std::string where = End(entry, "detached", &written);
    if (!written) return ControlResponse::Fail(written.error());
    response.body = where;
  }
  return response;
}

std::string Daemon::End(Entry& entry, const std::string& reason, Result<void>* written) {
  LiveSession& session = *entry.session;
  const pid_t pid = session.pid();
  Report report = session.End(*loop_, reason, written);
  if (clickhouse_ && entry.rows) {
    // The last interval and every record not sent yet.
    auto intervals = session.live().TakeIntervals(report.session.end_ns);
    clickhouse_->Enqueue(entry.rows->Rows(report, intervals, report.stats, /*final=*/true));
  }
  std::string where;
  if (!session.output_path().empty()) {
    if (*written) {
      where = fmt::format("report written to {}", session.output_path());
      log::Info("session of pid {} ({}) ended ({}): report written to {}", pid, session.command(), reason,
                session.output_path());
    } else {
      where = written->error().message;
      log::Error("session of pid {} ended ({}): {}", pid, reason, written->error().message);
      exit_code_ = static_cast<int>(written->error().code);
    }
  } else {
    where = "session ended (attach had no -o: no final report was written)";
    log::Info("session of pid {} ({}) ended ({})", pid, session.command(), reason);
  }
  WriteTombstone(pid, reason, *written ? session.output_path() : "");
  entry.control->Close();
  closing_.push_back(std::move(entry.control));
  entries_.erase(pid);
  return where + "\n";
}

void Daemon::Flush(uint64_t now_ns) {
  if (!clickhouse_) return;
  for (auto& [pid, entry] : entries_) {
    if (!entry.session || !entry.rows) continue;
    LiveSession& session = *entry.session;
    Report so_far = session.ReportSoFar(now_ns);
    auto intervals = session.live().TakeIntervals(now_ns);
    clickhouse_->Enqueue(entry.rows->Rows(so_far, intervals, session.Status(now_ns).stats, /*final=*/false));
  }
}

std::string Daemon::Metrics(bool openmetrics) {
  const uint64_t now = NowNs(CLOCK_MONOTONIC);
  std::vector<MetricsSession> sessions;
  for (const auto& [pid, entry] : entries_)
    if (entry.session) sessions.push_back({options_.host, entry.session->Status(now)});
  ExporterCounters exporters;
  if (clickhouse_) exporters = clickhouse_->counters();
  return RenderMetrics(sessions, exporters, options_.host, openmetrics);
}

int Daemon::Run() {
  auto added = loop_->Add(signal_fd_, EPOLLIN, [this](uint32_t) {
    signalfd_siginfo info;
    while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
      if (info.ssi_signo == SIGHUP) continue;  // no terminal to lose: ignored
      log::Info("{} received: ending every session", strsignal(static_cast<int>(info.ssi_signo)));
      stopping_ = true;
    }
  });
  if (!added) {
    log::Error("{}", added.error().message);
    return static_cast<int>(ExitCode::kRuntime);
  }
  std::erase_if(entries_, [](const auto& e) { return !e.second.session; });
  const uint64_t interval_ns = static_cast<uint64_t>(options_.clickhouse_interval_s * 1e9);
  next_flush_ns_ = NowNs(CLOCK_MONOTONIC) + interval_ns;
  while (!entries_.empty() || !closing_.empty()) {
    if (auto ok = loop_->RunOnce(25); !ok) {
      log::Error("{}", ok.error().message);
      stopping_ = true;
    }
    const uint64_t now = NowNs(CLOCK_MONOTONIC);
    std::vector<pid_t> ending;
    for (auto& [pid, entry] : entries_) {
      if (!entry.session) continue;
      if (auto ok = entry.session->Drain(); !ok) {
        log::Error("session of pid {}: {}", pid, ok.error().message);
        if (entry.end_reason.empty()) entry.end_reason = "error";
      }
      if (stopping_ && entry.end_reason.empty()) entry.end_reason = "interrupted";
      if (!entry.end_reason.empty()) ending.push_back(pid);
    }
    for (pid_t pid : ending) {
      Result<void> written;
      auto it = entries_.find(pid);
      End(it->second, it->second.end_reason, &written);
    }
    if (clickhouse_ && now >= next_flush_ns_) {
      Flush(now);
      next_flush_ns_ = now + interval_ns;
    }
    const uint64_t now_ms = NowMs();
    std::erase_if(closing_, [&](const std::unique_ptr<ControlServer>& c) { return c->Expire(now_ms); });
    for (auto& [pid, entry] : entries_) entry.control->Expire(now_ms);
    if (stopping_) {
      // Nothing more will be answered: close what is left.
      closing_.clear();
    }
  }
  loop_->Remove(signal_fd_);
  if (clickhouse_) clickhouse_->Stop(std::chrono::seconds(5));
  return exit_code_;
}

}  // namespace looptrace::loader
