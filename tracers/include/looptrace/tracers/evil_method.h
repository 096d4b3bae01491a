// EvilMethod: a message costing at least the threshold (Matrix: 700 ms) is reported with
// the call tree of its method beats, trimmed like Matrix, plus its stackKey.
#pragma once

#include <cstdint>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// Its threshold is CommonOptions::evil_threshold_ns (the live figures count by it too).
struct EvilMethodOptions : TracerOptions {
  bool matrix_compat = false;  // reproduce Matrix's algorithm exactly (ms, quirks)
  CallTreeOptions tree;
  void Declare(OptionSet& options) override;
};

class EvilMethodTracer : public CopyableTracer<EvilMethodTracer> {
 public:
  EvilMethodTracer(const EvilMethodOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override { return SpanBit(SpanKind::kMessage); }
  uint32_t slice_kinds() const override { return SpanBit(SpanKind::kMessage); }
  uint32_t event_types() const override { return 0; }

  // The checks inline, the work out of line: called for every message, slow for few.
  uint64_t slice_min_cost_ns() const override { return context_.common->evil_threshold_ns; }
  uint64_t end_min_cost_ns() const override { return context_.common->evil_threshold_ns; }
  std::optional<SliceRequest> WantSlice(const Span& span) override {
    if (!Slow(span)) return std::nullopt;
    return SliceRequest::Of(span, "message");
  }
  void OnSpanEnd(const Span& span) override {
    if (Slow(span)) ReportSlow(span);
  }
  void Contribute(Report& report) override;

 private:
  bool Slow(const Span& span) const {
    return span.kind == SpanKind::kMessage && span.close == SpanClose::kEnded &&
           span.cost_ns() >= context_.common->evil_threshold_ns;
  }
  void ReportSlow(const Span& span);

  const EvilMethodOptions& options_;
  std::vector<EvilMethodReport> reports_;
  // Slow nested messages (depth > 0) whose outer message has not ended yet: the outer one,
  // slow too, reports them nested; one that never ends leaves them reported on their own.
  std::vector<EvilMethodReport> nested_;
};

}  // namespace looptrace
