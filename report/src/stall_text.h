// The text report's ANR/LAG snapshots, each like an Android `traces.txt` entry: the cause,
// the message's off-CPU time, the methods running and every thread's stacks.
#pragma once

#include <ostream>

#include "looptrace/report/report.h"

namespace looptrace {

void RenderStallsText(const Report& report, std::ostream& out);

}  // namespace looptrace
