// A fixed-resolution histogram of durations for long sessions: log-linear buckets (64 per
// power of two, exact below 64 ns), so a percentile read from it is within 0.8% of the
// true nearest-rank value. Count, total, min and max are exact. Memory grows only with the
// largest value seen (about 13 KB for values up to a second), never with the count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "looptrace/tracers/report.h"

namespace looptrace {

class CostHistogram {
 public:
  static constexpr int kSubBits = 6;  // 64 sub-buckets per octave
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;

  void Add(uint64_t value_ns);
  void Merge(const CostHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t total_ns() const { return total_; }
  // Nearest rank (the smallest value with at least percent% of the samples at or below it),
  // reported as the midpoint of its bucket clamped to [min, max]. 0 when empty.
  uint64_t Percentile(unsigned percent) const;
  // Exact count/total/min/max/mean, percentiles from the buckets.
  CostSummary Summary() const;
  size_t bytes() const { return counts_.capacity() * sizeof(uint64_t); }

  static size_t Index(uint64_t value_ns);
  static uint64_t Lower(size_t index);  // smallest value of the bucket
  static uint64_t Upper(size_t index);  // largest value of the bucket

 private:
  std::vector<uint64_t> counts_;  // up to the highest bucket used
  uint64_t count_ = 0;
  uint64_t total_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace looptrace
