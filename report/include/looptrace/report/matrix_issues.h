// Issues the Tencent Matrix SDK reports on phones (PluginListener.onReportIssue), read back
// as report data: each issue's `stack` rebuilt into looptrace's call-tree model, and a fleet's
// issues grouped (slow methods and ANRs by stackKey, FPS by scene, startup distributions).
// The loader reads and names them (loader/session/matrix_input.h); the renderers project
// this section like any other. Keys and kinds: docs/matrix-algorithms.md, Matrix's
// SharePluginInfo and Constants.Type.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "looptrace/report/call_tree.h"

namespace looptrace {

// Matrix's FPS buckets (FrameTracer.DropStatus), in the order reports list them.
inline constexpr const char* kMatrixDropLevels[] = {"DROPPED_BEST", "DROPPED_NORMAL", "DROPPED_MIDDLE", "DROPPED_HIGH",
                                                    "DROPPED_FROZEN"};
inline constexpr size_t kMatrixDropLevelCount = 5;

// One issue as Matrix wrote it, its `stack` rebuilt and named.
struct MatrixIssue {
  std::string source;  // "FILE:LINE" where it was read
  std::string tag;     // Trace_EvilMethod | Trace_FPS | Trace_StartUp
  std::string detail;  // Constants.Type: NORMAL, ANR, LAG, STARTUP, SIGNAL_ANR, ... ("" for FPS/startup)
  std::string process;
  std::string scene;
  std::string machine;      // the device level (BEST ... UN_KNOW)
  std::string device;       // a model, where the app's listener added one
  std::string app_version;  // where the app's listener added one
  std::optional<int64_t> time_ms;
  std::optional<int64_t> cost_ms;
  std::string stack_key;                  // as written, "121|"
  std::string stack_key_name;             // the method it names ("" when unknown)
  std::vector<NamedCallNode> tree;        // from `stack` (cost in ns = Matrix's ms * 1e6)
  std::vector<std::string> thread_stack;  // `threadStack`, one frame a line, named
  // Trace_FPS
  std::optional<double> fps;
  int64_t drop_level[kMatrixDropLevelCount] = {};
  double drop_sum[kMatrixDropLevelCount] = {};
  // Trace_StartUp
  std::optional<int64_t> application_create_ms, first_activity_create_ms, startup_duration_ms;
  std::optional<bool> warm;
  std::string application_create_scene;
  // Every other key, kept as written (device block, memory, priorities, keys of newer SDKs):
  // a JSON object's text, "" for none.
  std::string other_json;
  uint64_t content_hash = 0;  // identity for de-duplication (the same issue sent twice)

  // "slow_method", "anr", "lag", "startup_stack", "thread_priority", "fps", "startup", "other".
  std::string_view Category() const;
};

// Nearest-rank figures over costs in ms.
struct MatrixCostSummary {
  uint64_t count = 0;
  int64_t p50_ms = 0;
  int64_t p90_ms = 0;
  int64_t p99_ms = 0;
  int64_t max_ms = 0;
};
// Sorts `costs_ms` in place.
MatrixCostSummary SummarizeMatrixCosts(std::vector<int64_t>* costs_ms);

// Values with how many issues had each, most first (ties by value), at most a few.
using MatrixTally = std::vector<std::pair<std::string, uint64_t>>;

// The issues of one category sharing a signature: the stackKey's method, or for issues with
// only a thread stack (LAG, SIGNAL_ANR) its first frame from the app's own code.
struct MatrixIssueGroup {
  std::string category;
  std::string key;   // the stackKey ("121|") or "thread:FRAME"
  std::string name;  // what it names
  uint64_t issues = 0;
  MatrixCostSummary cost;  // over the issues with a cost (LAG and SIGNAL_ANR have none)
  MatrixTally details, scenes, processes, devices, app_versions;
  std::optional<int64_t> first_time_ms, last_time_ms;
  std::string representative_source;          // the costliest issue
  std::vector<NamedCallNode> representative;  // its tree
  std::vector<std::string> representative_thread_stack;
  std::vector<NamedCallNode> merged;  // every issue's tree merged by call path (costs summed,
                                      // count = calls), pre-order, children by cost
};

struct MatrixFpsScene {
  std::string scene;
  uint64_t reports = 0;
  uint64_t frames = 0;   // sum of the dropLevel counts
  double mean_fps = 0;   // weighted by frames
  double worst_fps = 0;  // the lowest report's
  int64_t drop_level[kMatrixDropLevelCount] = {};
  double drop_sum[kMatrixDropLevelCount] = {};
  std::vector<std::pair<std::string, double>> worst_devices;  // device -> mean fps, lowest first
};

struct MatrixStartupSummary {
  MatrixCostSummary cold, warm;                                 // startup_duration
  MatrixCostSummary application_create, first_activity_create;  // cold starts
  MatrixTally scenes;                                           // application_create_scene
};

struct MatrixWarning {
  std::string name;
  uint64_t count = 0;
  std::string first;  // "FILE:LINE: what" of the first one
};

struct MatrixIssuesReport {
  bool enabled = false;  // the report was made from Matrix issues
  std::vector<std::string> inputs;
  uint64_t issues = 0;      // read and counted (duplicates not)
  uint64_t duplicates = 0;  // the same issue again (same content): counted once
  uint64_t not_listed = 0;  // beyond --keep-issues: grouped, not listed one by one
  size_t keep_limit = 0;
  std::map<std::string, uint64_t> by_category;
  std::vector<MatrixIssue> listed;         // in reading order
  std::vector<MatrixIssueGroup> groups;    // by category, then count (most first), then key
  std::vector<MatrixFpsScene> fps_scenes;  // most frames first
  MatrixStartupSummary startup;
  std::vector<MatrixWarning> warnings;  // data quality, by name
};

// What each warning means (the data-quality descriptions); "" for an unknown name.
std::string_view MatrixWarningDescription(std::string_view name);

// Deeper stack lines are skipped (and warned about): trees are walked recursively.
inline constexpr int64_t kMaxMatrixStackDepth = 512;

// Rebuilds a `stack` string ("depth,methodId,count,cost\n" lines, TraceDataUtils) as a
// pre-order tree of unnamed nodes. Problems go to `warn(name, detail)`: a line that is not
// four integers is skipped (matrix_stack_bad_line); a depth that does not follow its
// predecessor (the first not 0, or more than one deeper) is clamped, one deeper than
// kMaxMatrixStackDepth skipped (matrix_stack_bad_depth).
template <typename Warn>
std::vector<NamedCallNode> ParseMatrixStack(std::string_view stack, Warn&& warn);

// Accumulates issues in bounded memory: the first `keep_limit` are listed, all are grouped.
class MatrixFleetBuilder {
 public:
  explicit MatrixFleetBuilder(size_t keep_limit = 200) { report_.keep_limit = keep_limit; }

  // False (and counted as a duplicate) when an issue with the same content came before.
  bool Add(MatrixIssue issue);
  void Warn(std::string_view name, std::string_view where_and_what);
  void AddInput(std::string name) { report_.inputs.push_back(std::move(name)); }
  // Called with every issue counted (not the duplicates), listed or not: for exporters.
  void set_on_issue(std::function<void(const MatrixIssue&)> on_issue) { on_issue_ = std::move(on_issue); }
  MatrixIssuesReport Finish();

 private:
  struct MergedNode {
    uint64_t id = 0;
    std::string name;
    uint64_t cost_ns = 0;
    uint32_t count = 0;
    // (id, index) sorted by id: found by a binary search that touches only this vector.
    std::vector<std::pair<uint64_t, uint32_t>> children;
  };
  struct Group {
    MatrixIssueGroup out;
    std::vector<int64_t> costs_ms;
    std::unordered_map<std::string, uint64_t> details, scenes, processes, devices, app_versions;
    int64_t representative_cost = -1;
    std::vector<MergedNode> merged;  // [0] = the root
  };
  struct FpsScene {
    MatrixFpsScene out;
    double fps_frames = 0;                                                 // sum of fps * frames
    std::unordered_map<std::string, std::pair<double, uint64_t>> devices;  // fps * frames, frames
  };
  void AddToGroup(const MatrixIssue& issue);
  void AddFps(const MatrixIssue& issue);
  void AddStartup(const MatrixIssue& issue);

  MatrixIssuesReport report_;
  std::function<void(const MatrixIssue&)> on_issue_;
  std::unordered_set<uint64_t> seen_;
  std::unordered_map<std::string, Group> groups_;
  std::string group_key_;             // AddToGroup's lookup key, reused
  std::vector<uint32_t> merge_path_;  // AddToGroup's open nodes by depth, reused
  std::unordered_map<std::string, FpsScene> fps_;
  std::vector<int64_t> cold_, warm_, app_create_, first_activity_;
  std::unordered_map<std::string, uint64_t> startup_scenes_;
  std::map<std::string, MatrixWarning> warnings_;
};

// The signature an issue is grouped by (MatrixIssueGroup::key) and what it names.
std::pair<std::string, std::string> MatrixGroupKey(const MatrixIssue& issue);

// FNV-1a over the issue's identifying content (kept in MatrixIssue::content_hash).
uint64_t MatrixContentHash(const MatrixIssue& issue);

// ---- template implementation ----

namespace matrix_detail {
bool ParseStackLine(std::string_view line, int64_t fields[4]);
}

template <typename Warn>
std::vector<NamedCallNode> ParseMatrixStack(std::string_view stack, Warn&& warn) {
  std::vector<NamedCallNode> tree;
  size_t pos = 0;
  while (pos < stack.size()) {
    size_t end = stack.find('\n', pos);
    if (end == std::string_view::npos) end = stack.size();
    std::string_view line = stack.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\r'))
      line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    int64_t f[4];
    if (!matrix_detail::ParseStackLine(line, f)) {
      warn("matrix_stack_bad_line", line);
      continue;
    }
    int64_t depth = f[0];
    if (depth > kMaxMatrixStackDepth) {  // Matrix keeps 30 nodes: a hostile stack, not a deep one
      warn("matrix_stack_bad_depth", line);
      continue;
    }
    const int64_t limit = tree.empty() ? 0 : static_cast<int64_t>(tree.back().node.depth) + 1;
    if (depth > limit || (tree.empty() && depth != 0)) {
      warn("matrix_stack_bad_depth", line);
      depth = limit;
    }
    NamedCallNode n;
    n.node.depth = static_cast<uint32_t>(depth);
    n.node.id = static_cast<uint64_t>(f[1]);
    n.node.count = static_cast<uint32_t>(f[2]);
    n.node.cost_ns = static_cast<uint64_t>(f[3]) * 1'000'000;
    tree.push_back(std::move(n));
  }
  return tree;
}

}  // namespace looptrace
