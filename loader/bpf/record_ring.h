// The record ring (events.h): a read-only mapping of the BPF array BPF writes time-ordered
// records into, and the reader that hands them out in ring order, publishes how far it
// read (so BPF can tell a full ring) and counts records a concurrent writer overwrote.
#pragma once

#include <algorithm>
#include <cstdint>

#include "looptrace/events.h"
#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace::loader {

class RecordRing {
 public:
  RecordRing() = default;
  // Maps `capacity` records of the map `map_fd`; `head` and `tail` are BPF's .bss counters.
  static Result<RecordRing> Map(int map_fd, uint64_t capacity, const uint64_t* head, uint64_t* tail);

  // The writers' claim counter now: records below it were claimed (maybe not yet published).
  uint64_t head() const { return records_ ? __atomic_load_n(head_, __ATOMIC_ACQUIRE) : 0; }

  // Calls fn(const lt_record&) for every record published since the last call, in ring
  // order, up to index `limit` (exclusive); stops at a slot claimed but not yet published.
  // Returns how many were lost.
  template <typename Fn>
  uint64_t Drain(Fn&& fn, uint64_t limit = UINT64_MAX) {
    if (!records_) return 0;
    const uint64_t head = std::min(__atomic_load_n(head_, __ATOMIC_ACQUIRE), limit);
    uint64_t tail = *tail_;
    uint64_t lost = 0;
    while (tail < head) {
      const lt_record& slot = records_[tail & (capacity_ - 1)];
      const uint64_t seq = __atomic_load_n(&slot.seq, __ATOMIC_ACQUIRE);
      if (seq < tail + 1) break;  // claimed, not yet published: next time
      if (seq == tail + 1) {
        lt_record copy = slot;
        // A writer a whole ring ahead may have reused the slot while it was copied.
        if (__atomic_load_n(&slot.seq, __ATOMIC_ACQUIRE) == seq)
          fn(copy);
        else
          ++lost;
      } else {
        ++lost;  // overwritten by a writer that raced past the full check
      }
      ++tail;
    }
    __atomic_store_n(tail_, tail, __ATOMIC_RELEASE);
    return lost;
  }
  uint64_t pending() const { return records_ ? __atomic_load_n(head_, __ATOMIC_ACQUIRE) - *tail_ : 0; }

 private:
  MappedRegion region_;
  const lt_record* records_ = nullptr;
  uint64_t capacity_ = 0;
  const uint64_t* head_ = nullptr;
  uint64_t* tail_ = nullptr;
};

}  // namespace looptrace::loader
