// Message costs of a thread or a name, summarized (count, total, min, max, mean exact;
// nearest-rank percentiles). Exact while it holds at most `exact_limit` values; past that it
// folds them into a log-linear histogram (128 sub-buckets per power of two, so a
// percentile is within 0.4% of the true value) and its memory stops growing: what a
// session that runs for days needs. A limit of 0 keeps every value.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "looptrace/report/report.h"

namespace looptrace {

// Nearest-rank percentiles over message costs.
CostSummary SummarizeCosts(std::vector<uint64_t> costs);

class CostAccumulator {
 public:
  explicit CostAccumulator(size_t exact_limit = 0) : exact_limit_(exact_limit) {}

  // Inline: one per message and thread (and name).
  [[gnu::always_inline]] void Add(uint64_t cost_ns) {
    if (count_ == 0 || cost_ns < min_) min_ = cost_ns;
    max_ = std::max(max_, cost_ns);
    ++count_;
    total_ += cost_ns;
    if (!buckets_.empty()) {
      ++buckets_[BucketOf(cost_ns)];
      return;
    }
    exact_.push_back(cost_ns);
    if (exact_limit_ && exact_.size() > exact_limit_) Fold();
  }
  uint64_t count() const { return count_; }
  bool exact() const { return buckets_.empty(); }
  CostSummary Summary() const;

  // The histogram bucket of a value and the value it stands for (exposed for tests).
  static uint32_t BucketOf(uint64_t value);
  static uint64_t BucketLow(uint32_t bucket);
  static uint64_t BucketHigh(uint32_t bucket);  // exclusive

 private:
  void Fold();

  size_t exact_limit_;
  std::vector<uint64_t> exact_;
  std::map<uint32_t, uint64_t> buckets_;  // histogram mode: bucket -> count
  uint64_t count_ = 0;
  uint64_t total_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
};

}  // namespace looptrace
