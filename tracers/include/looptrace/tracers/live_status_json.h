// LiveStatus as one JSON object: how a background session answers `status` over its
// control socket (the client formats it), and what `status -f json` prints.
#pragma once

#include <string>
#include <string_view>

#include "looptrace/tracers/live_stats.h"
#include "looptrace/util/result.h"

namespace looptrace {

std::string LiveStatusToJson(const LiveStatus& status);
Result<LiveStatus> LiveStatusFromJson(std::string_view text);

}  // namespace looptrace
