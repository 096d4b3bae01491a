// Chrome trace event JSON (chrome://tracing, Perfetto UI): messages, frames and their phases
// as nested slices per thread, FPS counters and instant events for janky frames. Made from
// the report's JSON records (json_records.h): what a slice says is what the JSON report says.
#pragma once

#include <ostream>

#include "looptrace/report/report.h"
#include "looptrace/report/thread_dump.h"

namespace looptrace {

// Writes {"traceEvents":[...],"displayTimeUnit":"ms","metadata":{...}}. Timestamps are
// microseconds (with the nanoseconds as 3 decimals) relative to session.begin_ns (or to the
// earliest slice if one began before it). Slices of a thread are always properly nested:
// a slice that would end after its enclosing slice is clipped to it (args.clipped_end_ns).
void RenderChromeTrace(const Report& report, std::ostream& out);

// A thread dump as a trace: the running message as a slice up to the dump, and each thread's
// state and stacks at that moment as an instant event (made from the dump's JSON record).
void RenderThreadDumpChromeTrace(const ThreadDump& dump, std::ostream& out);

}  // namespace looptrace
