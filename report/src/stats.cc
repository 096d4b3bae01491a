#include "looptrace/report/stats.h"

namespace looptrace {
namespace {

struct StatInfo {
  std::string_view name;
  StatSeverity severity;
  std::string_view description;
};

constexpr StatInfo kStatInfo[] = {
#define LOOPTRACE_STAT_INFO(name, severity, description) {#name, StatSeverity::severity, description},
    LOOPTRACE_STATS(LOOPTRACE_STAT_INFO)
#undef LOOPTRACE_STAT_INFO
};

}  // namespace

std::string_view StatName(StatId id) { return kStatInfo[static_cast<int>(id)].name; }
std::optional<StatId> StatFromName(std::string_view name) {
  for (int i = 0; i < kStatCount; ++i)
    if (kStatInfo[i].name == name) return static_cast<StatId>(i);
  return std::nullopt;
}

std::string_view StatDescription(StatId id) { return kStatInfo[static_cast<int>(id)].description; }
StatSeverity StatSeverityOf(StatId id) { return kStatInfo[static_cast<int>(id)].severity; }

std::string_view SeverityName(StatSeverity severity) {
  switch (severity) {
    case StatSeverity::kInfo:
      return "info";
    case StatSeverity::kError:
      return "error";
    case StatSeverity::kDataLoss:
      return "data_loss";
    case StatSeverity::kFilter:
      return "filter";
    case StatSeverity::kCost:
      return "cost";
    case StatSeverity::kCoverage:
      return "coverage";
  }
  return "unknown";
}

}  // namespace looptrace
