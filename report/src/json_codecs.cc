#include "looptrace/report/json_codecs.h"

namespace looptrace {

using nlohmann::json;

void to_json(json& j, const DeviceInfo& d) {
  j = json{{"machine", d.machine},
           {"cpu_app", d.cpu_app_percent},
           {"mem", d.mem_total_bytes},
           {"mem_free", d.mem_available_kb}};
}

void from_json(const json& j, DeviceInfo& d) {
  d.machine = JsonFieldOr<std::string>(j, "machine", "UN_KNOW");
  d.mem_total_bytes = JsonFieldOr<uint64_t>(j, "mem", 0);
  d.mem_available_kb = JsonFieldOr<uint64_t>(j, "mem_free", 0);
  d.cpu_app_percent = JsonFieldOr<double>(j, "cpu_app", 0.0);
}

void to_json(json& j, const ThreadSnapshot& t) {
  j = json{{"tid", t.tid},
           {"name", t.name},
           {"state", std::string(1, t.state)},
           {"state_since_ns", t.state_since_ns},
           {"wchan", t.wchan},
           {"futex_address", t.futex_address},
           {"futex_owner_tid", t.futex_owner_tid},
           {"kernel_stack", t.kernel_stack},
           {"user_stack", t.user_stack},
           {"user_stack_stop", t.user_stack_stop}};
  if (!t.java_state.empty()) j["java_state"] = t.java_state;
}

void from_json(const json& j, ThreadSnapshot& t) {
  t.tid = JsonFieldOr<uint32_t>(j, "tid", 0);
  t.name = JsonFieldOr<std::string>(j, "name", "");
  const std::string state = JsonFieldOr<std::string>(j, "state", "?");
  t.state = state.empty() ? '?' : state[0];
  t.state_since_ns = JsonFieldOr<uint64_t>(j, "state_since_ns", 0);
  t.wchan = JsonFieldOr<std::string>(j, "wchan", "");
  t.java_state = JsonFieldOr<std::string>(j, "java_state", "");
  t.futex_address = JsonFieldOr<uint64_t>(j, "futex_address", 0);
  t.futex_owner_tid = JsonFieldOr<uint32_t>(j, "futex_owner_tid", 0);
  t.kernel_stack = JsonFieldOr<std::vector<std::string>>(j, "kernel_stack", {});
  t.user_stack = JsonFieldOr<std::vector<std::string>>(j, "user_stack", {});
  t.user_stack_stop = JsonFieldOr<std::string>(j, "user_stack_stop", "");
}

void to_json(json& j, const Stats& stats) {
  j = json::object();
  for (int i = 0; i < kStatCount; ++i) {
    const auto id = static_cast<StatId>(i);
    j[std::string(StatName(id))] = stats.Get(id);
  }
}

void from_json(const json& j, Stats& stats) {
  for (const auto& [name, value] : j.items())
    if (auto id = StatFromName(name)) stats.Set(*id, value.get<uint64_t>());
}

void to_json(json& j, const StallCause& c) {
  j = json{{"kind", c.kind},
           {"tid", c.tid},
           {"begin_ns", c.begin_ns},
           {"end_ns", c.end_ns},
           {"cost_ns", c.cost_ns()},
           {"detail", c.detail},
           {"monitor", c.monitor},
           {"holder_tid", c.holder_tid},
           {"holder_name", c.holder_name},
           {"open", c.open}};
}

// LiveStatus's fields that are written under their own names (its stats are "counters").
// clang-format off
#define LOOPTRACE_LIVE_STATUS_FIELDS(X) \
  X(pid) X(command) X(profile) X(message_definition) X(begin_ns) X(wall_time_ns) X(now_ns) \
  X(messages_enabled) X(frames_enabled) X(threads) X(frames) X(frames_by_jank) X(slow_frames) \
  X(frames_by_bucket) X(dropped_frames) X(anrs) X(lags) X(signal_anrs) X(self_sigquits) \
  X(idle_lags) X(input_lags) X(barrier_leaks) X(evil_methods) X(window_ns) X(window_messages) \
  X(messages_per_s) X(p50_ns) X(p99_ns) X(max_ns) X(busy_percent) X(window_frames) X(window_janky) \
  X(fps) X(refresh_hz) X(current) X(current_running_ns) X(state) X(frame) X(scene) \
  X(lag_threshold_ns) X(anr_threshold_ns) X(recent_slow) X(last_stall)
// clang-format on

void to_json(json& j, const LiveStatus& s) {
  j = json{{"type", "status"}, {"counters", s.stats}};
#define LOOPTRACE_WRITE(field) j[#field] = s.field;
  LOOPTRACE_LIVE_STATUS_FIELDS(LOOPTRACE_WRITE)
#undef LOOPTRACE_WRITE
  if (s.loop_delay.count) j["loop_delay"] = s.loop_delay;  // profiles with timers' due times only
}

void from_json(const json& j, LiveStatus& s) {
#define LOOPTRACE_READ(field) j.at(#field).get_to(s.field);
  LOOPTRACE_LIVE_STATUS_FIELDS(LOOPTRACE_READ)
  if (j.contains("loop_delay")) j.at("loop_delay").get_to(s.loop_delay);
#undef LOOPTRACE_READ
  j.at("counters").get_to(s.stats);
}

#undef LOOPTRACE_LIVE_STATUS_FIELDS

namespace {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

template <typename T>
Result<T> Parse(const json& j, std::string_view what) {
  if (!j.is_object()) return MakeError(std::string(what) + ": not a JSON object");
  try {
    return j.get<T>();
  } catch (const json::exception& e) {
    return MakeError(std::string(what) + ": " + e.what());
  }
}

}  // namespace

std::string LiveStatusToJson(const LiveStatus& status) { return Dump(status); }

Result<LiveStatus> LiveStatusFromJson(std::string_view text) {
  return Parse<LiveStatus>(json::parse(text, nullptr, false), "status");
}

std::string SessionSummaryToJson(const SessionSummary& summary) { return Dump(summary); }

Result<SessionSummary> SessionSummaryFromJson(std::string_view text) {
  return Parse<SessionSummary>(json::parse(text, nullptr, false), "session summary");
}

}  // namespace looptrace
