// Feeds one event stream to every tracer and assembles the report.
#pragma once

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/anr.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/looper_monitor.h"
#include "looptrace/tracers/startup.h"
#include "looptrace/tracers/report.h"

namespace looptrace {

struct AnalysisOptions {
  LooperMonitorOptions looper;
  EvilMethodOptions evil;
  AnrOptions anr;
  StartupOptions startup;
  FrameOptions frames;
  const MethodNamer* namer = nullptr;  // names method ids (methodMapping.txt); may be null
};

class Analyzer : public EventSink {
 public:
  explicit Analyzer(AnalysisOptions options);
  void OnEvent(const Event& event) override;
  // Call once after the last event; a stream without SessionEnd ends at its last event.
  Report TakeReport();

 private:
  AnalysisOptions options_;
  Report report_;
  LooperMonitor looper_;
  EvilMethodTracer evil_;
  AnrTracer anr_;
  StartupTracer startup_;
  FrameTracer frames_;
  uint64_t last_ts_ns_ = 0;
  bool ended_ = false;
  bool started_ = false;
};

}  // namespace looptrace
