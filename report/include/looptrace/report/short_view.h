// The default text report's view of a report (issue 30 item 12): the report cut to what a
// person reads first, as data, every cut counted so that the report's last line can name
// what -v/--full (or --html) adds. The renderers draw the cut report like any other;
// nothing here formats a line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/report/report.h"

namespace looptrace {

struct ShortViewLimits {
  size_t names = 5;              // "messages by name" rows
  size_t trees = 3;              // evil methods shown, the slowest ones, with their trees
  double min_node_share = 0.05;  // tree nodes costing less than this share of the root are cut
  size_t stalls = 2;             // stall snapshots, each with the stalled thread alone
  size_t stack_frames = 8;       // the stalled thread's native frames shown
  size_t off_cpu = 3;            // a stall's longest off-CPU intervals shown
  size_t worst_frames = 3;       // frames with their trees
  size_t span_lags = 3;          // idle/input lags, barrier leaks, warm starts, unfinished messages
  size_t common_frames = 2;      // of "every stack ran under"
  size_t profile_threads = 3;    // threads of a session without messages, with their trees
  size_t profile_methods = 5;    // each one's top methods
};

// The walks that ended early, over every sampled tree of the report, and what
// --dwarf-unwind would complete: the short report's first hint.
struct IncompleteStacks {
  uint64_t total = 0;
  uint64_t fixable = 0;                                   // ended in a module without frame pointers
  std::vector<std::string> modules;                       // those modules, in the order met
  std::vector<std::pair<std::string, uint64_t>> reasons;  // why walks ended, with their samples
  bool dwarf = false;                                     // the trees were DWARF-unwound already
};

struct ShortView {
  Report report;  // the cut report
  // What was left out, one entry a kind ("4 more evil methods"), in report order.
  std::vector<std::string> cuts;
  size_t evil_methods_total = 0;  // before the cut
  IncompleteStacks incomplete;
  // Nothing wrong with the data (no loss, no error, every stack complete): the data
  // quality fits one line.
  bool quality_complete = true;
};

// `top_n` is the rows the full report shows in its tables (RenderOptions::top_n), so a
// table's cut counts only the rows --full would add.
ShortView MakeShortView(const Report& report, size_t top_n, const ShortViewLimits& limits = {});

// Pre-order call trees trimmed: every node (and its subtree) costing less than `share` of
// the costliest node goes, and one node "N smaller frames" at the end of each parent's kept
// children stands for those cut under that parent (their cost, samples and CPU summed).
// Returns the nodes cut.
size_t TrimTree(std::vector<NamedCallNode>& tree, double share);
size_t TrimTree(std::vector<SampledNode>& tree, double share);

}  // namespace looptrace
