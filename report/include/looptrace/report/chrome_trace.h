// Chrome trace event JSON (chrome://tracing, Perfetto UI): messages, frames and their phases
// as nested slices per thread, FPS counters and instant events for janky frames.
#pragma once

#include <ostream>

#include "looptrace/report/report.h"

namespace looptrace {

// Writes {"traceEvents":[...],"displayTimeUnit":"ms","metadata":{...}}. Timestamps are
// microseconds (with the nanoseconds as 3 decimals) relative to session.begin_ns (or to the
// earliest slice if one began before it). Slices of a thread are always properly nested:
// a slice that would end after its enclosing slice is clipped to it (args.clipped_end_ns).
void RenderChromeTrace(const SessionInfo& session, const MessagesReport& messages, const FramesReport& frames,
                       std::ostream& out);

}  // namespace looptrace
