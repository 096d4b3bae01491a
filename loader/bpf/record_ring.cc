#include "loader/bpf/record_ring.h"

#include <sys/mman.h>

#include <cerrno>

namespace looptrace::loader {

Result<RecordRing> RecordRing::Map(int map_fd, uint64_t capacity, const uint64_t* head, uint64_t* tail) {
  RecordRing ring;
  const size_t bytes = capacity * sizeof(lt_record);
  void* address = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, map_fd, 0);
  if (address == MAP_FAILED) return SystemError("cannot map the record ring", errno);
  ring.region_ = MappedRegion(address, bytes);
  ring.records_ = static_cast<const lt_record*>(address);
  ring.capacity_ = capacity;
  ring.head_ = head;
  ring.tail_ = tail;
  return ring;
}

}  // namespace looptrace::loader
