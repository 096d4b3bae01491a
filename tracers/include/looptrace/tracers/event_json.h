// Events as JSON lines: the recording format (`record --save`, `report FILE`) and the
// input format of golden tests. One event per line; see docs/output-formats.md, "Recordings".
#pragma once

#include <string>
#include <string_view>

#include "looptrace/tracers/event.h"
#include "looptrace/util/result.h"

namespace looptrace {

inline constexpr std::string_view kRecordingFormat = "looptrace-events";
inline constexpr int kRecordingVersion = 1;

// The first line of every recording.
std::string RecordingHeaderLine();

std::string EventToJsonLine(const Event& event);

// Parses one line. The header line yields std::nullopt (not an error).
Result<std::optional<Event>> EventFromJsonLine(std::string_view line);

}  // namespace looptrace
