#include "looptrace/tracers/cost_histogram.h"

#include <algorithm>
#include <bit>

namespace looptrace {

size_t CostHistogram::Index(uint64_t v) {
  if (v < kSub) return static_cast<size_t>(v);
  const int exponent = 63 - std::countl_zero(v);  // >= kSubBits
  const int shift = exponent - kSubBits;
  const uint64_t sub = (v >> shift) - kSub;  // 0..kSub-1
  return static_cast<size_t>(kSub + static_cast<uint64_t>(shift) * kSub + sub);
}

uint64_t CostHistogram::Lower(size_t index) {
  if (index < kSub) return index;
  const uint64_t shift = (index - kSub) / kSub;
  const uint64_t sub = (index - kSub) % kSub;
  return (kSub + sub) << shift;
}

uint64_t CostHistogram::Upper(size_t index) {
  if (index < kSub) return index;
  const uint64_t shift = (index - kSub) / kSub;
  return Lower(index) + ((uint64_t{1} << shift) - 1);
}

void CostHistogram::Add(uint64_t v) {
  const size_t i = Index(v);
  if (i >= counts_.size()) counts_.resize(i + 1, 0);
  ++counts_[i];
  ++count_;
  total_ += v;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void CostHistogram::Merge(const CostHistogram& other) {
  if (other.count_ == 0) return;
  if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size(), 0);
  for (size_t i = 0; i < other.counts_.size(); ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  total_ += other.total_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t CostHistogram::Percentile(unsigned percent) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>((count_ * percent + 99) / 100, 1);
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t lo = Lower(i), hi = Upper(i);
      return std::clamp(lo + (hi - lo) / 2, min_, max_);
    }
  }
  return max_;
}

CostSummary CostHistogram::Summary() const {
  CostSummary s;
  if (count_ == 0) return s;
  s.count = count_;
  s.total_ns = total_;
  s.min_ns = min_;
  s.max_ns = max_;
  s.mean_ns = total_ / count_;
  s.p50_ns = Percentile(50);
  s.p90_ns = Percentile(90);
  s.p99_ns = Percentile(99);
  return s;
}

}  // namespace looptrace
