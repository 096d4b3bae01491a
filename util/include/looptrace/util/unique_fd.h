// Owned kernel objects: a file descriptor, a memory mapping, any C handle with a deleter.
// Everything looptrace opens (BPF links, perf events, pipes, pidfds, epoll, mmaps of BPF
// maps) is owned by one of these, so every error path and a destructor release it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <utility>

namespace looptrace {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// pipe2(2) as two owned ends.
struct UniquePipe {
  UniqueFd read;
  UniqueFd write;
};

// An mmap(2) region, unmapped on destruction.
class MappedRegion {
 public:
  MappedRegion() = default;
  MappedRegion(void* address, size_t size) : address_(address), size_(size) {}
  MappedRegion(MappedRegion&& other) noexcept
      : address_(std::exchange(other.address_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedRegion& operator=(MappedRegion&& other) noexcept {
    if (this != &other) {
      Reset();
      address_ = std::exchange(other.address_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  ~MappedRegion() { Reset(); }

  void* get() const { return address_; }
  size_t size() const { return size_; }
  void Reset() {
    if (address_ && address_ != MAP_FAILED) ::munmap(address_, size_);
    address_ = nullptr;
    size_ = 0;
  }

 private:
  void* address_ = nullptr;
  size_t size_ = 0;
};

// A C handle freed by `Free` (e.g. ring_buffer__free): UniqueHandle<ring_buffer, ring_buffer__free>.
template <typename T, auto Free>
struct HandleDeleter {
  void operator()(T* handle) const {
    if (handle) Free(handle);
  }
};
template <typename T, auto Free>
using UniqueHandle = std::unique_ptr<T, HandleDeleter<T, Free>>;

}  // namespace looptrace
