// The tracer registry: every tracer the pipeline runs, with its options. Adding a tracer is
// its own files plus one line in registry.cc.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "looptrace/tracers/options.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// What a pipeline is for: a report at the end (trace, record, report), or a live session
// whose figures are read while it runs (top, attach) as well.
enum class PipelineUse : uint8_t { kReport, kLive };

struct TracerEntry {
  std::string_view name;
  // Runs only in live pipelines: it contributes nothing to a report (LiveStatsTracer), so a
  // report's pipeline does not pay for it at every message.
  bool live_only = false;
  // A fresh options object with the tracer's defaults.
  std::function<std::unique_ptr<TracerOptions>()> make_options;
  std::function<std::unique_ptr<Tracer>(const TracerOptions& options, const TracerContext& context)> make;
};

const std::vector<TracerEntry>& TracerRegistry();

// Helper for registry.cc: a tracer class T with an options struct O (derived from
// TracerOptions) and a constructor T(const O&, const TracerContext&).
template <typename T, typename O>
TracerEntry MakeTracerEntry(std::string_view name, bool live_only = false) {
  return TracerEntry{name, live_only, [] { return std::make_unique<O>(); },
                     [](const TracerOptions& options, const TracerContext& context) -> std::unique_ptr<Tracer> {
                       return std::make_unique<T>(static_cast<const O&>(options), context);
                     }};
}

}  // namespace looptrace
