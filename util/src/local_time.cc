#include "looptrace/util/local_time.h"

#include <fmt/format.h>
#include <time.h>

namespace looptrace {

std::string LocalTime(uint64_t wall_ns, LocalTimeStyle style) {
  const time_t seconds = static_cast<time_t>(wall_ns / 1'000'000'000);
  tm local{};
  localtime_r(&seconds, &local);
  const bool date = style == LocalTimeStyle::kDateTime || style == LocalTimeStyle::kDateTimeMillis;
  const bool millis = style == LocalTimeStyle::kDateTimeMillis || style == LocalTimeStyle::kTimeMillis;
  char text[32];
  strftime(text, sizeof(text), date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &local);
  return millis ? fmt::format("{}.{:03}", text, (wall_ns / 1'000'000) % 1000) : std::string(text);
}

}  // namespace looptrace
