// StartupTracer: exec -> application create -> first screen -> care scene (after optional
// splash screens), TTID/TTFD-like frames, warm starts (docs/matrix-algorithms.md section 5).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

struct StartupOptions : TracerOptions {
  uint64_t cold_threshold_ns = 10'000'000'000;  // Matrix DEFAULT_STARTUP_THRESHOLD_MS_COLD
  uint64_t warm_threshold_ns = 4'000'000'000;   // Matrix DEFAULT_STARTUP_THRESHOLD_MS_WARM
  uint64_t vitals_cold_ns = 5'000'000'000;      // Android vitals "excessive" cold start
  uint64_t vitals_warm_ns = 2'000'000'000;      // Android vitals "excessive" warm start
  std::vector<std::string> splash;              // Matrix's splashActivities
  CallTreeOptions tree;
  void Declare(OptionSet& options) override;
};

class StartupTracer : public CopyableTracer<StartupTracer> {
 public:
  StartupTracer(const StartupOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override { return SpanBit(SpanKind::kAppCreate) | SpanBit(SpanKind::kLaunch); }
  uint32_t slice_kinds() const override { return SpanBit(SpanKind::kLaunch); }
  uint32_t begin_kinds() const override { return SpanBit(SpanKind::kAppCreate); }
  uint32_t event_types() const override { return EventBit<ProbeEvent>() | EventBit<ProcessExec>(); }
  uint64_t probe_roles() const override {
    return RoleBit(Role::kAppCreateBegin) | RoleBit(Role::kAppCreateEnd) | RoleBit(Role::kActivityLaunch) |
           RoleBit(Role::kActivityFocus) | RoleBit(Role::kFrameEnd) | RoleBit(Role::kFullyDrawn);
  }
  void OnEvent(const Event& event) override;
  void OnSpanBegin(const Span& span) override;
  void OnSpanEnd(const Span& span) override;
  std::optional<SliceRequest> WantSlice(const Span& span) override;
  void Contribute(Report& report) override;

 private:
  void OnProbe(const ProbeEvent& event);
  bool IsSplash(const std::string& activity) const;
  std::vector<NamedCallNode> Tree(const MethodBeats& beats);
  void Add(std::string name, uint64_t ts, std::string activity, bool warm);

  const StartupOptions& options_;
  StartupReport r_;
  std::optional<Span> app_create_;  // where a cold startup's call tree begins
  std::optional<MethodBeats> cold_beats_;
  std::optional<MethodBeats> warm_beats_;
  bool frame_wanted_ = false;  // a launch waits for its first frame
  bool fully_drawn_frame_wanted_ = false;
  std::string last_launched_;
  std::optional<WarmStart> warm_;  // a warm start in progress
  bool warm_phase_ = false;        // after the first warm launch, milestones are warm
  // Sampled trees: the cold start keeps its thread's samples from app.create.begin (tid,
  // begin) until the care scene's focus; then its tree (begin, focus, tree); warm starts'
  // trees by launch time. Attached at the end to the startups over their thresholds.
  std::optional<std::pair<uint32_t, uint64_t>> cold_held_;
  std::optional<std::tuple<uint64_t, uint64_t, SampledCallTree>> cold_sampled_;
  std::map<uint64_t, SampledCallTree> warm_sampled_;
};

}  // namespace looptrace
