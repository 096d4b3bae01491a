// CompactQueue: a FIFO of a thread's recent items (samples, messages, off-CPU stretches)
// that costs nothing while empty. libstdc++'s std::deque allocates a 512-byte block and its
// map even when empty, which a session of many short-lived threads paid once per thread id
// in each tracer keeping one. A vector and the index of its front instead: popping moves
// the front, and the dead prefix is erased once it is half of the storage.
#pragma once

#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace looptrace {

template <typename T>
class CompactQueue {
 public:
  // The standard containers' names: range-for and <algorithm> need them.
  using iterator = typename std::vector<T>::iterator;              // NOLINT(readability-identifier-naming)
  using const_iterator = typename std::vector<T>::const_iterator;  // NOLINT(readability-identifier-naming)

  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  size_t capacity() const { return items_.capacity(); }

  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_.back(); }
  const T& back() const { return items_.back(); }

  iterator begin() { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin() + static_cast<std::ptrdiff_t>(head_); }
  const_iterator end() const { return items_.end(); }
  std::reverse_iterator<iterator> rbegin() { return std::reverse_iterator<iterator>(end()); }
  std::reverse_iterator<iterator> rend() { return std::reverse_iterator<iterator>(begin()); }
  std::reverse_iterator<const_iterator> rbegin() const { return std::reverse_iterator<const_iterator>(end()); }
  std::reverse_iterator<const_iterator> rend() const { return std::reverse_iterator<const_iterator>(begin()); }

  void push_back(T item) { items_.push_back(std::move(item)); }
  // Before `at` (between begin() and end()).
  iterator insert(iterator at, T item) { return items_.insert(at, std::move(item)); }
  void pop_front() {
    items_[head_] = T{};  // what it holds goes now, not at the next compaction
    if (++head_ == items_.size()) {
      clear();
    } else if (head_ >= kMinDead && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  // Keeps the storage: the busy thread's queue empties and fills again all the time.
  void clear() {
    items_.clear();
    head_ = 0;
  }
  // Gives the storage back.
  void release() {
    std::vector<T>().swap(items_);
    head_ = 0;
  }

 private:
  static constexpr size_t kMinDead = 16;

  std::vector<T> items_;
  size_t head_ = 0;
};

}  // namespace looptrace
