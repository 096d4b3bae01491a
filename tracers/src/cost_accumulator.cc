#include "looptrace/tracers/cost_accumulator.h"

#include <algorithm>
#include <bit>

namespace looptrace {
namespace {

constexpr uint32_t kSubBits = 7;                       // 128 sub-buckets per power of two
constexpr uint64_t kLinear = uint64_t{2} << kSubBits;  // values below 256 are their own bucket

}  // namespace

uint32_t CostAccumulator::BucketOf(uint64_t value) {
  if (value < kLinear) return static_cast<uint32_t>(value);
  const uint32_t exponent = 63 - static_cast<uint32_t>(std::countl_zero(value));  // >= 8
  const uint32_t shift = exponent - kSubBits;
  const uint32_t mantissa = static_cast<uint32_t>((value >> shift) & ((1u << kSubBits) - 1));
  return static_cast<uint32_t>(kLinear) + (exponent - (kSubBits + 1)) * (1u << kSubBits) + mantissa;
}

uint64_t CostAccumulator::BucketLow(uint32_t bucket) {
  if (bucket < kLinear) return bucket;
  const uint32_t rest = bucket - static_cast<uint32_t>(kLinear);
  const uint32_t exponent = rest / (1u << kSubBits) + kSubBits + 1;
  const uint64_t mantissa = rest % (1u << kSubBits);
  return ((uint64_t{1} << kSubBits) + mantissa) << (exponent - kSubBits);
}

uint64_t CostAccumulator::BucketHigh(uint32_t bucket) {
  if (bucket < kLinear) return uint64_t{bucket} + 1;
  const uint32_t rest = bucket - static_cast<uint32_t>(kLinear);
  const uint32_t exponent = rest / (1u << kSubBits) + kSubBits + 1;
  const uint64_t mantissa = rest % (1u << kSubBits);
  const uint64_t high = ((uint64_t{1} << kSubBits) + mantissa + 1) << (exponent - kSubBits);
  return high == 0 ? UINT64_MAX : high;  // the last bucket of 2^63
}

void CostAccumulator::Fold() {
  const auto [low, high] = std::minmax_element(exact_.begin(), exact_.end());
  first_bucket_ = BucketOf(*low);
  counts_.assign(BucketOf(*high) - first_bucket_ + 1, 0);
  for (uint64_t v : exact_) ++counts_[BucketOf(v) - first_bucket_];
  std::vector<uint64_t>().swap(exact_);
}

void CostAccumulator::CountOutsideWindow(uint32_t bucket) {
  if (bucket < first_bucket_) {
    counts_.insert(counts_.begin(), first_bucket_ - bucket, 0);
    first_bucket_ = bucket;
  } else {
    counts_.resize(bucket - first_bucket_ + 1, 0);
  }
  ++counts_[bucket - first_bucket_];
}

CostSummary CostAccumulator::Summary() const {
  if (exact()) return SummarizeCosts(exact_);
  CostSummary s;
  s.count = count_;
  s.total_ns = total_;
  s.min_ns = min_;
  s.max_ns = max_;
  s.mean_ns = total_ / count_;
  // Nearest rank, as SummarizeCosts: the value of rank ceil(n * q), 1-based; from the
  // histogram, the middle of the bucket holding that rank, within the true min and max.
  auto rank = [&](unsigned percent) {
    uint64_t r = std::max<uint64_t>((count_ * percent + 99) / 100, 1);
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= r) {
        const uint32_t bucket = first_bucket_ + static_cast<uint32_t>(i);
        const uint64_t low = BucketLow(bucket), high = BucketHigh(bucket);
        return std::clamp(low + (high - 1 - low) / 2, min_, max_);
      }
    }
    return max_;
  };
  s.p50_ns = rank(50);
  s.p90_ns = rank(90);
  s.p99_ns = rank(99);
  return s;
}

}  // namespace looptrace
