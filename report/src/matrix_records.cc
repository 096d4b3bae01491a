// The JSON records of a Matrix issues report (json_records.h): each issue with Matrix's own
// keys first (those looptrace does not model kept as written), then the fleet's groups, FPS
// scenes, startup distributions and the data quality.
#include <fmt/format.h>

#include "looptrace/report/json_records.h"

namespace looptrace {
namespace {

using nlohmann::json;

json CostJson(const MatrixCostSummary& c) {
  return json{
      {"count", c.count}, {"p50_ms", c.p50_ms}, {"p90_ms", c.p90_ms}, {"p99_ms", c.p99_ms}, {"max_ms", c.max_ms}};
}

json TallyJson(const MatrixTally& tally) {
  json out = json::array();
  for (const auto& [value, count] : tally) out.push_back({{"value", value}, {"count", count}});
  return out;
}

json DropJson(const auto& values) {
  json out = json::object();
  for (size_t i = 0; i < kMatrixDropLevelCount; ++i) out[kMatrixDropLevels[i]] = values[i];
  return out;
}

json OptionalJson(const auto& value) { return value ? json(*value) : json(nullptr); }

}  // namespace

std::string MatrixStackString(const std::vector<NamedCallNode>& tree) {
  std::string out;
  for (const NamedCallNode& n : tree)
    out += fmt::format("{},{},{},{}\n", n.node.depth, n.node.id, n.node.count, n.node.cost_ns / 1'000'000);
  return out;
}

json MatrixIssueJson(const MatrixIssue& issue) {
  json j = json::object();
  if (!issue.other_json.empty()) {
    json other = json::parse(issue.other_json, nullptr, false);
    if (other.is_object()) j = std::move(other);
  }
  j["type"] = "matrix_issue";
  j["tag"] = issue.tag;
  j["category"] = std::string(issue.Category());
  j["source"] = issue.source;
  j["process"] = issue.process;
  j["time"] = OptionalJson(issue.time_ms);
  if (!issue.machine.empty()) j["machine"] = issue.machine;
  if (!issue.device.empty()) j["device"] = issue.device;
  if (!issue.app_version.empty()) j["app_version"] = issue.app_version;
  if (!issue.detail.empty()) j["detail"] = issue.detail;
  if (!issue.scene.empty() || issue.tag != "Trace_StartUp") j["scene"] = issue.scene;
  if (issue.cost_ms) j["cost"] = *issue.cost_ms;
  if (issue.tag == "Trace_EvilMethod") {
    j["stack"] = MatrixStackString(issue.tree);
    j["stackKey"] = issue.stack_key;
    j["stack_key_name"] = issue.stack_key_name;
    j["tree"] = CallTreeJson(issue.tree);
  }
  if (!issue.thread_stack.empty()) j["thread_stack"] = issue.thread_stack;
  if (issue.tag == "Trace_FPS") {
    j["fps"] = OptionalJson(issue.fps);
    j["dropLevel"] = DropJson(issue.drop_level);
    j["dropSum"] = DropJson(issue.drop_sum);
  }
  if (issue.tag == "Trace_StartUp") {
    j["application_create"] = OptionalJson(issue.application_create_ms);
    j["application_create_scene"] = issue.application_create_scene;
    j["first_activity_create"] = OptionalJson(issue.first_activity_create_ms);
    j["startup_duration"] = OptionalJson(issue.startup_duration_ms);
    j["is_warm_start_up"] = OptionalJson(issue.warm);
  }
  j["content_hash"] = fmt::format("{:016x}", issue.content_hash);
  return j;
}

json MatrixGroupJson(const MatrixIssueGroup& g) {
  json j{{"type", "matrix_group"},
         {"category", g.category},
         {"key", g.key},
         {"name", g.name},
         {"issues", g.issues},
         {"cost", CostJson(g.cost)},
         {"details", TallyJson(g.details)},
         {"scenes", TallyJson(g.scenes)},
         {"processes", TallyJson(g.processes)},
         {"devices", TallyJson(g.devices)},
         {"app_versions", TallyJson(g.app_versions)},
         {"first_time", OptionalJson(g.first_time_ms)},
         {"last_time", OptionalJson(g.last_time_ms)},
         {"representative_source", g.representative_source},
         {"representative_tree", CallTreeJson(g.representative)},
         {"merged_tree", CallTreeJson(g.merged)}};
  if (!g.representative_thread_stack.empty()) j["representative_thread_stack"] = g.representative_thread_stack;
  return j;
}

void ForEachMatrixRecord(const MatrixIssuesReport& m, const std::function<void(const json&)>& emit) {
  emit(json{{"type", "matrix_input"},
            {"inputs", m.inputs},
            {"issues", m.issues},
            {"duplicates", m.duplicates},
            {"not_listed", m.not_listed},
            {"keep_issues", m.keep_limit},
            {"by_category", m.by_category}});
  for (const MatrixIssue& issue : m.listed) emit(MatrixIssueJson(issue));
  for (const MatrixIssueGroup& g : m.groups) emit(MatrixGroupJson(g));
  for (const MatrixFpsScene& s : m.fps_scenes) {
    json devices = json::array();
    for (const auto& [device, fps] : s.worst_devices) devices.push_back({{"device", device}, {"fps", fps}});
    emit(json{{"type", "matrix_fps_scene"},
              {"scene", s.scene},
              {"reports", s.reports},
              {"frames", s.frames},
              {"fps", s.mean_fps},
              {"worst_fps", s.worst_fps},
              {"dropLevel", DropJson(s.drop_level)},
              {"dropSum", DropJson(s.drop_sum)},
              {"worst_devices", devices}});
  }
  const MatrixStartupSummary& s = m.startup;
  if (s.cold.count || s.warm.count)
    emit(json{{"type", "matrix_startup"},
              {"cold", CostJson(s.cold)},
              {"warm", CostJson(s.warm)},
              {"application_create", CostJson(s.application_create)},
              {"first_activity_create", CostJson(s.first_activity_create)},
              {"application_create_scenes", TallyJson(s.scenes)}});
  json warnings = json::array();
  for (const MatrixWarning& w : m.warnings)
    warnings.push_back({{"name", w.name},
                        {"count", w.count},
                        {"description", std::string(MatrixWarningDescription(w.name))},
                        {"first", w.first}});
  emit(json{{"type", "matrix_data_quality"}, {"warnings", warnings}});
}

}  // namespace looptrace
