#include "loader/live/live_session.h"

#include <sstream>

#include "loader/session/trace.h"

namespace looptrace::loader {

LiveSession::LiveSession(const LiveSessionConfig& config, const AnalysisOptions& analysis)
    : config_(config), pipeline_(analysis, nullptr, PipelineUse::kLive) {}

LiveSession::~LiveSession() = default;

Result<std::unique_ptr<LiveSession>> LiveSession::Start(const LiveSessionConfig& config,
                                                        const AnalysisOptions& analysis, int signal_fd) {
  std::unique_ptr<LiveSession> s(new LiveSession(config, analysis));
  if (!config.output_path.empty()) {
    ASSIGN_OR_RETURN(s->output_, OutputFile::Create(config.output_path));
  }
  if (!config.save_path.empty()) {
    ASSIGN_OR_RETURN(s->recording_, RecordingWriter::Create(config.save_path));
    s->pipeline_.AddObserver(s->recording_.get());
  }
  ASSIGN_OR_RETURN(AttachedProcess attached, AttachProcess(config.pid, config.session, signal_fd, s->pipeline_));
  s->session_ = std::move(attached.session);
  s->pid_fd_ = std::move(attached.pid_fd);
  s->command_ = attached.command;
  s->profile_ = attached.profile;
  return s;
}

size_t LiveSession::probe_points() const { return session_ ? session_->plan().probes.size() : 0; }

Result<void> LiveSession::Join(EventLoop& loop, std::function<void()> on_target_exit) {
  return session_->Join(loop, pid_fd_.get(), std::move(on_target_exit));
}

Result<void> LiveSession::Drain() { return session_->Drain(); }

LiveStatsTracer& LiveSession::live() { return *dynamic_cast<LiveStatsTracer*>(pipeline_.FindTracer("live_stats")); }

LiveStatus LiveSession::Status(uint64_t now_ns) const {
  const auto* tracer = dynamic_cast<const LiveStatsTracer*>(pipeline_.FindTracer("live_stats"));
  LiveStatus status = tracer->Read(now_ns);
  if (!ended_) status.stats.Merge(session_->LiveLosses());
  return status;
}

Report LiveSession::ReportSoFar(uint64_t now_ns) const {
  return pipeline_.Snapshot(now_ns, ended_ ? Stats{} : session_->LiveLosses());
}

std::string LiveSession::Render(const Report& report, const std::string& format) const {
  std::ostringstream out;
  if (auto renderer = MakeRenderer(format, config_.render)) renderer->Render(report, out);
  return out.str();
}

std::string LiveSession::Render(const ThreadDump& dump, const std::string& format) const {
  std::ostringstream out;
  if (auto renderer = MakeRenderer(format, config_.render)) renderer->RenderDump(dump, out);
  return out.str();
}

std::optional<ThreadDump> LiveSession::Dump(uint64_t now_ns, uint64_t wall_time_ns) {
  return pipeline_.DumpNow(now_ns, wall_time_ns);
}

Report LiveSession::End(EventLoop& loop, const std::string& reason, Result<void>* written) {
  ended_ = true;
  end_reason_ = reason;
  session_->Leave(loop);
  session_->Finish(reason);
  Report report = pipeline_.TakeReport();
  *written = {};
  if (recording_) {
    if (auto ok = recording_->Commit(); !ok) *written = ok;
  }
  if (output_) {
    std::ostream& out = output_->stream();
    if (auto renderer = MakeRenderer(config_.format, config_.render)) renderer->Render(report, out);
    if (auto ok = output_->Commit(); !ok) *written = ok;
  }
  session_.reset();  // probes are gone with it
  pid_fd_.Reset();
  return report;
}

}  // namespace looptrace::loader
