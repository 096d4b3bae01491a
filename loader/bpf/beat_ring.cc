#include "loader/bpf/beat_ring.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

namespace looptrace::loader {

Result<BeatRing> BeatRing::Map(int map_fd, uint64_t capacity, const uint64_t* head) {
  BeatRing ring;
  const size_t bytes = capacity * sizeof(lt_beat);
  void* address = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, map_fd, 0);
  if (address == MAP_FAILED) return SystemError("cannot map the method-beat buffer", errno);
  ring.region_ = MappedRegion(address, bytes);
  ring.beats_ = static_cast<const lt_beat*>(address);
  ring.capacity_ = capacity;
  ring.head_ = head;
  return ring;
}

uint64_t BeatRing::head() const { return head_ ? __atomic_load_n(head_, __ATOMIC_ACQUIRE) : 0; }

uint64_t BeatRing::Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const {
  if (!beats_) return 0;
  const uint64_t head_now = head();
  end = std::min(end, head_now);
  if (begin >= end) return 0;
  const uint64_t requested_begin = begin;
  // Slots older than head - capacity were reused by newer beats.
  if (head_now - begin > capacity_) {
    begin = head_now - capacity_;
    if (begin >= end) return end - requested_begin;
  }
  uint64_t overwritten = begin - requested_begin;
  const size_t first = out->size();
  for (uint64_t i = begin; i < end; ++i) out->push_back(beats_[i & (capacity_ - 1)]);
  // The writer may have lapped the copy while it ran: drop what it could have reused.
  const uint64_t after = head();
  if (after - begin > capacity_) {
    const uint64_t unsafe = std::min(end, after - capacity_) - begin;
    out->erase(out->begin() + first, out->begin() + first + unsafe);
    overwritten += unsafe;
  }
  return overwritten;
}

}  // namespace looptrace::loader
