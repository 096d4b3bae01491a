#include "looptrace/tracers/event_json.h"

#include "looptrace/tracers/thread_state.h"

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <utility>

#include "looptrace/report/json_codecs.h"
#include "looptrace/tracers/text_pool.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

using nlohmann::json;

json ProbeToJson(const ProbeEvent& e) {
  json args = json::object();
  for (const auto& arg : e.args) {
    if (arg.is_string) {
      // null: a string argument that could not be read from the target
      args[arg.name] = arg.text ? json(*arg.text) : json(nullptr);
    } else {
      args[arg.name] = arg.value;
    }
  }
  json j{{"type", "probe"},          {"ts_ns", e.ts_ns},       {"pid", e.pid},           {"tid", e.tid},
         {"role", RoleName(e.role)}, {"probe_id", e.probe_id}, {"args", std::move(args)}};
  if (e.thread_cpu_ns) j["thread_cpu_ns"] = e.thread_cpu_ns;
  if (e.sp) j["sp"] = e.sp;
  return j;
}

struct ToJson {
  json operator()(const SessionStart& s) const {
    json probes = json::array();
    for (const auto& p : s.probes)
      probes.push_back({{"probe_id", p.probe_id},
                        {"role", RoleName(p.role)},
                        {"kind", p.kind},
                        {"binary", p.binary},
                        {"point", p.point},
                        {"file_offset", p.file_offset}});
    json j{{"type", "session_start"},
           {"ts_ns", s.ts_ns},
           {"wall_time_ns", s.wall_time_ns},
           {"pid", s.pid},
           {"command", s.command},
           {"profile", s.profile},
           {"threads", s.thread_filter},
           {"probes", std::move(probes)},
           {"device", s.device},
           {"sample_hz", s.sample_hz},
           {"dwarf_unwind", s.dwarf_unwind}};
    if (!s.command_line.empty()) j["command_line"] = s.command_line;
    if (!s.message_definition.empty()) j["message_definition"] = s.message_definition;
    return j;
  }
  json operator()(const StackSample& e) const {
    json j{{"type", "stack_sample"}, {"ts_ns", e.ts_ns}, {"tid", e.tid}, {"on_cpu", e.on_cpu}, {"frames", e.frames}};
    if (!e.stop.empty()) j["stop"] = e.stop;
    if (!e.callable.empty()) j["callable"] = e.callable;
    if (e.period_ns) j["period_ns"] = e.period_ns;
    return j;
  }
  json operator()(const ProbeEvent& e) const { return ProbeToJson(e); }
  json operator()(const LossCounters& c) const {
    // Only the counters that counted something: a recording stays short.
    json counters = c.stats;
    for (auto it = counters.begin(); it != counters.end();)
      it = it->get<uint64_t>() ? std::next(it) : counters.erase(it);
    return json{{"type", "counters"}, {"counters", std::move(counters)}};
  }
  json operator()(const MethodBeats& m) const {
    json beats = json::array();
    for (const auto& b : m.beats) beats.push_back(json::array({b.ts_ns, b.id, b.enter ? 1 : 0}));
    json names = json::object();
    for (const auto& [id, name] : m.names) names[std::to_string(id)] = name;
    return json{{"type", "method_beats"},
                {"span", m.span},
                {"tid", m.tid},
                {"begin_ns", m.begin_ns},
                {"end_ns", m.end_ns},
                {"kind", MethodIdKindName(m.kind)},
                {"overwritten", m.overwritten},
                {"beats", std::move(beats)},
                {"names", std::move(names)}};
  }
  json operator()(const ProcessExec& e) const {
    return json{{"type", "exec"}, {"ts_ns", e.ts_ns}, {"pid", e.pid}, {"comm", e.comm}};
  }
  json operator()(const ThreadName& e) const {
    return json{{"type", "thread_name"}, {"ts_ns", e.ts_ns}, {"tid", e.tid}, {"name", e.name}};
  }
  json operator()(const ThreadSwitch& e) const {
    json j{{"type", "switch"}, {"ts_ns", e.ts_ns}, {"tid", e.tid}, {"off_cpu", e.off_cpu}};
    if (e.off_cpu) {
      j["state"] = e.state;
      j["kernel_stack"] = e.kernel_stack;
      if (!e.unstacked.empty()) j["unstacked"] = e.unstacked;
      if (e.wait_syscall != kNoWaitSyscall) j["wait_syscall"] = e.wait_syscall;
    }
    return j;
  }
  json operator()(const Wakeup& e) const {
    return json{{"type", "wakeup"},         {"ts_ns", e.ts_ns},         {"tid", e.tid},
                {"waker_tid", e.waker_tid}, {"waker_pid", e.waker_pid}, {"waker_comm", e.waker_comm}};
  }
  json operator()(const SignalSent& e) const {
    return json{{"type", "signal"},
                {"ts_ns", e.ts_ns},
                {"signal", e.signal},
                {"target_tid", e.target_tid},
                {"sender_pid", e.sender_pid},
                {"sender_tid", e.sender_tid},
                {"sender_comm", e.sender_comm},
                {"result", e.result}};
  }
  json operator()(const StallSnapshot& s) const {
    json memory = json::array();
    for (const auto& [k, v] : s.memory_kb) memory.push_back(json::array({k, v}));
    return json{{"type", "stall_snapshot"},
                {"anr", s.anr},
                {"ts_ns", s.ts_ns},
                {"tid", s.tid},
                {"message_begin_ns", s.message_begin_ns},
                {"threads", s.threads},
                {"process_cpu_percent", s.process_cpu_percent},
                {"cpu_window_ns", s.cpu_window_ns},
                {"memory_kb", std::move(memory)},
                {"priority", s.priority},
                {"nice", s.nice}};
  }
  json operator()(const SessionEnd& e) const {
    json j{{"type", "session_end"}, {"ts_ns", e.ts_ns}, {"reason", e.reason}};
    if (e.exit_status) j["exit_status"] = *e.exit_status;
    return j;
  }
};

template <typename T>
Result<T> Field(const json& j, const char* key) {
  return JsonField<T>(j, key);
}

template <typename T>
T FieldOr(const json& j, const char* key, T fallback) {
  return JsonFieldOr<T>(j, key, std::move(fallback));
}

Result<Role> ParseRole(const json& j) {
  ASSIGN_OR_RETURN(std::string name, Field<std::string>(j, "role"));
  auto role = RoleFromName(name);
  if (!role) return MakeError("unknown role '" + name + "'");
  return *role;
}

Result<Event> ParseProbe(const json& j) {
  ProbeEvent e;
  ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
  ASSIGN_OR_RETURN(e.tid, Field<uint32_t>(j, "tid"));
  ASSIGN_OR_RETURN(e.role, ParseRole(j));
  e.pid = FieldOr<uint32_t>(j, "pid", e.tid);
  e.probe_id = FieldOr<uint16_t>(j, "probe_id", 0);
  e.thread_cpu_ns = FieldOr<uint64_t>(j, "thread_cpu_ns", 0);
  e.sp = FieldOr<uint32_t>(j, "sp", 0);
  if (auto it = j.find("args"); it != j.end() && it->is_object()) {
    for (const auto& [name, value] : it->items()) {
      EventArg arg{TextPool::Name(name), 0, nullptr, false};
      if (value.is_string()) {
        arg.text = TextPool::Intern(value.get_ref<const std::string&>());
        arg.is_string = true;
      } else if (value.is_number_unsigned()) {
        arg.value = value.get<uint64_t>();
      } else if (value.is_number_integer()) {
        arg.value = static_cast<uint64_t>(value.get<int64_t>());
      } else if (value.is_null()) {
        arg.is_string = true;
      } else {
        return MakeError("argument '" + name + "' must be a number, a string or null");
      }
      if (!e.args.push_back(arg)) return MakeError("more arguments than an event can carry");
    }
  }
  return e;
}

Result<Event> ParseMethodBeats(const json& j) {
  MethodBeats m;
  m.span = FieldOr<std::string>(j, "span", "message");
  ASSIGN_OR_RETURN(m.tid, Field<uint32_t>(j, "tid"));
  ASSIGN_OR_RETURN(m.begin_ns, Field<uint64_t>(j, "begin_ns"));
  ASSIGN_OR_RETURN(m.end_ns, Field<uint64_t>(j, "end_ns"));
  auto kind = MethodIdKindFromName(FieldOr<std::string>(j, "kind", "id"));
  if (!kind) return MakeError("unknown method id kind");
  m.kind = *kind;
  m.overwritten = FieldOr<uint64_t>(j, "overwritten", 0);
  auto beats = j.find("beats");
  if (beats == j.end() || !beats->is_array()) return MakeError("missing field 'beats'");
  m.beats.reserve(beats->size());
  for (const auto& b : *beats) {
    if (!b.is_array() || b.size() != 3 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned() ||
        !b[2].is_number_unsigned())
      return MakeError("a beat must be [ts_ns, id, enter]");
    m.beats.push_back({b[0].get<uint64_t>(), b[1].get<uint64_t>(), b[2].get<uint64_t>() != 0});
  }
  if (auto names = j.find("names"); names != j.end() && names->is_object()) {
    for (const auto& [id, name] : names->items()) {
      if (!name.is_string()) return MakeError("method names must be strings");
      uint64_t key = 0;
      const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), key);
      if (ec != std::errc() || end != id.data() + id.size() || id.empty()) {
        return MakeError("method name key '" + id + "' is not a number");
      }
      m.names.emplace(key, name.get<std::string>());
    }
  }
  return m;
}

Result<Event> ParseSwitch(const json& j) {
  ThreadSwitch e;
  ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
  ASSIGN_OR_RETURN(e.tid, Field<uint32_t>(j, "tid"));
  ASSIGN_OR_RETURN(e.off_cpu, Field<bool>(j, "off_cpu"));
  e.state = FieldOr<uint32_t>(j, "state", 0);
  e.kernel_stack = FieldOr<std::vector<std::string>>(j, "kernel_stack", {});
  e.unstacked = UnstackedReason(FieldOr<std::string>(j, "unstacked", ""));
  e.wait_syscall = FieldOr<int32_t>(j, "wait_syscall", kNoWaitSyscall);
  return e;
}

Result<Event> ParseWakeup(const json& j) {
  Wakeup e;
  ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
  ASSIGN_OR_RETURN(e.tid, Field<uint32_t>(j, "tid"));
  ASSIGN_OR_RETURN(e.waker_tid, Field<uint32_t>(j, "waker_tid"));
  e.waker_pid = FieldOr<uint32_t>(j, "waker_pid", 0);
  e.waker_comm = FieldOr<std::string>(j, "waker_comm", "");
  return e;
}

Result<Event> ParseSignal(const json& j) {
  SignalSent e;
  ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
  ASSIGN_OR_RETURN(e.signal, Field<int>(j, "signal"));
  ASSIGN_OR_RETURN(e.sender_pid, Field<uint32_t>(j, "sender_pid"));
  e.target_tid = FieldOr<uint32_t>(j, "target_tid", 0);
  e.sender_tid = FieldOr<uint32_t>(j, "sender_tid", 0);
  e.sender_comm = FieldOr<std::string>(j, "sender_comm", "");
  e.result = FieldOr<int>(j, "result", 0);
  return e;
}

Result<Event> ParseSnapshot(const json& j) {
  StallSnapshot s;
  ASSIGN_OR_RETURN(s.ts_ns, Field<uint64_t>(j, "ts_ns"));
  ASSIGN_OR_RETURN(s.tid, Field<uint32_t>(j, "tid"));
  ASSIGN_OR_RETURN(s.message_begin_ns, Field<uint64_t>(j, "message_begin_ns"));
  s.anr = FieldOr<bool>(j, "anr", false);
  s.process_cpu_percent = FieldOr<double>(j, "process_cpu_percent", -1.0);
  s.cpu_window_ns = FieldOr<uint64_t>(j, "cpu_window_ns", 0);
  s.priority = FieldOr<int>(j, "priority", 0);
  s.nice = FieldOr<int>(j, "nice", 0);
  if (auto it = j.find("threads"); it != j.end() && it->is_array())
    for (const auto& t : *it) s.threads.push_back(t.get<ThreadSnapshot>());
  if (auto it = j.find("memory_kb"); it != j.end() && it->is_array()) {
    for (const auto& m : *it)
      if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_number_unsigned())
        s.memory_kb.emplace_back(m[0].get<std::string>(), m[1].get<uint64_t>());
  }
  return s;
}

Result<Event> ParseSessionStart(const json& j) {
  SessionStart s;
  ASSIGN_OR_RETURN(s.ts_ns, Field<uint64_t>(j, "ts_ns"));
  ASSIGN_OR_RETURN(s.pid, Field<uint32_t>(j, "pid"));
  s.wall_time_ns = FieldOr<uint64_t>(j, "wall_time_ns", 0);
  s.command = FieldOr<std::string>(j, "command", "");
  s.command_line = FieldOr<std::string>(j, "command_line", "");
  s.profile = FieldOr<std::string>(j, "profile", "");
  s.thread_filter = FieldOr<std::string>(j, "threads", "main");
  s.message_definition = FieldOr<std::string>(j, "message_definition", "");
  s.sample_hz = FieldOr<uint32_t>(j, "sample_hz", 0);
  s.dwarf_unwind = FieldOr<bool>(j, "dwarf_unwind", false);
  if (auto it = j.find("device"); it != j.end() && it->is_object()) s.device = it->get<DeviceInfo>();
  if (auto it = j.find("probes"); it != j.end() && it->is_array()) {
    for (const auto& p : *it) {
      ProbeDescription d;
      d.probe_id = FieldOr<uint16_t>(p, "probe_id", 0);
      ASSIGN_OR_RETURN(d.role, ParseRole(p));
      d.kind = FieldOr<std::string>(p, "kind", "");
      d.binary = FieldOr<std::string>(p, "binary", "");
      d.point = FieldOr<std::string>(p, "point", "");
      d.file_offset = FieldOr<uint64_t>(p, "file_offset", 0);
      s.probes.push_back(std::move(d));
    }
  }
  return s;
}

}  // namespace

std::string RecordingHeaderLine() {
  return json{{"type", "recording"}, {"format", kRecordingFormat}, {"version", kRecordingVersion}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

// Invalid UTF-8 (which SanitizingSink already replaces) becomes U+FFFD, never an exception;
// C1 controls and bidi overrides are \u escapes, so `zcat recording` is terminal-safe.
std::string EventToJsonLine(const Event& event) {
  return EscapeJsonForTerminal(std::visit(ToJson{}, event).dump(-1, ' ', false, json::error_handler_t::replace));
}

Result<std::optional<Event>> EventFromJsonLine(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return MakeError("not a JSON object");
  ASSIGN_OR_RETURN(std::string type, Field<std::string>(j, "type"));
  if (type == "recording") {
    if (FieldOr<std::string>(j, "format", "") != kRecordingFormat)
      return MakeError("not a looptrace recording (format is not '" + std::string(kRecordingFormat) + "')");
    if (FieldOr<int>(j, "version", 0) > kRecordingVersion)
      return MakeError("recording version " + std::to_string(FieldOr<int>(j, "version", 0)) +
                       " is newer than this looptrace understands");
    return std::optional<Event>{};
  }
  if (type == "probe") {
    ASSIGN_OR_RETURN(Event e, ParseProbe(j));
    return std::optional<Event>(std::move(e));
  }
  if (type == "thread_name") {
    ThreadName e;
    e.ts_ns = FieldOr<uint64_t>(j, "ts_ns", 0);
    ASSIGN_OR_RETURN(e.tid, Field<uint32_t>(j, "tid"));
    e.name = FieldOr<std::string>(j, "name", "");
    return std::optional<Event>(Event{e});
  }
  if (type == "exec") {
    ProcessExec e;
    ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
    e.pid = FieldOr<uint32_t>(j, "pid", 0);
    e.comm = FieldOr<std::string>(j, "comm", "");
    return std::optional<Event>(Event{e});
  }
  if (type == "switch" || type == "wakeup" || type == "signal" || type == "stall_snapshot") {
    auto parsed = type == "switch"   ? ParseSwitch(j)
                  : type == "wakeup" ? ParseWakeup(j)
                  : type == "signal" ? ParseSignal(j)
                                     : ParseSnapshot(j);
    if (!parsed) return std::unexpected(parsed.error());
    return std::optional<Event>(std::move(*parsed));
  }
  if (type == "stack_sample") {
    StackSample e;
    ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
    ASSIGN_OR_RETURN(e.tid, Field<uint32_t>(j, "tid"));
    e.on_cpu = FieldOr<bool>(j, "on_cpu", true);
    e.period_ns = FieldOr<uint64_t>(j, "period_ns", 0);
    auto frames = j.find("frames");
    if (frames == j.end() || !frames->is_array()) return MakeError("missing field 'frames'");
    for (const auto& f : *frames) {
      if (!f.is_string()) return MakeError("stack frames must be strings");
      e.frames.push_back(f.get<std::string>());
    }
    e.stop = FieldOr<std::string>(j, "stop", "");
    e.callable = FieldOr<std::string>(j, "callable", "");
    return std::optional<Event>(Event{std::move(e)});
  }
  if (type == "method_beats") {
    ASSIGN_OR_RETURN(Event e, ParseMethodBeats(j));
    return std::optional<Event>(std::move(e));
  }
  if (type == "session_start") {
    ASSIGN_OR_RETURN(Event e, ParseSessionStart(j));
    return std::optional<Event>(std::move(e));
  }
  if (type == "counters") {
    LossCounters c;
    if (auto it = j.find("counters"); it != j.end() && it->is_object()) {
      for (const auto& [name, value] : it->items()) {
        auto id = StatFromName(name);
        if (!id) return MakeError("unknown counter '" + name + "'");
        if (!value.is_number_unsigned()) return MakeError("counter '" + name + "' is not a count");
        c.stats.Set(*id, value.get<uint64_t>());
      }
    }
    return std::optional<Event>(Event{c});
  }
  if (type == "session_end") {
    SessionEnd e;
    ASSIGN_OR_RETURN(e.ts_ns, Field<uint64_t>(j, "ts_ns"));
    e.reason = FieldOr<std::string>(j, "reason", "");
    if (j.contains("exit_status")) e.exit_status = FieldOr<int>(j, "exit_status", 0);
    return std::optional<Event>(Event{e});
  }
  return MakeError("unknown event type '" + type + "'");
}

}  // namespace looptrace
