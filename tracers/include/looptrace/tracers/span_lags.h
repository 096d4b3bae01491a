// Slow IdleHandlers and input events (Matrix's IdleHandlerLagTracer and TouchEventLagTracer)
// with their call trees, and sync barriers left standing while synchronous messages starve.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// Its thresholds are CommonOptions' idle_lag, input_lag and barrier thresholds (the live
// figures count by them too).
struct SpanLagOptions : TracerOptions {
  CallTreeOptions tree;
  void Declare(OptionSet& options) override;
};

class SpanLagTracer : public CopyableTracer<SpanLagTracer> {
 public:
  SpanLagTracer(const SpanLagOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override {
    return SpanBit(SpanKind::kIdle) | SpanBit(SpanKind::kInput) | SpanBit(SpanKind::kBarrier);
  }
  uint32_t slice_kinds() const override { return SpanBit(SpanKind::kIdle) | SpanBit(SpanKind::kInput); }
  uint32_t begin_kinds() const override { return SpanBit(SpanKind::kBarrier); }
  uint32_t event_types() const override { return EventBit<ProbeEvent>(); }
  uint64_t probe_roles() const override { return RoleBit(Role::kMessageEnqueue); }

  void OnEvent(const Event& event) override;
  void OnSpanBegin(const Span& span) override {
    if (span.kind == SpanKind::kBarrier) sync_enqueued_[span.id] = 0;
  }
  void OnSpanEnd(const Span& span) override;
  std::optional<SliceRequest> WantSlice(const Span& span) override;
  void Contribute(Report& report) override;

 private:
  uint64_t ThresholdOf(const Span& span) const;

  const SpanLagOptions& options_;
  std::map<uint64_t, uint64_t> sync_enqueued_;  // open barrier span id -> sync messages posted
  std::vector<SpanLagReport> span_lags_;
  std::vector<BarrierLeakReport> barrier_leaks_;
};

}  // namespace looptrace
