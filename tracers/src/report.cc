#include "looptrace/tracers/analyzer.h"

#include <algorithm>

namespace looptrace {

Analyzer::Analyzer(AnalysisOptions options)
    : options_(options),
      looper_(options_.looper, &report_.stats),
      evil_(options_.evil, &report_.stats, options_.namer),
      anr_(options_.anr, &report_.stats, options_.namer, &looper_),
      startup_(options_.startup, &report_.stats, options_.namer),
      frames_(options_.frames, &report_.stats, options_.namer) {}

void Analyzer::OnEvent(const Event& event) {
  if (const auto* start = std::get_if<SessionStart>(&event)) {
    started_ = true;
    SessionInfo& s = report_.session;
    s.pid = start->pid;
    s.command = start->command;
    s.profile = start->profile;
    s.thread_filter = start->thread_filter;
    s.begin_ns = start->ts_ns;
    s.wall_time_ns = start->wall_time_ns;
    s.probes = start->probes;
    s.device = start->device;
    for (const auto& p : start->probes) {
      if (p.role == Role::kDispatchBegin) report_.messages.enabled = true;
      if (p.role == Role::kFrameBegin) report_.frames.enabled = true;
    }
    last_ts_ns_ = std::max(last_ts_ns_, start->ts_ns);
    return;
  }
  if (const auto* probe = std::get_if<ProbeEvent>(&event)) {
    if (!started_ && report_.session.begin_ns == 0) report_.session.begin_ns = probe->ts_ns;
    last_ts_ns_ = std::max(last_ts_ns_, probe->ts_ns);
    frames_.OnProbe(*probe);
    if (auto message = looper_.OnProbe(*probe)) {
      evil_.OnMessage(*message, report_.session.command);
      frames_.OnMessage(*message);
      anr_.OnMessageEnd(*message);
    }
    anr_.OnProbe(*probe);
    startup_.OnProbe(*probe);
    return;
  }
  if (const auto* beats = std::get_if<MethodBeats>(&event)) {
    evil_.OnBeats(*beats);
    anr_.OnBeats(*beats);
    startup_.OnBeats(*beats);
    frames_.OnBeats(*beats);
    return;
  }
  if (const auto* sw = std::get_if<ThreadSwitch>(&event)) {
    last_ts_ns_ = std::max(last_ts_ns_, sw->ts_ns);
    anr_.OnSwitch(*sw);
    return;
  }
  if (const auto* exec = std::get_if<ProcessExec>(&event)) {
    last_ts_ns_ = std::max(last_ts_ns_, exec->ts_ns);
    startup_.OnExec(*exec);
    return;
  }
  if (const auto* wakeup = std::get_if<Wakeup>(&event)) {
    anr_.OnWakeup(*wakeup);
    return;
  }
  if (const auto* snapshot = std::get_if<StallSnapshot>(&event)) {
    last_ts_ns_ = std::max(last_ts_ns_, snapshot->ts_ns);
    anr_.OnSnapshot(*snapshot);
    return;
  }
  if (const auto* signal = std::get_if<SignalSent>(&event)) {
    last_ts_ns_ = std::max(last_ts_ns_, signal->ts_ns);
    anr_.OnSignal(*signal, report_.session.pid);
    return;
  }
  if (const auto* counters = std::get_if<LossCounters>(&event)) {
    report_.stats.Merge(counters->stats);
    return;
  }
  if (const auto* end = std::get_if<SessionEnd>(&event)) {
    ended_ = true;
    report_.session.end_ns = std::max(end->ts_ns, last_ts_ns_);
    report_.session.end_reason = end->reason;
    report_.session.exit_status = end->exit_status;
  }
}

Report Analyzer::TakeReport() {
  if (!ended_) {
    report_.session.end_ns = last_ts_ns_;
    report_.session.end_reason = "end-of-recording";
  }
  looper_.Finish(report_.session.end_ns);
  anr_.Finish(report_.session.end_ns);
  anr_.Contribute(&report_);
  startup_.Finish(report_.session.end_ns);
  startup_.Contribute(&report_.startup);
  frames_.Finish(report_.session.end_ns);
  frames_.Contribute(&report_.frames);
  const FrameProblems& p = frames_.problems();
  report_.stats.Add(StatId::phase_without_frame, p.phase_without_frame);
  report_.stats.Add(StatId::phase_end_without_begin, p.phase_end_without_begin);
  report_.stats.Add(StatId::phase_mismatch, p.phase_mismatch);
  report_.stats.Add(StatId::phase_unclosed, p.phase_unclosed);
  report_.stats.Add(StatId::frame_end_without_begin, p.frame_end_without_begin);
  report_.stats.Add(StatId::frame_id_mismatch, p.frame_id_mismatch);
  report_.stats.Add(StatId::nested_frames, p.nested_frames);
  report_.stats.Add(StatId::frame_end_lost, p.frame_end_lost);
  report_.stats.Add(StatId::unfinished_frames, p.unfinished_frames);
  report_.stats.Add(StatId::frame_without_vsync, p.frame_without_vsync);
  report_.stats.Add(StatId::vsync_without_timestamp, p.vsync_without_timestamp);
  report_.stats.Add(StatId::refresh_rate_assumed, p.refresh_rate_assumed);
  report_.stats.Add(StatId::refresh_rate_changes, p.refresh_rate_changes);
  looper_.Contribute(&report_.messages);
  report_.evil_threshold_ns = options_.evil.threshold_ns;
  report_.evil_methods = evil_.TakeReports();
  return std::move(report_);
}

}  // namespace looptrace
