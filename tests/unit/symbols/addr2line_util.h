// Helpers for comparing the Symbolizer with elfutils' eu-addr2line on fixtures.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "looptrace/symbols/symbolizer.h"
#include "symbols_test_util.h"

namespace looptrace::symbols::test_util {

struct ExpectedFrame {
  std::string function;  // "??" when unknown
  std::string location;  // "file:line[:col]" or "??:0"
  bool operator==(const ExpectedFrame&) const = default;
};

inline bool HaveEuAddr2line() { return !RunCommand("command -v eu-addr2line").empty(); }

// [start, end) of an ELF section as `readelf -SW` prints it; {0, 0} if absent.
inline std::pair<uint64_t, uint64_t> SectionRange(const std::string& path, const std::string& section) {
  for (const std::string& line : SplitLines(RunCommand("readelf -SW '" + path + "'"))) {
    std::vector<std::string> words = SplitWords(line);
    for (size_t i = 0; i + 4 < words.size(); ++i) {
      if (words[i] == section) {
        const uint64_t address = std::stoull(words[i + 2], nullptr, 16);
        const uint64_t size = std::stoull(words[i + 4], nullptr, 16);
        return {address, address + size};
      }
    }
  }
  return {0, 0};
}

// `count` addresses drawn uniformly from .text with a fixed seed.
inline std::vector<uint64_t> RandomTextAddresses(const std::string& path, size_t count, uint64_t seed) {
  const auto [start, end] = SectionRange(path, ".text");
  std::vector<uint64_t> out;
  if (end <= start) return out;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> dist(start, end - 1);
  for (size_t i = 0; i < count; ++i) out.push_back(dist(rng));
  return out;
}

// eu-addr2line -a -f -i -C -e FILE ADDR...: the frames of each address, innermost first.
// With -a each address starts a block ("0x..."); the block is the innermost function
// ("NAME" or "NAME inlined at F:L in ..."), its location, then (caller, call site) pairs.
inline std::vector<std::vector<ExpectedFrame>> EuAddr2line(const std::string& file,
                                                           const std::vector<uint64_t>& addresses,
                                                           const std::string& extra_args = "") {
  std::string command = "eu-addr2line -a -f -i -C " + extra_args + " -e '" + file + "'";
  char buffer[32];
  for (uint64_t address : addresses) {
    std::snprintf(buffer, sizeof(buffer), " 0x%llx", static_cast<unsigned long long>(address));
    command += buffer;
  }
  command += " 2>/dev/null";
  std::vector<std::vector<ExpectedFrame>> out;
  std::vector<std::string> block;
  auto flush = [&]() {
    if (out.empty() && block.empty()) return;
    std::vector<ExpectedFrame> frames;
    for (size_t i = 0; i + 1 < block.size(); i += 2) {
      std::string function = block[i];
      if (i == 0) {
        const size_t inlined = function.find(" inlined at ");
        if (inlined != std::string::npos) function.resize(inlined);
      }
      frames.push_back({function, block[i + 1]});
    }
    out.push_back(std::move(frames));
    block.clear();
  };
  bool started = false;
  for (const std::string& line : SplitLines(RunCommand(command))) {
    if (line.starts_with("0x") && line.find(' ') == std::string::npos) {
      if (started) flush();
      started = true;
      continue;
    }
    block.push_back(line);
  }
  if (started) flush();
  return out;
}

// The Symbolizer's answer in the same shape.
inline std::vector<ExpectedFrame> AsFrames(const Symbolization& s) {
  std::vector<ExpectedFrame> frames;
  for (const SymbolFrame& frame : s.frames) {
    frames.push_back({frame.function.empty() ? "??" : frame.function, frame.Location()});
  }
  if (frames.empty()) frames.push_back({"??", "??:0"});
  return frames;
}

inline std::string Describe(const std::vector<ExpectedFrame>& frames) {
  std::string out;
  for (const ExpectedFrame& frame : frames) out += "\n    " + frame.function + " @ " + frame.location;
  return out;
}

}  // namespace looptrace::symbols::test_util
