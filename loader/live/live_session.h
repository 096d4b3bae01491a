// A background session (`looptrace attach`): one traced process with its own pipeline,
// kept by the daemon (daemon.h) on the daemon's loop. It answers what the control socket
// asks (live figures, the report so far, a thread dump) and, when it ends, writes its final
// report where `attach -o` said: the path is fixed when the session starts, never taken
// from a request.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "loader/session/event_loop.h"
#include "loader/session/output_file.h"
#include "loader/session/recording.h"
#include "loader/session/session.h"
#include "looptrace/report/render.h"
#include "looptrace/report/thread_dump.h"
#include "looptrace/tracers/live_stats.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

struct LiveSessionConfig {
  pid_t pid = 0;
  SessionOptions session;
  std::string output_path;  // the final report, absolute ("" = none)
  std::string format = "text";
  RenderOptions render;
  std::string save_path;  // --save: the event stream, absolute ("" = none)
};

class LiveSession {
 public:
  // Opens the outputs (so a bad path fails before the target is touched), resolves the
  // profile, attaches and starts the pipeline.
  static Result<std::unique_ptr<LiveSession>> Start(const LiveSessionConfig& config, const AnalysisOptions& analysis,
                                                    int signal_fd);
  ~LiveSession();

  pid_t pid() const { return config_.pid; }
  const std::string& command() const { return command_; }
  const std::string& profile() const { return profile_; }
  const std::string& output_path() const { return config_.output_path; }
  const std::string& format() const { return config_.format; }
  uint64_t started_wall_ns() const { return pipeline_.session().wall_time_ns; }
  size_t probe_points() const;
  bool ended() const { return ended_; }
  const std::string& end_reason() const { return end_reason_; }

  Result<void> Join(EventLoop& loop, std::function<void()> on_target_exit);
  Result<void> Drain();

  LiveStatus Status(uint64_t now_ns) const;  // the BPF side's counters included
  Report ReportSoFar(uint64_t now_ns) const;
  // In a known format (render.h's registry), with the session's render options.
  std::string Render(const Report& report, const std::string& format) const;
  std::string Render(const ThreadDump& dump, const std::string& format) const;
  // `looptrace snapshot`: every thread of the target now (Pipeline::DumpNow).
  std::optional<ThreadDump> Dump(uint64_t now_ns, uint64_t wall_time_ns);
  LiveStatsTracer& live();

  // Detaches the probes, drains, and writes the final report (and the recording). The
  // report is returned for the exporters; errors writing it are in `written`.
  Report End(EventLoop& loop, const std::string& reason, Result<void>* written);

 private:
  LiveSession(const LiveSessionConfig& config, const AnalysisOptions& analysis);

  LiveSessionConfig config_;
  Pipeline pipeline_;
  std::unique_ptr<OutputFile> output_;
  std::unique_ptr<RecordingWriter> recording_;
  std::unique_ptr<Session> session_;
  UniqueFd pid_fd_;
  std::string command_;
  std::string profile_;
  bool ended_ = false;
  std::string end_reason_;
};

}  // namespace looptrace::loader
