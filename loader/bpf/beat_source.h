// The BPF method-beat ring (events.h), as the slicer needs it: declared here, below the
// decoder, so the ring (beat_ring.h) implements it without looking up at decode/.
#pragma once

#include <cstdint>
#include <vector>

#include "looptrace/events.h"

namespace looptrace::loader {

class BeatSource {
 public:
  virtual ~BeatSource() = default;
  // Copies the beats with absolute indices [begin, end) that are still in the ring and
  // returns how many of them had already been overwritten.
  virtual uint64_t Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const = 0;
};

}  // namespace looptrace::loader
