#include "looptrace/report/matrix_issues.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace looptrace {
namespace {

constexpr size_t kTallyRows = 5;
constexpr size_t kWorstDevices = 3;
// Nodes of one group's merged tree: its memory stays bounded whatever the fleet sends.
constexpr size_t kMaxMergedNodes = 20000;

MatrixTally Tally(const std::unordered_map<std::string, uint64_t>& counts) {
  MatrixTally out(counts.begin(), counts.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (out.size() > kTallyRows) out.resize(kTallyRows);
  return out;
}

void Count(std::unordered_map<std::string, uint64_t>* counts, const std::string& value) {
  if (!value.empty()) ++(*counts)[value];
}

// Frames of the platform and of libraries every app shares: not what a group is named by.
bool IsPlatformFrame(std::string_view frame) {
  for (std::string_view prefix : {"java.", "javax.", "android.", "androidx.", "dalvik.", "com.android.", "kotlin.",
                                  "kotlinx.", "sun.", "libcore.", "com.tencent.matrix."})
    if (frame.starts_with(prefix)) return true;
  return false;
}

void Fnv(uint64_t* hash, std::string_view text) {
  for (unsigned char c : text) {
    *hash ^= c;
    *hash *= 0x100000001b3ULL;
  }
  *hash ^= 0xff;  // field separator: "ab","c" differs from "a","bc"
  *hash *= 0x100000001b3ULL;
}

void FnvNumber(uint64_t* hash, uint64_t value) {
  Fnv(hash, std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}

// Pre-order output of a merged tree, children by cost (costliest first).
void FlattenMerged(const auto& nodes, uint32_t index, uint32_t depth, std::vector<NamedCallNode>* out) {
  const auto& n = nodes[index];
  NamedCallNode named;
  named.node.id = n.id;
  named.node.depth = depth;
  named.node.count = n.count;
  named.node.cost_ns = n.cost_ns;
  named.name = n.name;
  out->push_back(std::move(named));
  std::vector<uint32_t> children;
  children.reserve(n.children.size());
  for (const auto& [id, child] : n.children) children.push_back(child);
  std::stable_sort(children.begin(), children.end(),
                   [&](uint32_t a, uint32_t b) { return nodes[a].cost_ns > nodes[b].cost_ns; });
  for (uint32_t child : children) FlattenMerged(nodes, child, depth + 1, out);
}

}  // namespace

namespace matrix_detail {
bool ParseStackLine(std::string_view line, int64_t fields[4]) {
  const char* p = line.data();
  const char* end = line.data() + line.size();
  for (int i = 0; i < 4; ++i) {
    while (p < end && *p == ' ') ++p;
    auto [next, ec] = std::from_chars(p, end, fields[i]);
    if (ec != std::errc() || fields[i] < 0) return false;
    p = next;
    while (p < end && *p == ' ') ++p;
    if (i < 3) {
      if (p == end || *p != ',') return false;
      ++p;
    }
  }
  return p == end && fields[1] <= 0xFFFFFFFFLL && fields[2] <= 0xFFFFFFFFLL;
}
}  // namespace matrix_detail

std::string_view MatrixIssue::Category() const {
  if (tag == "Trace_FPS") return "fps";
  if (tag == "Trace_StartUp") return "startup";
  if (tag != "Trace_EvilMethod") return "other";
  if (detail == "NORMAL" || detail.empty()) return "slow_method";
  if (detail.starts_with("SIGNAL_ANR") || detail == "ANR") return "anr";
  if (detail.starts_with("LAG")) return "lag";
  if (detail == "STARTUP") return "startup_stack";
  if (detail == "PRIORITY_MODIFIED" || detail == "TIMERSLACK_MODIFIED") return "thread_priority";
  return "other";
}

MatrixCostSummary SummarizeMatrixCosts(std::vector<int64_t>* costs) {
  MatrixCostSummary s;
  s.count = costs->size();
  if (costs->empty()) return s;
  std::sort(costs->begin(), costs->end());
  auto rank = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(costs->size()) + 0.999999);
    return (*costs)[std::clamp<size_t>(i, 1, costs->size()) - 1];
  };
  s.p50_ms = rank(0.5);
  s.p90_ms = rank(0.9);
  s.p99_ms = rank(0.99);
  s.max_ms = costs->back();
  return s;
}

std::pair<std::string, std::string> MatrixGroupKey(const MatrixIssue& issue) {
  if (!issue.stack_key.empty()) return {issue.stack_key, issue.stack_key_name};
  for (const std::string& frame : issue.thread_stack)
    if (!IsPlatformFrame(frame)) return {"thread:" + frame, frame};
  if (!issue.thread_stack.empty()) return {"thread:" + issue.thread_stack.front(), issue.thread_stack.front()};
  return {"", "(no stack)"};
}

// The text of fmt::format(format, args...) hashed with Fnv, formatted on the stack: the
// hash is the one earlier versions stored (ClickHouse ingests stay idempotent), without an
// allocation per field.
template <typename... Args>
void FnvFormatted(uint64_t* hash, fmt::format_string<Args...> format, Args&&... args) {
  char buffer[128];
  const auto written = fmt::format_to_n(buffer, sizeof buffer, format, std::forward<Args>(args)...);
  if (written.size <= sizeof buffer)
    Fnv(hash, std::string_view(buffer, written.size));
  else
    Fnv(hash, fmt::format(format, std::forward<Args>(args)...));
}

// FnvFormatted(hash, "{}", value) for an integer, without fmt's format parsing.
void FnvInteger(uint64_t* hash, int64_t value) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  Fnv(hash, std::string_view(buffer, static_cast<size_t>(end - buffer)));
}

uint64_t MatrixContentHash(const MatrixIssue& issue) {
  uint64_t h = 0xcbf29ce484222325ULL;
  Fnv(&h, issue.tag);
  Fnv(&h, issue.detail);
  Fnv(&h, issue.process);
  Fnv(&h, issue.scene);
  if (issue.time_ms)
    FnvInteger(&h, *issue.time_ms);
  else
    Fnv(&h, "-");
  if (issue.cost_ms)
    FnvInteger(&h, *issue.cost_ms);
  else
    Fnv(&h, "-");
  Fnv(&h, issue.stack_key);
  for (const NamedCallNode& n : issue.tree) {  // per call: formatting them cost more than reading the issue
    FnvNumber(&h, (uint64_t{n.node.depth} << 32) | n.node.count);
    FnvNumber(&h, n.node.id);
    FnvNumber(&h, n.node.cost_ns);
  }
  for (const std::string& frame : issue.thread_stack) Fnv(&h, frame);
  if (issue.fps) FnvFormatted(&h, "{}", *issue.fps);
  for (size_t i = 0; i < kMatrixDropLevelCount; ++i) {
    if (issue.drop_level[i] == 0 && issue.drop_sum[i] == 0 && !std::signbit(issue.drop_sum[i]))
      Fnv(&h, "0/0");  // what the format gives, for the issues that are not FPS
    else
      FnvFormatted(&h, "{}/{}", issue.drop_level[i], issue.drop_sum[i]);
  }
  if (!issue.application_create_ms && !issue.first_activity_create_ms && !issue.startup_duration_ms && !issue.warm)
    Fnv(&h, "-1/-1/-1/-1");  // likewise, for the issues that are not startups
  else
    FnvFormatted(&h, "{}/{}/{}/{}", issue.application_create_ms.value_or(-1),
                 issue.first_activity_create_ms.value_or(-1), issue.startup_duration_ms.value_or(-1),
                 issue.warm.has_value() ? int(*issue.warm) : -1);
  Fnv(&h, issue.other_json);
  return h;
}

bool MatrixFleetBuilder::Add(MatrixIssue issue) {
  if (!issue.content_hash) issue.content_hash = MatrixContentHash(issue);
  if (!seen_.insert(issue.content_hash).second) {
    ++report_.duplicates;
    return false;
  }
  ++report_.issues;
  if (on_issue_) on_issue_(issue);
  ++report_.by_category[std::string(issue.Category())];
  const std::string_view category = issue.Category();
  if (category == "fps")
    AddFps(issue);
  else if (category == "startup")
    AddStartup(issue);
  else
    AddToGroup(issue);
  if (report_.listed.size() < report_.keep_limit)
    report_.listed.push_back(std::move(issue));
  else
    ++report_.not_listed;
  return true;
}

void MatrixFleetBuilder::Warn(std::string_view name, std::string_view where_and_what) {
  auto [it, inserted] = warnings_.try_emplace(std::string(name));
  if (inserted) {
    it->second.name = name;
    it->second.first = std::string(where_and_what.substr(0, 300));
  }
  ++it->second.count;
}

void MatrixFleetBuilder::AddToGroup(const MatrixIssue& issue) {
  auto [key, name] = MatrixGroupKey(issue);
  group_key_.assign(issue.Category());  // a member: no allocation per issue to look a group up
  group_key_.push_back('\n');
  group_key_.append(key);
  auto it = groups_.find(group_key_);
  if (it == groups_.end()) {
    it = groups_.try_emplace(group_key_).first;
    Group& fresh = it->second;
    fresh.out.category = issue.Category();
    fresh.out.key = std::move(key);
    fresh.out.name = std::move(name);
    fresh.merged.push_back({});
  }
  Group& g = it->second;
  const int64_t cost = issue.cost_ms.value_or(0);
  ++g.out.issues;
  if (issue.cost_ms) g.costs_ms.push_back(cost);
  Count(&g.details, issue.detail);
  Count(&g.scenes, issue.scene);
  Count(&g.processes, issue.process);
  Count(&g.devices, issue.device.empty() ? issue.machine : issue.device);
  Count(&g.app_versions, issue.app_version);
  if (issue.time_ms) {
    g.out.first_time_ms = std::min(g.out.first_time_ms.value_or(*issue.time_ms), *issue.time_ms);
    g.out.last_time_ms = std::max(g.out.last_time_ms.value_or(*issue.time_ms), *issue.time_ms);
  }
  if (cost > g.representative_cost) {
    g.representative_cost = cost;
    g.out.representative_source = issue.source;
    g.out.representative = issue.tree;
    g.out.representative_thread_stack = issue.thread_stack;
  }
  // Merge by call path: `path[d]` is the merged node of the issue's open node at depth d.
  // Children stay sorted by id (found by binary search: a fleet's group may have thousands).
  std::vector<uint32_t>& path = merge_path_;
  path.clear();
  uint32_t skip_below = UINT32_MAX;  // the depth of a node left out: its subtree goes too
  for (const NamedCallNode& n : issue.tree) {
    if (n.node.depth > skip_below) continue;
    skip_below = UINT32_MAX;
    path.resize(n.node.depth);
    const uint32_t parent = path.empty() ? 0 : path.back();
    auto& children = g.merged[parent].children;
    auto at = std::lower_bound(children.begin(), children.end(), n.node.id,
                               [](const auto& child, uint64_t id) { return child.first < id; });
    uint32_t found = 0;
    if (at != children.end() && at->first == n.node.id) {
      found = at->second;
    } else if (g.merged.size() >= kMaxMergedNodes) {
      Warn("matrix_merged_tree_capped", fmt::format("{}: group {}", issue.source, g.out.key));
      skip_below = n.node.depth;
      continue;
    } else {
      found = static_cast<uint32_t>(g.merged.size());
      children.insert(at, {n.node.id, found});
      g.merged.push_back({n.node.id, n.name, 0, 0, {}});
    }
    g.merged[found].cost_ns += n.node.cost_ns;
    g.merged[found].count += n.node.count;
    path.push_back(found);
  }
}

void MatrixFleetBuilder::AddFps(const MatrixIssue& issue) {
  FpsScene& s = fps_[issue.scene];
  s.out.scene = issue.scene;
  ++s.out.reports;
  uint64_t frames = 0;
  for (size_t i = 0; i < kMatrixDropLevelCount; ++i) {
    s.out.drop_level[i] += issue.drop_level[i];
    s.out.drop_sum[i] += issue.drop_sum[i];
    frames += static_cast<uint64_t>(std::max<int64_t>(0, issue.drop_level[i]));
  }
  s.out.frames += frames;
  if (issue.fps) {
    const double weight = static_cast<double>(std::max<uint64_t>(frames, 1));
    s.fps_frames += *issue.fps * weight;
    s.out.mean_fps += weight;  // the weights' sum until Finish divides
    s.out.worst_fps = s.out.reports == 1 || *issue.fps < s.out.worst_fps ? *issue.fps : s.out.worst_fps;
    auto& device = s.devices[issue.device.empty() ? issue.machine : issue.device];
    device.first += *issue.fps * weight;
    device.second += static_cast<uint64_t>(weight);
  }
}

void MatrixFleetBuilder::AddStartup(const MatrixIssue& issue) {
  if (!issue.startup_duration_ms) return;
  if (issue.warm.value_or(false)) {
    warm_.push_back(*issue.startup_duration_ms);
    return;
  }
  cold_.push_back(*issue.startup_duration_ms);
  if (issue.application_create_ms) app_create_.push_back(*issue.application_create_ms);
  if (issue.first_activity_create_ms) first_activity_.push_back(*issue.first_activity_create_ms);
  Count(&startup_scenes_, issue.application_create_scene);
}

MatrixIssuesReport MatrixFleetBuilder::Finish() {
  report_.enabled = true;
  for (auto& [key, g] : groups_) {
    g.out.cost = SummarizeMatrixCosts(&g.costs_ms);
    g.out.details = Tally(g.details);
    g.out.scenes = Tally(g.scenes);
    g.out.processes = Tally(g.processes);
    g.out.devices = Tally(g.devices);
    g.out.app_versions = Tally(g.app_versions);
    // The merged root is a pseudo node above the issues' roots: its children are the trees.
    for (const auto& [id, root] : g.merged[0].children) FlattenMerged(g.merged, root, 0, &g.out.merged);
    report_.groups.push_back(std::move(g.out));
  }
  // What a team looks at first: slow methods, ANRs, lags, then the rarer kinds.
  auto rank = [](const std::string& category) {
    static const std::vector<std::string> kOrder = {"slow_method", "anr", "lag", "startup_stack", "thread_priority"};
    return std::find(kOrder.begin(), kOrder.end(), category) - kOrder.begin();
  };
  std::sort(report_.groups.begin(), report_.groups.end(), [&](const auto& a, const auto& b) {
    if (a.category != b.category) return rank(a.category) < rank(b.category);
    if (a.issues != b.issues) return a.issues > b.issues;
    if (a.cost.max_ms != b.cost.max_ms) return a.cost.max_ms > b.cost.max_ms;
    return a.key < b.key;
  });
  for (auto& [scene, s] : fps_) {
    s.out.mean_fps = s.out.mean_fps > 0 ? s.fps_frames / s.out.mean_fps : 0;
    for (const auto& [device, sums] : s.devices)
      if (!device.empty() && sums.second) s.out.worst_devices.emplace_back(device, sums.first / sums.second);
    std::sort(s.out.worst_devices.begin(), s.out.worst_devices.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second < b.second : a.first < b.first;
    });
    if (s.out.worst_devices.size() > kWorstDevices) s.out.worst_devices.resize(kWorstDevices);
    report_.fps_scenes.push_back(std::move(s.out));
  }
  std::sort(report_.fps_scenes.begin(), report_.fps_scenes.end(), [](const auto& a, const auto& b) {
    return a.frames != b.frames ? a.frames > b.frames : a.scene < b.scene;
  });
  report_.startup.cold = SummarizeMatrixCosts(&cold_);
  report_.startup.warm = SummarizeMatrixCosts(&warm_);
  report_.startup.application_create = SummarizeMatrixCosts(&app_create_);
  report_.startup.first_activity_create = SummarizeMatrixCosts(&first_activity_);
  report_.startup.scenes = Tally(startup_scenes_);
  for (auto& [name, w] : warnings_) report_.warnings.push_back(std::move(w));
  return std::move(report_);
}

std::string_view MatrixWarningDescription(std::string_view name) {
  static const std::map<std::string_view, std::string_view> kDescriptions = {
      {"matrix_not_json", "issues whose JSON does not parse (skipped)"},
      {"matrix_not_an_issue", "JSON values that are not issue objects, or issues of no known kind (skipped)"},
      {"matrix_other_plugin", "issues of other Matrix plugins (resource, IO, SQLite, battery: skipped)"},
      {"matrix_invalid_utf8", "issues with bytes that are not UTF-8 (read, those bytes shown as U+FFFD)"},
      {"matrix_issue_too_large", "issues larger than the size limit (skipped)"},
      {"matrix_field_bad_type", "fields of an unexpected type (that field ignored)"},
      {"matrix_stack_bad_line", "stack lines that are not depth,methodId,count,cost (that line skipped)"},
      {"matrix_stack_bad_depth", "stack lines deeper than their predecessor allows (placed one deeper)"},
      {"matrix_method_unnamed", "method ids the method mapping does not name"},
      {"matrix_logcat_unparsed", "Matrix logcat lines that looked like a report but did not parse"},
      {"matrix_truncated_input", "inputs that ended inside an issue or a compressed stream"},
      {"matrix_merged_tree_capped", "call paths left out of a group's merged tree (over 20,000 nodes)"},
      {"looptrace_records_skipped", "looptrace JSON records that are not Matrix issues (session, messages: skipped)"},
  };
  auto it = kDescriptions.find(name);
  return it == kDescriptions.end() ? std::string_view() : it->second;
}

}  // namespace looptrace
