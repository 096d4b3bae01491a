// The text report's view of a session without messages: where each thread ran
// (report.session_profile), in a section of its own.
#pragma once

#include <ostream>

#include "looptrace/report/report.h"

namespace looptrace {

// Nothing when the session had messages or no samples.
void RenderSessionProfileText(const Report& report, std::ostream& out);

}  // namespace looptrace
