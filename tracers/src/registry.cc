#include "looptrace/tracers/registry.h"

#include "looptrace/tracers/anr.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/live_stats.h"
#include "looptrace/tracers/messages.h"
#include "looptrace/tracers/sampled_tree.h"
#include "looptrace/tracers/span_lags.h"
#include "looptrace/tracers/startup.h"

namespace looptrace {

// The order is the order tracers see each event and span.
const std::vector<TracerEntry>& TracerRegistry() {
  static const std::vector<TracerEntry> kTracers = {
      MakeTracerEntry<MessagesTracer, MessagesOptions>("messages"),
      MakeTracerEntry<FrameTracer, FrameOptions>("frames"),
      MakeTracerEntry<EvilMethodTracer, EvilMethodOptions>("evil_method"),
      MakeTracerEntry<AnrTracer, AnrOptions>("anr"),
      MakeTracerEntry<SpanLagTracer, SpanLagOptions>("span_lags"),
      MakeTracerEntry<StartupTracer, StartupOptions>("startup"),
      MakeTracerEntry<LiveStatsTracer, LiveStatsOptions>("live_stats", /*live_only=*/true),
      MakeTracerEntry<SampledTreeTracer, SampledTreeOptions>("sampled_tree"),
  };
  return kTracers;
}

}  // namespace looptrace
