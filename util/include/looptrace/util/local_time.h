// Wall-clock instants as the reader's local time, for reports, logs and the live view.
#pragma once

#include <cstdint>
#include <string>

namespace looptrace {

enum class LocalTimeStyle {
  kDateTime,        // 2026-11-22 21:05:09
  kDateTimeMillis,  // 2026-11-22 21:05:09.123
  kTime,            // 21:05:09
  kTimeMillis,      // 21:05:09.123
};

// `wall_ns`: nanoseconds since the epoch (CLOCK_REALTIME).
std::string LocalTime(uint64_t wall_ns, LocalTimeStyle style = LocalTimeStyle::kDateTime);

}  // namespace looptrace
