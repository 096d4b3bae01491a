// A small deterministic PRNG (SplitMix64): the same seed gives the same
// scenario on every machine and standard library, unlike the std::
// distributions whose output is implementation-defined.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_PRNG_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_PRNG_H_

#include <cstdint>

namespace looptrace::sample {

class Prng {
 public:
  explicit Prng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // Uniform in [lo, hi] (inclusive). The modulo bias is irrelevant here.
  uint64_t Uniform(uint64_t lo, uint64_t hi) {
    if (hi <= lo) return lo;
    const uint64_t span = hi - lo + 1;
    return span == 0 ? Next() : lo + Next() % span;
  }

  // True with the given probability in percent.
  bool Percent(uint64_t percent) { return Next() % 100 < percent; }

  // An independent generator for a sub-stream (e.g. one per thread).
  Prng Fork(uint64_t stream) { return Prng(Next() ^ (stream * 0xd1342543de82ef95ULL)); }

 private:
  uint64_t state_;
};

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_PRNG_H_
