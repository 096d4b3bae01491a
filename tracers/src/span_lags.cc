#include "looptrace/tracers/span_lags.h"

#include <fmt/format.h>

#include <algorithm>

namespace looptrace {

void SpanLagOptions::Declare(OptionSet&) {}

SpanLagTracer::SpanLagTracer(const SpanLagOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {}

uint64_t SpanLagTracer::ThresholdOf(const Span& span) const {
  switch (span.kind) {
    case SpanKind::kIdle:
      return context_.common->idle_lag_threshold_ns;
    case SpanKind::kInput:
      return context_.common->input_lag_threshold_ns;
    case SpanKind::kBarrier:
      return context_.common->barrier_threshold_ns;
    default:
      return UINT64_MAX;
  }
}

std::optional<SliceRequest> SpanLagTracer::WantSlice(const Span& span) {
  if (span.kind != SpanKind::kIdle && span.kind != SpanKind::kInput) return std::nullopt;
  if (span.cost_ns() < ThresholdOf(span)) return std::nullopt;
  return SliceRequest::Of(span, span.kind == SpanKind::kIdle ? "idle" : "input");
}

void SpanLagTracer::OnEvent(const Event& event) {
  const auto* e = std::get_if<ProbeEvent>(&event);
  if (!e || e->role != Role::kMessageEnqueue) return;
  const EventArg* async = e->Arg("async");
  if (async && async->value != 0) return;
  // A synchronous message posted while barriers stand: they hold it back.
  for (auto& [id, count] : sync_enqueued_) ++count;
}

void SpanLagTracer::OnSpanEnd(const Span& span) {
  if (span.close == SpanClose::kLost || span.cost_ns() < ThresholdOf(span)) {
    sync_enqueued_.erase(span.id);
    return;
  }
  const bool ended = span.close == SpanClose::kEnded;
  if (span.kind == SpanKind::kBarrier) {
    BarrierLeakReport b;
    b.tid = span.tid;
    b.token = span.key;
    b.begin_ns = span.begin_ns;
    b.end_ns = span.end_ns;
    b.removed = ended;
    b.sync_messages_enqueued = sync_enqueued_[span.id];
    sync_enqueued_.erase(span.id);
    if (b.sync_messages_enqueued > 0) barrier_leaks_.push_back(b);
    return;
  }
  if (span.kind != SpanKind::kIdle && span.kind != SpanKind::kInput) return;
  SpanLagReport lag;
  lag.kind = span.kind == SpanKind::kIdle ? "idle_lag" : "input_lag";
  lag.tid = span.tid;
  lag.begin_ns = span.begin_ns;
  lag.end_ns = span.end_ns;
  if (span.kind == SpanKind::kIdle) {
    lag.name = span.ArgText("name");
    if (lag.name.empty()) lag.name = "idle handler";
  } else {
    lag.name = fmt::format("input {}", span.key);
  }
  lag.scene = context_.spans->scene();
  if (span.beats)
    lag.tree =
        BuildNamedCallTree(*span.beats, context_.common->max_nodes, 0, context_.namer, context_.stats, options_.tree)
            .nodes;
  span_lags_.push_back(std::move(lag));
}

void SpanLagTracer::Contribute(Report& report) {
  std::stable_sort(span_lags_.begin(), span_lags_.end(),
                   [](const SpanLagReport& a, const SpanLagReport& b) { return a.begin_ns < b.begin_ns; });
  report.span_lags = std::move(span_lags_);
  report.barrier_leaks = std::move(barrier_leaks_);
}

}  // namespace looptrace
