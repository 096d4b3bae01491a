// JIT code symbols from a perf map, /tmp/perf-PID.map: one "START SIZE NAME" line per
// compiled method (hex START and SIZE, optional 0x; NAME may contain spaces), the
// convention perf and bpftrace read. The JVM writes it with -XX:+DumpPerfMapAtExit or
// `jcmd PID Compiler.perfmap`, Node.js with --perf-basic-prof (appending as it compiles).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace looptrace::symbols {

struct PerfMapEntry {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;
  // Filled by PerfMap: the line's place in the file (later lines are newer) and the time
  // (CLOCK_MONOTONIC ns) of the read before the one that found it: the line was written
  // after that, so code sampled earlier was not this method yet.
  uint64_t sequence = 0;
  uint64_t written_after_ns = 0;
};

// Parses map lines, appending entries to `out`; malformed lines (no hex start, no size, a
// zero size, no name, an end past 2^64) are skipped and counted in *malformed.
void ParsePerfMap(std::string_view text, std::vector<PerfMapEntry>* out, size_t* malformed);

// A target's perf map, re-read when it grows (appended lines are parsed alone) or is
// rewritten. A JIT reuses the addresses of code it freed, so entries may overlap: the lines
// are kept (the last 4 at any one start), and the newest one covering an address at the
// sample's time names it (Node's --perf-basic-prof appends a line for each method compiled
// into memory an older one held).
class PerfMap {
 public:
  static constexpr uint64_t kNow = UINT64_MAX;

  // `path`: the map file (see PerfMapPath).
  explicit PerfMap(std::string path) : path_(std::move(path)) {}

  // Reads what is new in the file; `now_ns` (CLOCK_MONOTONIC) is when, for the lines' ages.
  // Cheap when nothing changed (one stat).
  void Refresh(uint64_t now_ns);
  // When Refresh last looked at the file (0: never).
  uint64_t checked_at_ns() const { return checked_at_ns_; }
  // The name of the newest entry covering `address` that was written before `at_ns` (the
  // sample's CLOCK_MONOTONIC time; kNow for code running now); if every covering entry was
  // written later, the oldest of them. Null when none covers it.
  const std::string* Lookup(uint64_t address, uint64_t at_ns = kNow) const;

  size_t size() const { return entries_.size(); }
  size_t malformed_lines() const { return malformed_; }
  const std::string& path() const { return path_; }

 private:
  void MergeNew(size_t first_new);

  std::string path_;
  std::vector<PerfMapEntry> entries_;  // sorted by (start, sequence)
  uint64_t longest_ = 0;               // the largest size, how far back a lookup looks
  uint64_t next_sequence_ = 0;
  uint64_t checked_at_ns_ = 0;
  uint64_t read_offset_ = 0;  // bytes parsed (whole lines)
  uint64_t inode_ = 0;
  int64_t mtime_ns_ = 0;
  uint64_t size_ = 0;
  size_t malformed_ = 0;
  std::string head_;  // the first bytes read, to tell a rewrite from an append
};

// Where process `pid` writes its perf map, as seen from here: /proc/PID/root/tmp/perf-N.map,
// N being the pid in the process's own pid namespace (the last NSpid of its status).
std::string PerfMapPath(pid_t pid);

}  // namespace looptrace::symbols
