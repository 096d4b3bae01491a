#include "looptrace/report/report.h"

#include <algorithm>

namespace looptrace {

std::map<std::string, uint64_t> TotalByKind(const std::vector<StallCause>& causes) {
  std::map<std::string, uint64_t> totals;
  std::map<std::string, uint64_t> covered_to;  // per kind: union of intervals (sorted by begin)
  for (const StallCause& c : causes) {
    uint64_t& to = covered_to[c.kind];
    const uint64_t from = std::max(c.begin_ns, to);
    if (c.end_ns > from)
      totals[c.kind] += c.end_ns - from;
    else
      totals[c.kind] += 0;
    to = std::max(to, c.end_ns);
  }
  return totals;
}

}  // namespace looptrace
