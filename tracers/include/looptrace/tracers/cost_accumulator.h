// Message costs of a thread or a name, summarized (count, total, min, max, mean exact;
// nearest-rank percentiles). Exact while it holds at most `exact_limit` values; past that it
// folds them into a log-linear histogram (128 sub-buckets per power of two, so a
// percentile is within 0.4% of the true value) and its memory stops growing: what a
// session that runs for days needs. A limit of 0 keeps every value.
#pragma once

#include <algorithm>
#include <cstdint>
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
    if (!counts_.empty()) {
      const uint32_t bucket = BucketOf(cost_ns);
      if (bucket >= first_bucket_ && bucket - first_bucket_ < counts_.size())
        ++counts_[bucket - first_bucket_];
      else
        CountOutsideWindow(bucket);
      return;
    }
    exact_.push_back(cost_ns);
    if (exact_limit_ && exact_.size() > exact_limit_) Fold();
  }
  uint64_t count() const { return count_; }
  bool exact() const { return counts_.empty(); }
  CostSummary Summary() const;

  // The histogram bucket of a value and the value it stands for (exposed for tests).
  static uint32_t BucketOf(uint64_t value);
  static uint64_t BucketLow(uint32_t bucket);
  static uint64_t BucketHigh(uint32_t bucket);  // exclusive

 private:
  void Fold();
  // Widens the histogram's window to hold `bucket`, and counts it.
  void CountOutsideWindow(uint32_t bucket);

  size_t exact_limit_;
  std::vector<uint64_t> exact_;
  // Histogram mode: the counts of buckets first_bucket_, first_bucket_ + 1, ... A window over
  // the buckets seen rather than a map: one indexed add per message (a map's tree walk was a
  // quarter of the loader's CPU on a busy server past the exact limit), and at most ~7,400
  // buckets (58 KB) however widely the costs spread.
  std::vector<uint64_t> counts_;
  uint32_t first_bucket_ = 0;
  uint64_t count_ = 0;
  uint64_t total_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
};

}  // namespace looptrace
