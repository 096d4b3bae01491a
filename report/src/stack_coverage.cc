#include "looptrace/report/stack_coverage.h"

#include <fmt/format.h>

namespace looptrace {

std::optional<double> CompleteStackShare(const Stats& stats) {
  const uint64_t sampled = stats.Get(StatId::user_stacks_sampled);
  if (sampled == 0) return std::nullopt;
  return static_cast<double>(stats.Get(StatId::user_stacks_complete)) / static_cast<double>(sampled);
}

std::string StackCoverageLine(const Stats& stats) {
  const std::optional<double> share = CompleteStackShare(stats);
  if (!share) return "";
  return fmt::format("  user stacks: {:.1f}% whole ({} of {} reach main or a thread's start)\n", 100.0 * *share,
                     stats.Get(StatId::user_stacks_complete), stats.Get(StatId::user_stacks_sampled));
}

}  // namespace looptrace
