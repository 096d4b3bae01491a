#include "looptrace/report/json_records.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "looptrace/report/json_codecs.h"
#include "looptrace/util/text_safety.h"
#include "sampled_render.h"

namespace looptrace {
namespace {

using nlohmann::json;

json NullIfEmpty(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

uint64_t WallMs(const Report& report, uint64_t ts_ns) {
  return (report.session.wall_time_ns + (ts_ns - std::min(ts_ns, report.session.begin_ns))) / 1'000'000;
}

// The envelope every Matrix issue has: the device block, then tag, process and time
// (Plugin.onDetectIssue), plus our record type.
json MatrixRecord(const Report& report, const char* type, const char* tag, uint64_t ts_ns) {
  json j = report.session.device;
  j["type"] = type;
  j["tag"] = tag;
  j["process"] = report.session.command;
  j["time"] = WallMs(report, ts_ns);
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

uint64_t Ms(uint64_t ns) { return ns / 1'000'000; }

// A Trace_EvilMethod "STARTUP" record for a startup over its threshold, as Matrix emits it.
json StartupEvilJson(const Report& report, const std::vector<NamedCallNode>& tree, const SampledCallTree& sampled,
                     uint64_t cost_ns, int sub_type) {
  json e = MatrixRecord(report, "startup_evil_method", "Trace_EvilMethod", report.session.end_ns);
  e["detail"] = "STARTUP";
  e["cost"] = Ms(cost_ns);
  e["stack"] = MatrixStack(tree);
  e["stackKey"] = "";
  e["subType"] = sub_type;
  e["tree"] = CallTreeJson(tree);
  AddSampledJson(sampled, &e);
  return e;
}

}  // namespace

json CallTreeJson(const std::vector<NamedCallNode>& tree, bool marks) {
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
    if (marks && n.node.unfinished) node["unfinished"] = true;
    if (marks && n.node.lost_exit) node["exit_lost"] = true;
    out.push_back(std::move(node));
  }
  return out;
}

json MemoryKbJson(const std::vector<std::pair<std::string, uint64_t>>& memory_kb) {
  json memory = json::object();
  for (const auto& [k, v] : memory_kb) memory[k] = v;
  return memory;
}

json SessionJson(const Report& report) {
  const SessionInfo& s = report.session;
  json j{{"type", "session"},
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
         {"exit_status", s.exit_status}};
  if (!s.command_line.empty()) j["command_line"] = s.command_line;
  return j;
}

json MessageJson(const Message& m, bool finished) {
  json j{{"type", finished ? "message" : "unfinished_message"},
         {"tid", m.tid},
         {"begin_ns", m.begin_ns},
         {"end_ns", m.end_ns},
         {"cost_ns", m.cost_ns()},
         {"depth", m.depth},
         {"cpu_ns", m.cpu_ns},
         {"msg_id", m.msg_id},
         {"name", NullIfEmpty(m.name)}};
  if (m.loop_delay_ns) j["loop_delay_ns"] = *m.loop_delay_ns;  // timers only
  return j;
}

json FrameJson(const FrameRecord& fr) {
  json phases = json::array();
  for (const PhaseCost& p : fr.phases)
    phases.push_back({{"phase", p.phase},
                      {"name", p.name},
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
  if (!fr.tree.empty()) j["tree"] = CallTreeJson(fr.tree);
  AddSampledJson(fr.sampled, &j);
  return j;
}

json FpsJson(const Report& report, const FpsSummary& s, const char* type) {
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

// Matrix's Trace_EvilMethod keys (device block, detail, cost, usage, scene, stack,
// stackKey, tag, process, time) first, so Matrix log tooling reads it, then ours.
json EvilMethodJson(const Report& report, const EvilMethodReport& e) {
  const Message& m = e.message;
  json j = MatrixRecord(report, "evil_method", "Trace_EvilMethod", m.end_ns);
  j["detail"] = "NORMAL";
  j["cost"] = e.matrix_cost_ms;
  j["usage"] = m.cpu_ns ? fmt::format("{:.2f}%", 100.0 * m.cpu_ns / std::max<uint64_t>(m.cost_ns(), 1)) : std::string();
  j["scene"] = "";
  j["stack"] = e.matrix_stack;
  j["stackKey"] = e.stack_key;
  j["tid"] = m.tid;
  j["msg_id"] = m.msg_id;
  j["name"] = NullIfEmpty(m.name);
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
  j["stall_causes"] = e.causes;
  j["tree"] = CallTreeJson(e.tree);
  AddSampledJson(e.sampled, &j);
  if (!e.nested.empty()) {
    json nested = json::array();
    for (const Message& n : e.nested)
      nested.push_back({{"tid", n.tid},
                        {"msg_id", n.msg_id},
                        {"name", NullIfEmpty(n.name)},
                        {"depth", n.depth},
                        {"begin_ns", n.begin_ns},
                        {"end_ns", n.end_ns},
                        {"cost_ns", n.cost_ns()}});
    j["nested"] = std::move(nested);
  }
  return j;
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
  j["cost"] = Ms(s.snapshot.ts_ns - s.message.begin_ns);
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
  j["msg_id"] = m.msg_id;
  j["name"] = NullIfEmpty(m.name);
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
  j["memory_kb"] = MemoryKbJson(s.snapshot.memory_kb);
  j["off_cpu_by_reason"] = s.off_cpu_by_reason;
  j["on_cpu_ns"] = s.on_cpu_ns;
  j["stall_causes"] = s.causes;
  j["off_cpu"] = s.off_cpu;
  j["tree"] = CallTreeJson(s.tree);
  j["interpreted_stack"] = s.interpreted_stack;
  j["threads"] = s.snapshot.threads;
  return j;
}

json SignalAnrJson(const Report& report, const SignalAnrReport& s) {
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
    j["msg_id"] = s.message.msg_id;
    j["name"] = s.message.name;
    j["message_begin_ns"] = s.message.begin_ns;
    j["running_ns"] = s.message.cost_ns();
  }
  return j;
}

json SpanLagJson(const Report& report, const SpanLagReport& l) {
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
  j["tree"] = CallTreeJson(l.tree);
  return j;
}

json BarrierLeakJson(const BarrierLeakReport& b) {
  return json{{"type", "barrier_leak"}, {"tid", b.tid},
              {"token", b.token},       {"begin_ns", b.begin_ns},
              {"end_ns", b.end_ns},     {"duration_ns", b.end_ns - b.begin_ns},
              {"removed", b.removed},   {"sync_messages_enqueued", b.sync_messages_enqueued}};
}

// Matrix's Trace_StartUp keys, then ours.
json ColdStartJson(const Report& report) {
  const StartupReport& s = report.startup;
  json j = MatrixRecord(report, "startup", "Trace_StartUp", s.care_focus_ns ? *s.care_focus_ns : report.session.end_ns);
  j["application_create"] = Ms(s.application_create_ns);
  j["application_create_scene"] = s.app_create_scene;
  j["first_activity_create"] = Ms(s.first_screen_ns);
  j["startup_duration"] = Ms(s.cold_ns);
  j["is_warm_start_up"] = false;
  j["exec_ns"] = s.exec_ns;
  j["app_create_begin_ns"] = s.app_create_begin_ns;
  j["app_create_end_ns"] = s.app_create_end_ns;
  j["first_focus_ns"] = s.first_focus_ns;
  j["care_focus_ns"] = s.care_focus_ns;
  j["first_frame_ns"] = s.first_frame_ns;
  j["fully_drawn_ns"] = s.fully_drawn_ns;
  j["fully_drawn_frame_ns"] = s.fully_drawn_frame_ns;
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
  j["milestones"] = s.milestones;
  j["tree"] = CallTreeJson(s.tree);
  AddSampledJson(s.sampled, &j);
  return j;
}

json WarmStartJson(const Report& report, const WarmStart& w) {
  json j = MatrixRecord(report, "startup", "Trace_StartUp", w.focus_ns ? w.focus_ns : w.launch_ns);
  j["application_create"] = 0;
  j["application_create_scene"] = w.activity;
  j["first_activity_create"] = 0;
  j["startup_duration"] = Ms(w.cost_ns());
  j["is_warm_start_up"] = true;
  j["launch_ns"] = w.launch_ns;
  j["focus_ns"] = w.focus_ns ? json(w.focus_ns) : json(nullptr);
  j["first_frame_ns"] = w.first_frame_ns ? json(w.first_frame_ns) : json(nullptr);
  j["warm_ns"] = w.cost_ns();
  j["over_threshold"] = w.over_threshold;
  j["vitals_excessive"] = w.excessive;
  j["tree"] = CallTreeJson(w.tree);
  AddSampledJson(w.sampled, &j);
  return j;
}

json ThreadProfileJson(const ThreadProfile& t) {
  json top = json::array();
  for (const MethodShare& m : t.top)
    top.push_back({{"name", m.name}, {"self_samples", m.self_samples}, {"total_samples", m.total_samples}});
  json j{{"type", "thread_profile"}, {"tid", t.tid}, {"samples", t.samples}, {"top", std::move(top)}};
  AddSampledJson(t.tree, &j);
  return j;
}

void ForEachRecord(const Report& report, const std::function<void(const json&)>& emit_record) {
  // Every record about a thread names it next to its number, when the thread's name is known.
  const std::function<void(const json&)> emit = [&](const json& j) {
    if (report.thread_names.empty()) return emit_record(j);
    auto tid = j.find("tid");
    if (tid == j.end() || !tid->is_number_unsigned()) return emit_record(j);
    auto name = report.thread_names.find(tid->get<uint32_t>());
    if (name == report.thread_names.end()) return emit_record(j);
    json named = j;
    named["thread_name"] = name->second;
    emit_record(named);
  };
  if (report.matrix.enabled) {
    ForEachMatrixRecord(report.matrix, emit);
    return;
  }
  emit(SessionJson(report));
  // Only when there were some: an exec into another program during the session.
  for (const SessionInfo::Exec& e : report.session.execs)
    emit(json{{"type", "session_exec"}, {"ts_ns", e.ts_ns}, {"comm", e.comm}});
  const MessagesReport& m = report.messages;
  for (const Message& msg : m.messages) emit(MessageJson(msg, true));
  for (const Message& msg : m.unfinished) emit(MessageJson(msg, false));
  if (m.not_listed)
    emit(json{{"type", "messages_not_listed"},
              {"count", m.not_listed},
              {"keep_messages", m.keep_limit},
              {"approximate_percentiles", m.approximate_percentiles}});
  for (const ThreadMessages& t : m.threads) {
    json j{{"type", "message_summary"}, {"tid", t.tid}, {"busy_ns", t.busy_ns}};
    j.update(json(t.cost));
    emit(j);
  }
  for (const NamedMessages& n : m.by_name) {
    json j{{"type", "message_name_summary"}, {"name", n.name}};
    j.update(json(n.cost));
    emit(j);
  }
  if (m.loop_delay.count) {
    json j{{"type", "loop_delay_summary"}};
    j.update(json(m.loop_delay));
    emit(j);
  }
  for (const ThreadProfile& t : report.session_profile.threads) emit(ThreadProfileJson(t));
  for (const FrameRecord& f : report.frames.frames) emit(FrameJson(f));
  for (const FpsSummary& s : report.frames.windows) emit(FpsJson(report, s, "fps"));
  for (const FpsSummary& s : report.frames.scenes) emit(FpsJson(report, s, "fps_scene"));
  for (const EvilMethodReport& e : report.evil_methods) emit(EvilMethodJson(report, e));
  for (const StallReport& s : report.stalls) emit(StallJson(report, s));
  for (const SignalAnrReport& s : report.signal_anrs) emit(SignalAnrJson(report, s));
  for (const SpanLagReport& l : report.span_lags) emit(SpanLagJson(report, l));
  const StartupReport& s = report.startup;
  if (s.seen) {
    emit(ColdStartJson(report));
    if (s.over_threshold) emit(StartupEvilJson(report, s.tree, s.sampled, s.cold_ns, 1));
    for (const WarmStart& w : s.warm_starts) {
      emit(WarmStartJson(report, w));
      if (w.over_threshold) emit(StartupEvilJson(report, w.tree, w.sampled, w.cost_ns(), 2));
    }
  }
  for (const BarrierLeakReport& b : report.barrier_leaks) emit(BarrierLeakJson(b));
  emit(json{{"type", "stats"}, {"counters", report.stats}});
}

// Strings are made valid UTF-8 where they enter (SanitizingSink); `replace` is the last
// guard, so a stray invalid byte becomes U+FFFD instead of an exception.
std::string RecordLine(const json& record) {
  return EscapeJsonForTerminal(record.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace looptrace
