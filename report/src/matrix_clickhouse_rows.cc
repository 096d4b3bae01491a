// Matrix issues as rows of looptrace's ClickHouse tables (clickhouse_rows.h): the columns
// Matrix has are filled, those it cannot know (thread ids, off-CPU reasons) are zero.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "looptrace/report/clickhouse_rows.h"
#include "looptrace/report/json_records.h"

namespace looptrace {
namespace {

using nlohmann::json;

constexpr uint64_t kMs = 1'000'000;

void TreeColumns(json& row, const std::vector<NamedCallNode>& tree) {
  json depth = json::array(), name = json::array(), count = json::array(), cost = json::array();
  for (const NamedCallNode& n : tree) {
    depth.push_back(n.node.depth);
    name.push_back(n.name);
    count.push_back(n.node.count);
    cost.push_back(n.node.cost_ns);
  }
  row["tree_depth"] = depth;
  row["tree_name"] = name;
  row["tree_count"] = count;
  row["tree_cost_ns"] = cost;
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

uint64_t CostNs(const std::optional<int64_t>& ms) { return ms && *ms > 0 ? static_cast<uint64_t>(*ms) * kMs : 0; }

}  // namespace

std::string MatrixSessionId(const MatrixIssue& issue) { return fmt::format("matrix:{:016x}", issue.content_hash); }

bool MatrixIssueRow(const MatrixIssue& issue, std::string* table, std::string* out) {
  const std::string_view category = issue.Category();
  if (category == "fps" || (category == "startup" && !issue.startup_duration_ms)) return false;
  const uint64_t wall_ns = issue.time_ms && *issue.time_ms > 0 ? static_cast<uint64_t>(*issue.time_ms) * kMs : 0;
  json row{{"host", issue.device.empty() ? issue.machine : issue.device},
           {"target", issue.process},
           {"pid", 0},
           {"session_id", MatrixSessionId(issue)},
           {"build", issue.app_version},
           {"time", wall_ns / 1'000'000'000},
           {"time_ns", wall_ns}};
  const uint64_t cost_ns = CostNs(issue.cost_ms);
  if (category == "startup") {
    const bool warm = issue.warm.value_or(false);
    const uint64_t total = CostNs(issue.startup_duration_ms);
    *table = "startups";
    row["kind"] = warm ? "warm" : "cold";
    row["scene"] = issue.application_create_scene;
    row["cost_ns"] = total;
    row["exec_to_app_create_ns"] = 0;
    row["application_create_ns"] = CostNs(issue.application_create_ms);
    row["first_screen_ns"] = CostNs(issue.first_activity_create_ms);
    row["cold_from_exec_ns"] = 0;
    row["ttid_ns"] = 0;
    row["ttfd_ns"] = 0;
    row["complete"] = 1;
    // Matrix's thresholds (warm 4 s, cold 10 s) and Android vitals' levels (warm 2 s, cold 5 s).
    row["over_threshold"] = total >= (warm ? 4000 : 10000) * kMs ? 1 : 0;
    row["excessive"] = total >= (warm ? 2000 : 5000) * kMs ? 1 : 0;
    row["missing"] = json::array();
    TreeColumns(row, {});
  } else if (category == "anr" || issue.detail == "LAG") {
    *table = "stalls";
    row["kind"] = Lower(issue.detail);
    row["tid"] = 0;
    row["msg_id"] = -1;
    row["name"] = "";
    row["threshold_ns"] = issue.detail == "ANR" ? 5000 * kMs : issue.detail == "LAG" ? 2000 * kMs : 0;
    row["cost_ns"] = cost_ns;
    row["finished"] = 0;
    row["cause"] = "";
    row["deadlock_cycle"] = json::array();
    row["stack_key"] = issue.stack_key;
    row["main_user_stack"] = issue.thread_stack;
    row["main_kernel_stack"] = json::array();
    row["off_cpu_reason"] = json::array();
    row["off_cpu_ns"] = json::array();
    row["on_cpu_ns"] = 0;
    row["scene"] = issue.scene;
    row["frame"] = "";
    row["sender_pid"] = 0;
    row["sender_comm"] = "";
    row["threads"] = 0;
    row["process_cpu_percent"] = 0.0;
    TreeColumns(row, issue.tree);
  } else if (category == "lag" || category == "thread_priority") {
    *table = "lags";
    row["kind"] = issue.detail == "LAG_IDLE_HANDLER" ? "idle_lag"
                  : issue.detail == "LAG_TOUCH"      ? "input_lag"
                                                     : Lower(issue.detail);
    row["tid"] = 0;
    row["name"] = MatrixGroupKey(issue).second;
    row["cost_ns"] = cost_ns;
    row["sync_messages"] = 0;
    row["scene"] = issue.scene;
    TreeColumns(row, issue.tree);
  } else {
    *table = "evil_methods";
    row["tid"] = 0;
    row["msg_id"] = -1;
    row["name"] = issue.detail == "STARTUP" ? "startup" : issue.scene;
    row["cost_ns"] = cost_ns;
    row["cpu_ns"] = 0;
    uint64_t stack_cost = cost_ns;
    for (const NamedCallNode& n : issue.tree) stack_cost = std::max(stack_cost, n.node.cost_ns);
    row["stack_cost_ns"] = stack_cost;
    row["stack_key"] = issue.stack_key;
    row["stack_key_name"] = issue.stack_key_name;
    row["beats_overwritten"] = 0;
    TreeColumns(row, issue.tree);
  }
  *out = row.dump(-1, ' ', false, json::error_handler_t::replace);
  return true;
}

}  // namespace looptrace
