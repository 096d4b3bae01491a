// Reads string arguments from the target lazily: BPF records only the pointer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "looptrace/util/text_safety.h"

namespace looptrace::loader {

class StringReader {
 public:
  virtual ~StringReader() = default;
  virtual std::optional<std::string> Read(uint32_t pid, uint64_t address) = 0;
};

// process_vm_readv with a cache keyed by (pid, address): role strings such as message
// and method names are static, so each is read once.
class ProcessStringReader : public StringReader {
 public:
  static constexpr size_t kMaxLength = 256;
  std::optional<std::string> Read(uint32_t pid, uint64_t address) override;

 private:
  std::unordered_map<uint64_t, std::string> cache_;
  uint32_t cached_pid_ = 0;
};

// The target's strings by address: texts BPF sent (LT_RECORD_STRING), else read from the
// process (BPF could not fault the page in). Shared by the decoder and the beat slicer.
class StringTable {
 public:
  explicit StringTable(StringReader* fallback = nullptr) : fallback_(fallback) {}
  // Bytes from the target: valid UTF-8 of bounded length from here on, once per address
  // (SanitizingSink would otherwise copy every event carrying the name).
  void Add(uint64_t address, std::string text) {
    MakeSafeText(&text);
    texts_[address] = std::move(text);
  }
  std::optional<std::string> Lookup(uint32_t pid, uint64_t address) {
    if (auto it = texts_.find(address); it != texts_.end()) return it->second;
    if (!fallback_) return std::nullopt;
    return fallback_->Read(pid, address);
  }

 private:
  StringReader* fallback_;
  std::unordered_map<uint64_t, std::string> texts_;
};

}  // namespace looptrace::loader
