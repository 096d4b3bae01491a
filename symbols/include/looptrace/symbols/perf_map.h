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
};

// Parses map lines, appending entries to `out`; malformed lines (no hex start, no size, a
// zero size, no name, an end past 2^64) are skipped and counted in *malformed.
void ParsePerfMap(std::string_view text, std::vector<PerfMapEntry>* out, size_t* malformed);

// A target's perf map, re-read when it grows (appended lines are parsed alone) or is
// rewritten. A later line for the same start replaces an earlier one (code recompiled in
// place).
class PerfMap {
 public:
  // `path`: the map file (see PerfMapPath).
  explicit PerfMap(std::string path) : path_(std::move(path)) {}

  // Reads what is new in the file. Cheap when nothing changed (one stat).
  void Refresh();
  // The name of the entry covering `address`, or null.
  const std::string* Lookup(uint64_t address) const;

  size_t size() const { return entries_.size(); }
  size_t malformed_lines() const { return malformed_; }
  const std::string& path() const { return path_; }

 private:
  void Sort();

  std::string path_;
  std::vector<PerfMapEntry> entries_;  // sorted by start, unique starts
  uint64_t read_offset_ = 0;           // bytes parsed (whole lines)
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
