// A target's memory for the runtime readers' unit tests: byte ranges the test maps and writes,
// read as process_vm_readv reads a process (a read fails unless one range holds all of it).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "loader/runtimes/python/code_namer.h"  // Memory

namespace looptrace::loader {

class FakeMemory : public python::Memory {
 public:
  bool Read(uint64_t address, void* out, size_t size) override {
    const auto* bytes = RangeHolding(address, size);
    if (!bytes) return false;
    std::memcpy(out, bytes->second.data() + (address - bytes->first), size);
    return true;
  }
  void Map(uint64_t address, size_t size) { ranges_[address] = std::vector<uint8_t>(size); }
  void Write(uint64_t address, const void* data, size_t size) {
    auto* bytes = RangeHolding(address, size);
    if (!bytes) {
      ADD_FAILURE() << "no range at " << address;
      return;
    }
    std::memcpy(bytes->second.data() + (address - bytes->first), data, size);
  }
  template <typename T>
  void Put(uint64_t address, T value) {
    Write(address, &value, sizeof(value));
  }
  void PutText(uint64_t address, const std::string& text) { Write(address, text.c_str(), text.size() + 1); }

 private:
  using Ranges = std::map<uint64_t, std::vector<uint8_t>>;
  Ranges::value_type* RangeHolding(uint64_t address, size_t size) {
    auto it = ranges_.upper_bound(address);
    if (it == ranges_.begin()) return nullptr;
    --it;
    return address + size <= it->first + it->second.size() ? &*it : nullptr;
  }
  Ranges ranges_;
};

}  // namespace looptrace::loader
