// Text of the live commands, pure so tests can check it: `status` (one screen), `top` (a
// screen for a terminal of a given size, or one plain line per refresh when stdout is not
// a terminal) and `sessions` (a table). Names from the target are escaped for the terminal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "looptrace/report/live_status.h"

namespace looptrace {

std::string FormatStatus(const SessionSummary& session, const LiveStatus& status);

// At most `height` lines of at most `width` columns.
std::vector<std::string> TopScreen(const SessionSummary& session, const LiveStatus& status, int width, int height);
std::string TopLine(const LiveStatus& status, uint64_t wall_now_ns);

struct SessionRow {
  SessionSummary summary;
  std::string note;  // "" or why it could not be asked ("stale socket removed", an error)
};
std::string FormatSessions(const std::vector<SessionRow>& rows, uint64_t wall_now_ns);

// "3m12s", "1h02m", "12.3s".
std::string FormatAge(uint64_t ns);
// Control characters made visible, long text cut: for names that came from the target.
std::string TerminalText(std::string_view text, size_t max_bytes = 200);

}  // namespace looptrace
