// The method-beat ring (events.h): a read-only mapping of the BPF array BPF writes beats
// into, and the copy of one stretch of it that detects what was overwritten meanwhile.
#pragma once

#include <cstdint>
#include <vector>

#include "loader/bpf/beat_source.h"
#include "looptrace/events.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

class BeatRing : public BeatSource {
 public:
  BeatRing() = default;
  // Maps `capacity` beats of the map `map_fd`; `head` is BPF's head counter (.bss).
  static Result<BeatRing> Map(int map_fd, uint64_t capacity, const uint64_t* head);

  uint64_t Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const override;
  uint64_t head() const;

 private:
  MappedRegion region_;
  const lt_beat* beats_ = nullptr;
  uint64_t capacity_ = 0;
  const uint64_t* head_ = nullptr;
};

}  // namespace looptrace::loader
