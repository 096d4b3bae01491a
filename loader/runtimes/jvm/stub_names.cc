#include "loader/runtimes/jvm/stub_names.h"

#include <fmt/format.h>

#include <algorithm>

namespace looptrace::loader::jvm {
namespace {

constexpr int kMaxStubs = 4096;
constexpr uint64_t kMaxStubSize = 1 << 20;
constexpr size_t kMaxName = 128;
constexpr std::chrono::seconds kRereadAfter{1};

// StubCodeDesc's fields, 8 bytes each from its start (stubCodeGenerator.hpp).
struct StubCodeDesc {
  uint64_t next = 0, group = 0, name = 0, begin = 0, end = 0;
};

}  // namespace

std::optional<std::string> StubNames::Text(uint64_t address) {
  char text[kMaxName + 1] = {};
  if (!address || !memory_.Read(address, text, kMaxName)) return std::nullopt;
  std::string s(text);
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 127; })) return std::nullopt;
  return s;
}

void StubNames::Read() {
  read_at_ = std::chrono::steady_clock::now();
  stubs_.clear();
  uint64_t at = 0;
  if (!memory_.Read(list_head_, &at, 8)) return;
  for (int i = 0; at && i < kMaxStubs; ++i) {
    StubCodeDesc desc;
    if (!memory_.Read(at, &desc, sizeof(desc))) break;
    at = desc.next != at ? desc.next : 0;  // a list that loops on itself is not followed round
    if (desc.end <= desc.begin || desc.end - desc.begin > kMaxStubSize) continue;
    auto group = Text(desc.group), name = Text(desc.name);
    if (!name) continue;
    stubs_.push_back({desc.begin, desc.end, group ? fmt::format("{}::{}", *group, *name) : *name});
  }
  std::sort(stubs_.begin(), stubs_.end(), [](const Stub& a, const Stub& b) { return a.begin < b.begin; });
}

std::optional<std::string> StubNames::At(uint64_t pc) {
  auto find = [&]() -> const Stub* {
    auto it = std::upper_bound(stubs_.begin(), stubs_.end(), pc, [](uint64_t p, const Stub& s) { return p < s.begin; });
    if (it == stubs_.begin()) return nullptr;
    --it;
    return pc < it->end ? &*it : nullptr;
  };
  if (!read_at_) Read();
  const Stub* stub = find();
  if (!stub && std::chrono::steady_clock::now() - *read_at_ >= kRereadAfter) {
    Read();
    stub = find();
  }
  if (!stub) return std::nullopt;
  return stub->name;
}

}  // namespace looptrace::loader::jvm
