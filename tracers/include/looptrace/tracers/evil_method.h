// EvilMethod: a message costing at least the threshold (Matrix: 700 ms) is reported with
// the call tree of its method beats, trimmed like Matrix, plus its stackKey.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/report.h"
#include "looptrace/tracers/stats.h"

namespace looptrace {

// Names methods in reports (e.g. from a Matrix methodMapping.txt); implemented outside
// tracers/ and injected.
class MethodNamer {
 public:
  virtual ~MethodNamer() = default;
  virtual std::optional<std::string> Name(MethodIdKind kind, uint64_t id) const = 0;
};

// A method's display name: the loader's names in `beats`, then `namer`, else "method#ID" or
// a hex address (counted in method_names_unknown).
std::string NameMethod(const MethodNamer* namer, const MethodBeats* beats, uint64_t id, Stats* stats);

struct EvilMethodOptions {
  uint64_t threshold_ns = 700'000'000;  // Matrix DEFAULT_EVIL_METHOD_THRESHOLD_MS
  size_t max_nodes = 30;                // Matrix TARGET_EVIL_METHOD_STACK
  bool matrix_compat = false;           // reproduce Matrix's algorithm exactly (ms, quirks)
  CallTreeOptions tree;
};

class EvilMethodTracer {
 public:
  EvilMethodTracer(EvilMethodOptions options, Stats* stats, const MethodNamer* namer);

  void OnBeats(const MethodBeats& beats);
  void OnMessage(const Message& message, const std::string& process);
  std::vector<EvilMethodReport> TakeReports() { return std::move(reports_); }

 private:
  std::string NameOf(const MethodBeats* beats, uint64_t id);

  EvilMethodOptions options_;
  Stats* stats_;
  const MethodNamer* namer_;
  std::map<uint32_t, MethodBeats> pending_;  // latest beats per thread, waiting for the end
  std::vector<EvilMethodReport> reports_;
};

}  // namespace looptrace
