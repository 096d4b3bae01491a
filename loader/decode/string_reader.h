// Reads string arguments from the target lazily: BPF records only the pointer.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "looptrace/events.h"
#include "looptrace/tracers/text_pool.h"
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
  // Bytes from the target: valid UTF-8 of bounded length from here on, once per address,
  // interned so events carry a pointer instead of a copy.
  void Add(uint64_t address, std::string text) {
    MakeSafeText(&text);
    texts_[address] = TextPool::Intern(text);
  }
  // The interned text at `address`, or null when neither BPF nor the process gave it.
  const std::string* Find(uint32_t pid, uint64_t address) {
    if (auto it = texts_.find(address); it != texts_.end()) return it->second;
    if (!fallback_) return nullptr;
    auto text = fallback_->Read(pid, address);
    if (!text) return nullptr;
    MakeSafeText(&*text);
    const std::string* interned = TextPool::Intern(*text);
    texts_[address] = interned;
    return interned;
  }
  std::optional<std::string> Lookup(uint32_t pid, uint64_t address) {
    const std::string* text = Find(pid, address);
    return text ? std::optional<std::string>(*text) : std::nullopt;
  }

 private:
  StringReader* fallback_;
  std::unordered_map<uint64_t, const std::string*> texts_;
};

// The arguments behind string-flavour beat ids (LT_RECORD_IDENTITY), shared like the strings.
struct Identity {
  uint16_t probe_id = 0;
  std::array<uint64_t, LT_MAX_ARGS> values{};
};
class IdentityTable {
 public:
  void Add(uint64_t id, const Identity& identity) { identities_[id] = identity; }
  const Identity* Find(uint64_t id) const {
    auto it = identities_.find(id);
    return it == identities_.end() ? nullptr : &it->second;
  }

 private:
  std::unordered_map<uint64_t, Identity> identities_;
};

}  // namespace looptrace::loader
