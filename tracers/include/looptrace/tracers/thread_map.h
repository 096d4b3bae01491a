// ThreadMap: per-thread state by thread id, in thread-id order (as std::map), remembering the
// entry it returned last. Most events in a row are one thread's (the loop's), and a tree
// lookup per tracer per event adds up at millions of events per second. A copy (Pipeline
// snapshots copy the span tracker and clone tracers) forgets the remembered entry: it points
// into the original's map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

namespace looptrace {

template <typename T>
class ThreadMap {
 public:
  using Map = std::map<uint32_t, T>;

  ThreadMap() = default;
  ThreadMap(const ThreadMap& other) : map_(other.map_) {}
  ThreadMap(ThreadMap&& other) noexcept : map_(std::move(other.map_)) { other.Forget(); }
  ThreadMap& operator=(const ThreadMap& other) {
    if (this == &other) return *this;
    map_ = other.map_;
    Forget();
    return *this;
  }
  ThreadMap& operator=(ThreadMap&& other) noexcept {
    map_ = std::move(other.map_);
    Forget();
    other.Forget();
    return *this;
  }

  // The thread's entry, made (value-initialized) if new. std::map nodes do not move, so the
  // remembered pointer stays valid until the entry is erased.
  T& operator[](uint32_t tid) {
    if (last_ && last_tid_ == tid) return *last_;
    T& entry = map_[tid];
    Remember(tid, &entry);
    return entry;
  }
  // The thread's entry, or null.
  T* Find(uint32_t tid) {
    if (last_ && last_tid_ == tid) return last_;
    auto it = map_.find(tid);
    if (it == map_.end()) return nullptr;
    Remember(tid, &it->second);
    return &it->second;
  }
  const T* Find(uint32_t tid) const { return const_cast<ThreadMap*>(this)->Find(tid); }
  void Erase(uint32_t tid) {
    if (last_tid_ == tid) Forget();
    map_.erase(tid);
  }
  void Clear() {
    Forget();
    map_.clear();
  }

  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  typename Map::iterator begin() { return map_.begin(); }
  typename Map::iterator end() { return map_.end(); }
  typename Map::const_iterator begin() const { return map_.begin(); }
  typename Map::const_iterator end() const { return map_.end(); }

 private:
  void Remember(uint32_t tid, T* entry) const {
    last_tid_ = tid;
    last_ = entry;
  }
  void Forget() const { last_ = nullptr; }

  Map map_;
  mutable uint32_t last_tid_ = 0;
  mutable T* last_ = nullptr;
};

}  // namespace looptrace
