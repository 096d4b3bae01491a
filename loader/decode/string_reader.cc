#include "loader/decode/string_reader.h"

#include <sys/uio.h>

#include <cstring>

#include "looptrace/util/text_safety.h"

namespace looptrace::loader {

std::optional<std::string> ProcessStringReader::Read(uint32_t pid, uint64_t address) {
  if (address == 0) return std::nullopt;
  if (pid != cached_pid_) {
    cache_.clear();
    cached_pid_ = pid;
  }
  if (auto it = cache_.find(address); it != cache_.end()) return it->second;

  // Read page by page: a string near the end of a mapping must not fail the whole read.
  std::string out;
  char buffer[kMaxLength];
  uint64_t cursor = address;
  while (out.size() < kMaxLength) {
    size_t to_page_end = 4096 - (cursor & 4095);
    size_t want = std::min(to_page_end, kMaxLength - out.size());
    iovec local{buffer, want};
    iovec remote{reinterpret_cast<void*>(cursor), want};
    ssize_t n = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (n <= 0) {
      if (out.empty()) return std::nullopt;
      break;
    }
    const char* nul = static_cast<const char*>(std::memchr(buffer, '\0', n));
    if (nul) {
      out.append(buffer, nul - buffer);
      break;
    }
    out.append(buffer, n);
    cursor += n;
  }
  MakeSafeText(&out);  // bytes from the target: valid UTF-8 from here on
  cache_.emplace(address, out);
  return out;
}

}  // namespace looptrace::loader
