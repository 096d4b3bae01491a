#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "json_common.h"
#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/render.h"
#include "looptrace/util/text_safety.h"
#include "sampled_render.h"

namespace looptrace {

namespace {

using nlohmann::json;

json CostJson(const CostSummary& c) {
  return json{{"count", c.count},   {"total_ns", c.total_ns}, {"min_ns", c.min_ns}, {"p50_ns", c.p50_ns},
              {"p90_ns", c.p90_ns}, {"p99_ns", c.p99_ns},     {"max_ns", c.max_ns}, {"mean_ns", c.mean_ns}};
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

json DeviceBlock(const Report& report) {
  const DeviceInfo& d = report.session.device;
  return json{{"machine", d.machine},
              {"cpu_app", d.cpu_app_percent},
              {"mem", d.mem_total_bytes},
              {"mem_free", d.mem_available_kb}};
}

uint64_t WallMs(const Report& report, uint64_t ts_ns) {
  return (report.session.wall_time_ns + (ts_ns - std::min(ts_ns, report.session.begin_ns))) / 1'000'000;
}

json CausesJson(const std::vector<StallCause>& causes) {
  json out = json::array();
  for (const StallCause& c : causes)
    out.push_back({{"kind", c.kind},
                   {"tid", c.tid},
                   {"begin_ns", c.begin_ns},
                   {"end_ns", c.end_ns},
                   {"cost_ns", c.cost_ns()},
                   {"detail", c.detail},
                   {"monitor", c.monitor},
                   {"holder_tid", c.holder_tid},
                   {"holder_name", c.holder_name},
                   {"open", c.open}});
  return out;
}

json TreeJson(const std::vector<NamedCallNode>& tree) {
  json out = json::array();
  uint64_t root = 1;
  for (const auto& n : tree) root = std::max(root, n.node.cost_ns);
  for (const auto& n : tree) {
    json node{{"depth", n.node.depth},
              {"id", n.node.id},
              {"name", n.name},
              {"count", n.node.count},
              {"cost_ns", n.node.cost_ns},
              {"percent", std::round(1000.0 * n.node.cost_ns / root) / 10.0}};
    if (n.node.unfinished) node["unfinished"] = true;
    if (n.node.lost_exit) node["exit_lost"] = true;
    out.push_back(std::move(node));
  }
  return out;
}

// The envelope every Matrix issue has: the device block, then tag, process and time
// (Plugin.onDetectIssue), plus our record type.
json MatrixRecord(const Report& report, const char* type, const char* tag, uint64_t ts_ns) {
  json j = DeviceBlock(report);
  j["type"] = type;
  j["tag"] = tag;
  j["process"] = report.session.command;
  j["time"] = WallMs(report, ts_ns);
  return j;
}

// Matrix's Trace_EvilMethod keys (device block, detail, cost, usage, scene, stack,
// stackKey, tag, process, time) first, so Matrix log tooling reads it, then ours.
json EvilJson(const Report& report, const EvilMethodReport& e) {
  const Message& m = e.message;
  json j = MatrixRecord(report, "evil_method", "Trace_EvilMethod", m.end_ns);
  j["detail"] = "NORMAL";
  j["cost"] = e.matrix_cost_ms;
  j["usage"] = m.cpu_ns ? fmt::format("{:.2f}%", 100.0 * m.cpu_ns / std::max<uint64_t>(m.cost_ns(), 1)) : std::string();
  j["scene"] = "";
  j["stack"] = e.matrix_stack;
  j["stackKey"] = e.stack_key;
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
  j["stall_causes"] = CausesJson(e.causes);
  j["tree"] = TreeJson(e.tree);
  AddSampledJson(e.sampled, &j);
  return j;
}

std::string MatrixStack(const std::vector<NamedCallNode>& tree) {
  std::string out;
  for (const auto& n : tree)
    out += fmt::format("{},{},{},{}\n", n.node.depth, n.node.id, n.node.count, n.node.cost_ns / 1'000'000);
  return out;
}

std::string ThreadStackText(const ThreadSnapshot* t) {
  if (!t) return "";
  std::string out;
  for (const auto& frame : t->user_stack) out += "at " + frame + "\n";
  return out;
}

// Matrix's ANR/LAG keys (LooperAnrTracer) first, then ours.
json StallJson(const Report& report, const StallReport& s) {
  json j = MatrixRecord(report, s.anr ? "anr" : "lag", "Trace_EvilMethod", s.snapshot.ts_ns);
  const ThreadSnapshot* self = s.snapshot.threads.empty() ? nullptr : &s.snapshot.threads.front();
  uint64_t vm_size = 0, rss = 0, anon = 0;
  for (const auto& [k, v] : s.snapshot.memory_kb) {
    if (k == "VmSize") vm_size = v;
    if (k == "VmRSS") rss = v;
    if (k == "RssAnon") anon = v;
  }
  j["detail"] = s.anr ? "ANR" : "LAG";
  j["cost"] = (s.snapshot.ts_ns - s.message.begin_ns) / 1'000'000;
  j["stackKey"] = s.stack_key;
  j["scene"] = s.scene;
  j["stack"] = MatrixStack(s.tree);
  j["threadStack"] = ThreadStackText(self);
  j["processPriority"] = s.snapshot.priority;
  j["processNice"] = s.snapshot.nice;
  j["isProcessForeground"] = true;
  // Matrix's dalvik/native heap have no native-process equivalent: anonymous RSS stands in.
  j["memory"] = {{"dalvik_heap", 0}, {"native_heap", anon}, {"vm_size", vm_size}};
  const Message& m = s.message;
  j["tid"] = m.tid;
  j["msg_id"] = m.msg_id ? json(*m.msg_id) : json(nullptr);
  j["name"] = m.name.empty() ? json(nullptr) : json(m.name);
  j["begin_ns"] = m.begin_ns;
  j["snapshot_ns"] = s.snapshot.ts_ns;
  j["snapshot_delay_ns"] = s.snapshot.ts_ns - m.begin_ns - std::min(s.snapshot.ts_ns - m.begin_ns, s.threshold_ns);
  j["threshold_ns"] = s.threshold_ns;
  j["end_ns"] = m.end_ns;
  j["cost_ns"] = m.cost_ns();
  j["finished"] = s.finished;
  j["stuck_reason"] = s.stuck_reason;
  j["deadlock_cycle"] = s.deadlock_cycle;
  j["frame"] = s.frame;
  j["process_cpu_percent"] = s.snapshot.process_cpu_percent;
  j["vm_rss_kb"] = rss;
  json memory = json::object();
  for (const auto& [k, v] : s.snapshot.memory_kb) memory[k] = v;
  j["memory_kb"] = memory;
  json reasons = json::array();
  for (const auto& r : s.off_cpu_by_reason)
    reasons.push_back({{"reason", r.reason}, {"total_ns", r.total_ns}, {"count", r.count}});
  j["off_cpu_by_reason"] = reasons;
  j["on_cpu_ns"] = s.on_cpu_ns;
  j["stall_causes"] = CausesJson(s.causes);
  json intervals = json::array();
  for (const auto& iv : s.off_cpu)
    intervals.push_back({{"begin_ns", iv.begin_ns},
                         {"end_ns", iv.end_ns},
                         {"reason", iv.reason},
                         {"state", iv.state},
                         {"kernel_stack", iv.kernel_stack},
                         {"waker_tid", iv.waker_tid},
                         {"waker_comm", iv.waker_comm},
                         {"open", iv.open}});
  j["off_cpu"] = intervals;
  j["tree"] = TreeJson(s.tree);
  j["interpreted_stack"] = s.interpreted_stack;
  json threads = json::array();
  for (const auto& t : s.snapshot.threads) threads.push_back(ThreadSnapshotToJson(t));
  j["threads"] = threads;
  return j;
}

// One JSON object per line, each with a "type" (schema in README "JSON output").
class JsonRenderer : public Renderer {
 public:
  static json FpsJson(const Report& report, const FpsSummary& s, const char* type) {
    json j = MatrixRecord(report, type, "Trace_FPS", s.end_ns);
    // Matrix's Trace_FPS keys.
    j["scene"] = s.scene;
    json levels = json::object(), sums = json::object();
    for (const auto& [bucket, n] : s.drop_level) levels["DROPPED_" + bucket] = n;
    for (const auto& [bucket, n] : s.drop_sum) sums["DROPPED_" + bucket] = n;
    j["dropLevel"] = levels;
    j["dropSum"] = sums;
    j["fps"] = s.matrix_fps;
    j["begin_ns"] = s.begin_ns;
    j["end_ns"] = s.end_ns;
    j["frames"] = s.frames;
    j["delivered_fps"] = s.delivered_fps;
    j["refresh_hz"] = s.refresh_hz;
    j["janky"] = s.janky;
    j["slow"] = s.slow;
    j["frozen"] = s.frozen;
    j["dropped_frames"] = s.dropped_frames;
    j["delay_by_messages_ns"] = s.delay_by_messages_ns;
    return j;
  }

  static void RenderFrames(const Report& report, std::ostream& out) {
    const FramesReport& f = report.frames;
    for (const FrameRecord& fr : f.frames) {
      json phases = json::array();
      for (const PhaseCost& p : fr.phases)
        phases.push_back({{"phase", p.phase},
                          {"name", PhaseName(p.phase)},
                          {"begin_ns", p.begin_ns},
                          {"end_ns", p.end_ns},
                          {"cost_ns", p.cost_ns()}});
      json j{{"type", "frame"},
             {"tid", fr.tid},
             {"frame_id", fr.frame_id},
             {"vsync_ns", fr.vsync_ns},
             {"intended_vsync_ns", fr.intended_vsync_ns},
             {"begin_ns", fr.begin_ns},
             {"end_ns", fr.end_ns},
             {"cost_ns", fr.cost_ns()},
             {"total_ns", fr.total_ns()},
             {"interval_ns", fr.interval_ns},
             {"refresh_hz", fr.refresh_hz},
             {"skipped_frames", fr.skipped_frames},
             {"dropped_frames", fr.dropped_frames},
             {"matrix_dropped", fr.matrix_dropped},
             {"bucket", fr.bucket},
             {"deadline_missed", fr.deadline_missed},
             {"slow", fr.slow},
             {"frozen", fr.frozen},
             {"delay_by_messages_ns", fr.delay_by_messages_ns},
             {"scene", fr.scene},
             {"finished", fr.finished},
             {"phases", phases}};
      if (!fr.tree.empty()) j["tree"] = TreeJson(fr.tree);
      AddSampledJson(fr.sampled, &j);
      Line(out, j);
    }
    for (const FpsSummary& s : f.windows) Line(out, FpsJson(report, s, "fps"));
    for (const FpsSummary& s : f.scenes) Line(out, FpsJson(report, s, "fps_scene"));
  }

  // Matrix's Trace_StartUp keys, then ours; plus Trace_EvilMethod "STARTUP" records for
  // startups over the threshold (with their call tree), as Matrix emits them.
  static void RenderStartup(const Report& report, std::ostream& out) {
    const StartupReport& s = report.startup;
    auto ms = [](uint64_t ns) { return ns / 1'000'000; };
    json j =
        MatrixRecord(report, "startup", "Trace_StartUp", s.care_focus_ns ? *s.care_focus_ns : report.session.end_ns);
    j["application_create"] = ms(s.application_create_ns);
    j["application_create_scene"] = s.app_create_scene;
    j["first_activity_create"] = ms(s.first_screen_ns);
    j["startup_duration"] = ms(s.cold_ns);
    j["is_warm_start_up"] = false;
    auto opt = [](const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); };
    j["exec_ns"] = opt(s.exec_ns);
    j["app_create_begin_ns"] = opt(s.app_create_begin_ns);
    j["app_create_end_ns"] = opt(s.app_create_end_ns);
    j["first_focus_ns"] = opt(s.first_focus_ns);
    j["care_focus_ns"] = opt(s.care_focus_ns);
    j["first_frame_ns"] = opt(s.first_frame_ns);
    j["fully_drawn_ns"] = opt(s.fully_drawn_ns);
    j["fully_drawn_frame_ns"] = opt(s.fully_drawn_frame_ns);
    j["care_scene"] = s.care_scene;
    j["exec_to_app_create_ns"] = s.exec_to_app_create_ns;
    j["application_create_ns"] = s.application_create_ns;
    j["first_screen_ns"] = s.first_screen_ns;
    j["cold_ns"] = s.cold_ns;
    j["cold_from_exec_ns"] = s.cold_from_exec_ns;
    j["ttid_ns"] = s.ttid_ns;
    j["ttfd_ns"] = s.ttfd_ns;
    j["cold_complete"] = s.cold_complete;
    j["over_threshold"] = s.over_threshold;
    j["vitals_excessive"] = s.excessive;
    j["missing"] = s.missing;
    json milestones = json::array();
    for (const auto& m : s.milestones)
      milestones.push_back({{"name", m.name}, {"ts_ns", m.ts_ns}, {"activity", m.activity}, {"warm", m.warm}});
    j["milestones"] = milestones;
    j["tree"] = TreeJson(s.tree);
    AddSampledJson(s.sampled, &j);
    Line(out, j);
    auto evil = [&](const std::vector<NamedCallNode>& tree, const SampledCallTree& sampled, uint64_t cost,
                    int sub_type) {
      json e = MatrixRecord(report, "startup_evil_method", "Trace_EvilMethod", report.session.end_ns);
      e["detail"] = "STARTUP";
      e["cost"] = ms(cost);
      e["stack"] = MatrixStack(tree);
      e["stackKey"] = "";
      e["subType"] = sub_type;
      e["tree"] = TreeJson(tree);
      AddSampledJson(sampled, &e);
      Line(out, e);
    };
    if (s.over_threshold) evil(s.tree, s.sampled, s.cold_ns, 1);
    for (const WarmStart& w : s.warm_starts) {
      json wj = MatrixRecord(report, "startup", "Trace_StartUp", w.focus_ns ? w.focus_ns : w.launch_ns);
      wj["application_create"] = 0;
      wj["application_create_scene"] = w.activity;
      wj["first_activity_create"] = 0;
      wj["startup_duration"] = ms(w.cost_ns());
      wj["is_warm_start_up"] = true;
      wj["launch_ns"] = w.launch_ns;
      wj["focus_ns"] = w.focus_ns ? json(w.focus_ns) : json(nullptr);
      wj["first_frame_ns"] = w.first_frame_ns ? json(w.first_frame_ns) : json(nullptr);
      wj["warm_ns"] = w.cost_ns();
      wj["over_threshold"] = w.over_threshold;
      wj["vitals_excessive"] = w.excessive;
      wj["tree"] = TreeJson(w.tree);
      AddSampledJson(w.sampled, &wj);
      Line(out, wj);
      if (w.over_threshold) evil(w.tree, w.sampled, w.cost_ns(), 2);
    }
  }

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
                   {"end_reason", s.end_reason},
                   {"message_definition", report.messages.definition},
                   {"exit_status", s.exit_status ? json(*s.exit_status) : json(nullptr)}});
    // Only when there were some: an exec into another program during the session.
    for (const SessionInfo::Exec& e : s.execs)
      Line(out, json{{"type", "session_exec"}, {"ts_ns", e.ts_ns}, {"comm", e.comm}});
    const MessagesReport& m = report.messages;
    for (const Message& msg : m.messages) Line(out, MessageJson(msg, true));
    for (const Message& msg : m.unfinished) Line(out, MessageJson(msg, false));
    if (m.not_listed)
      Line(out, json{{"type", "messages_not_listed"},
                     {"count", m.not_listed},
                     {"keep_messages", m.keep_limit},
                     {"approximate_percentiles", m.approximate_percentiles}});
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
    RenderFrames(report, out);
    for (const EvilMethodReport& e : report.evil_methods) Line(out, EvilJson(report, e));
    for (const StallReport& s : report.stalls) Line(out, StallJson(report, s));
    for (const SignalAnrReport& s : report.signal_anrs) {
      json j = MatrixRecord(report, s.from_self ? "self_sigquit" : "signal_anr", "Trace_EvilMethod", s.signal.ts_ns);
      j["detail"] = "SIGNAL_ANR";
      j["scene"] = s.scene;
      j["isProcessForeground"] = true;
      j["ts_ns"] = s.signal.ts_ns;
      j["sender_pid"] = s.signal.sender_pid;
      j["sender_tid"] = s.signal.sender_tid;
      j["sender_comm"] = s.signal.sender_comm;
      j["delivered"] = s.signal.result == 0;
      j["stalled"] = s.stalled;
      if (s.stalled) {
        j["msg_id"] = s.message.msg_id ? json(*s.message.msg_id) : json(nullptr);
        j["name"] = s.message.name;
        j["message_begin_ns"] = s.message.begin_ns;
        j["running_ns"] = s.message.cost_ns();
      }
      Line(out, j);
    }
    for (const SpanLagReport& l : report.span_lags) {
      json j = MatrixRecord(report, l.kind.c_str(), "Trace_EvilMethod", l.end_ns);
      j["detail"] = l.kind == "idle_lag" ? "LAG_IDLE_HANDLER" : "LAG_TOUCH";
      j["scene"] = l.scene;
      j["isProcessForeground"] = true;
      j["tid"] = l.tid;
      j["name"] = l.name;
      j["begin_ns"] = l.begin_ns;
      j["end_ns"] = l.end_ns;
      j["cost_ns"] = l.end_ns - l.begin_ns;
      j["stack"] = MatrixStack(l.tree);
      j["tree"] = TreeJson(l.tree);
      Line(out, j);
    }
    if (report.startup.seen) RenderStartup(report, out);
    for (const BarrierLeakReport& b : report.barrier_leaks)
      Line(out, json{{"type", "barrier_leak"},
                     {"tid", b.tid},
                     {"token", b.token},
                     {"begin_ns", b.begin_ns},
                     {"end_ns", b.end_ns},
                     {"duration_ns", b.end_ns - b.begin_ns},
                     {"removed", b.removed},
                     {"sync_messages_enqueued", b.sync_messages_enqueued}});
    json counters = json::object();
    for (int i = 0; i < kStatCount; ++i) {
      auto id = static_cast<StatId>(i);
      counters[std::string(StatName(id))] = report.stats.Get(id);
    }
    Line(out, json{{"type", "stats"}, {"counters", counters}});
  }

 private:
  // Strings are made valid UTF-8 where they enter (SanitizingSink); `replace` is the last
  // guard, so a stray invalid byte becomes U+FFFD instead of an exception. C1 controls and
  // bidi overrides, which JSON allows raw, are written as \u escapes (terminal-safe).
  static void Line(std::ostream& out, const json& j) {
    out << EscapeJsonForTerminal(j.dump(-1, ' ', false, json::error_handler_t::replace)) << '\n';
  }
};

}  // namespace

std::unique_ptr<Renderer> MakeJsonRenderer(const RenderOptions&) { return std::make_unique<JsonRenderer>(); }

}  // namespace looptrace
