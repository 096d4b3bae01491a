#include <nlohmann/json.hpp>

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
         {"depth", m.depth}};
  j["msg_id"] = m.msg_id ? json(*m.msg_id) : json(nullptr);
  j["name"] = m.name.empty() ? json(nullptr) : json(m.name);
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
