#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "looptrace/tracers/render.h"

namespace looptrace {

std::unique_ptr<Renderer> MakeTextRenderer(RenderOptions options);

namespace {

using nlohmann::json;

json CostJson(const CostSummary& c) {
  return json{{"count", c.count},   {"total_ns", c.total_ns}, {"min_ns", c.min_ns},
              {"p50_ns", c.p50_ns}, {"p90_ns", c.p90_ns},     {"p99_ns", c.p99_ns},
              {"max_ns", c.max_ns}, {"mean_ns", c.mean_ns}};
}

json MessageJson(const Message& m, bool finished) {
  json j{{"type", finished ? "message" : "unfinished_message"},
         {"tid", m.tid},
         {"begin_ns", m.begin_ns},
         {"end_ns", m.end_ns},
         {"cost_ns", m.cost_ns()},
         {"depth", m.depth},
         {"cpu_ns", m.cpu_ns}};
  j["msg_id"] = m.msg_id ? json(*m.msg_id) : json(nullptr);
  j["name"] = m.name.empty() ? json(nullptr) : json(m.name);
  return j;
}

// Matrix's Trace_EvilMethod keys (device block, detail, cost, usage, scene, stack,
// stackKey, tag, process, time) first, so Matrix log tooling reads it, then ours.
json EvilJson(const Report& report, const EvilMethodReport& e) {
  const Message& m = e.message;
  const DeviceInfo& d = report.session.device;
  json j;
  j["type"] = "evil_method";
  j["machine"] = d.machine;
  j["cpu_app"] = d.cpu_app_percent;
  j["mem"] = d.mem_total_bytes;
  j["mem_free"] = d.mem_available_kb;
  j["detail"] = "NORMAL";
  j["cost"] = e.matrix_cost_ms;
  j["usage"] = m.cpu_ns ? fmt::format("{:.2f}%", 100.0 * m.cpu_ns / std::max<uint64_t>(m.cost_ns(), 1))
                        : std::string();
  j["scene"] = "";
  j["stack"] = e.matrix_stack;
  j["stackKey"] = e.stack_key;
  j["tag"] = "Trace_EvilMethod";
  j["process"] = e.process;
  // Wall-clock ms when the message ended, from the session's realtime anchor.
  j["time"] = (report.session.wall_time_ns + (m.end_ns - report.session.begin_ns)) / 1'000'000;
  j["tid"] = m.tid;
  j["msg_id"] = m.msg_id ? json(*m.msg_id) : json(nullptr);
  j["name"] = m.name.empty() ? json(nullptr) : json(m.name);
  j["begin_ns"] = m.begin_ns;
  j["end_ns"] = m.end_ns;
  j["cost_ns"] = m.cost_ns();
  j["cpu_ns"] = m.cpu_ns;
  j["stack_cost_ns"] = e.stack_cost_ns;
  j["stack_key_name"] = e.stack_key_name;
  j["method_id_kind"] = MethodIdKindName(e.kind);
  j["has_beats"] = e.has_beats;
  j["matrix_compat"] = e.matrix_compat;
  j["nodes_before_trim"] = e.nodes_before_trim;
  j["beats_overwritten"] = e.beats_overwritten;
  json tree = json::array();
  const double root = static_cast<double>(std::max<uint64_t>(e.stack_cost_ns, 1));
  for (const NamedCallNode& n : e.tree) {
    json node{{"depth", n.node.depth}, {"id", n.node.id},     {"name", n.name},
              {"count", n.node.count}, {"cost_ns", n.node.cost_ns},
              {"percent", std::round(1000.0 * n.node.cost_ns / root) / 10.0}};
    if (n.node.unfinished) node["unfinished"] = true;
    if (n.node.lost_exit) node["exit_lost"] = true;
    tree.push_back(std::move(node));
  }
  j["tree"] = std::move(tree);
  return j;
}

// One JSON object per line, each with a "type" (schema in README "JSON output").
class JsonRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override {
    const SessionInfo& s = report.session;
    Line(out, json{{"type", "session"},
                   {"pid", s.pid},
                   {"command", s.command},
                   {"profile", s.profile},
                   {"threads", s.thread_filter},
                   {"begin_ns", s.begin_ns},
                   {"end_ns", s.end_ns},
                   {"duration_ns", s.duration_ns()},
                   {"wall_time_ns", s.wall_time_ns},
                   {"end_reason", s.end_reason}});
    const MessagesReport& m = report.messages;
    for (const Message& msg : m.messages) Line(out, MessageJson(msg, true));
    for (const Message& msg : m.unfinished) Line(out, MessageJson(msg, false));
    for (const ThreadMessages& t : m.threads) {
      json j{{"type", "message_summary"}, {"tid", t.tid}, {"busy_ns", t.busy_ns}};
      j.update(CostJson(t.cost));
      Line(out, j);
    }
    for (const NamedMessages& n : m.by_name) {
      json j{{"type", "message_name_summary"}, {"name", n.name}};
      j.update(CostJson(n.cost));
      Line(out, j);
    }
    for (const EvilMethodReport& e : report.evil_methods) Line(out, EvilJson(report, e));
    json counters = json::object();
    for (int i = 0; i < kStatCount; ++i) {
      auto id = static_cast<StatId>(i);
      counters[std::string(StatName(id))] = report.stats.Get(id);
    }
    Line(out, json{{"type", "stats"}, {"counters", counters}});
  }

 private:
  static void Line(std::ostream& out, const json& j) { out << j.dump() << '\n'; }
};

}  // namespace

std::unique_ptr<Renderer> MakeRenderer(OutputFormat format, RenderOptions options) {
  switch (format) {
    case OutputFormat::kText: return MakeTextRenderer(options);
    case OutputFormat::kJson: return std::make_unique<JsonRenderer>();
  }
  return nullptr;
}

}  // namespace looptrace
