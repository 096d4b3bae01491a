#include "looptrace/tracers/live_status_json.h"

#include <nlohmann/json.hpp>

namespace looptrace {
namespace {

using nlohmann::json;

json MessageToJson(const LiveMessage& m) {
  return json{{"tid", m.tid},
              {"begin_ns", m.begin_ns},
              {"end_ns", m.end_ns},
              {"msg_id", m.msg_id ? json(*m.msg_id) : json(nullptr)},
              {"name", m.name}};
}

LiveMessage MessageFromJson(const json& j) {
  LiveMessage m;
  m.tid = j.at("tid").get<uint32_t>();
  m.begin_ns = j.at("begin_ns").get<uint64_t>();
  m.end_ns = j.at("end_ns").get<uint64_t>();
  if (!j.at("msg_id").is_null()) m.msg_id = j.at("msg_id").get<uint64_t>();
  m.name = j.at("name").get<std::string>();
  return m;
}

}  // namespace

std::string LiveStatusToJson(const LiveStatus& s) {
  json threads = json::array();
  for (const auto& t : s.threads)
    threads.push_back({{"tid", t.tid},
                       {"messages", t.messages},
                       {"busy_ns", t.busy_ns},
                       {"total_ns", t.total_ns},
                       {"buckets", t.buckets}});
  json slow = json::array();
  for (const auto& m : s.recent_slow) slow.push_back(MessageToJson(m));
  json counters = json::object();
  for (int i = 0; i < kStatCount; ++i)
    counters[std::string(StatName(static_cast<StatId>(i)))] = s.stats.Get(static_cast<StatId>(i));
  json j{{"type", "status"},
         {"pid", s.pid},
         {"command", s.command},
         {"profile", s.profile},
         {"message_definition", s.message_definition},
         {"begin_ns", s.begin_ns},
         {"wall_time_ns", s.wall_time_ns},
         {"now_ns", s.now_ns},
         {"messages_enabled", s.messages_enabled},
         {"frames_enabled", s.frames_enabled},
         {"threads", threads},
         {"frames", s.frames},
         {"frames_by_jank", s.frames_by_jank},
         {"slow_frames", s.slow_frames},
         {"frames_by_bucket", s.frames_by_bucket},
         {"dropped_frames", s.dropped_frames},
         {"anrs", s.anrs},
         {"lags", s.lags},
         {"signal_anrs", s.signal_anrs},
         {"self_sigquits", s.self_sigquits},
         {"idle_lags", s.idle_lags},
         {"input_lags", s.input_lags},
         {"barrier_leaks", s.barrier_leaks},
         {"evil_methods", s.evil_methods},
         {"window_ns", s.window_ns},
         {"window_messages", s.window_messages},
         {"messages_per_s", s.messages_per_s},
         {"p50_ns", s.p50_ns},
         {"p99_ns", s.p99_ns},
         {"max_ns", s.max_ns},
         {"busy_percent", s.busy_percent},
         {"window_frames", s.window_frames},
         {"window_janky", s.window_janky},
         {"fps", s.fps},
         {"refresh_hz", s.refresh_hz},
         {"current", s.current ? MessageToJson(*s.current) : json(nullptr)},
         {"current_running_ns", s.current_running_ns},
         {"state", s.state},
         {"frame", s.frame},
         {"scene", s.scene},
         {"lag_threshold_ns", s.lag_threshold_ns},
         {"anr_threshold_ns", s.anr_threshold_ns},
         {"recent_slow", slow},
         {"counters", counters}};
  if (s.last_stall)
    j["last_stall"] = {{"kind", s.last_stall->kind},
                       {"tid", s.last_stall->tid},
                       {"at_ns", s.last_stall->at_ns},
                       {"message_begin_ns", s.last_stall->message_begin_ns},
                       {"name", s.last_stall->name}};
  else
    j["last_stall"] = nullptr;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<LiveStatus> LiveStatusFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return MakeError("status: not a JSON object");
  try {
    LiveStatus s;
    s.pid = j.at("pid").get<uint32_t>();
    s.command = j.at("command").get<std::string>();
    s.profile = j.at("profile").get<std::string>();
    s.message_definition = j.at("message_definition").get<std::string>();
    s.begin_ns = j.at("begin_ns").get<uint64_t>();
    s.wall_time_ns = j.at("wall_time_ns").get<uint64_t>();
    s.now_ns = j.at("now_ns").get<uint64_t>();
    s.messages_enabled = j.at("messages_enabled").get<bool>();
    s.frames_enabled = j.at("frames_enabled").get<bool>();
    for (const auto& t : j.at("threads")) {
      LiveThread thread;
      thread.tid = t.at("tid").get<uint32_t>();
      thread.messages = t.at("messages").get<uint64_t>();
      thread.busy_ns = t.at("busy_ns").get<uint64_t>();
      thread.total_ns = t.at("total_ns").get<uint64_t>();
      thread.buckets = t.at("buckets").get<decltype(thread.buckets)>();
      s.threads.push_back(thread);
    }
    s.frames = j.at("frames").get<uint64_t>();
    s.frames_by_jank = j.at("frames_by_jank").get<decltype(s.frames_by_jank)>();
    s.slow_frames = j.at("slow_frames").get<uint64_t>();
    s.frames_by_bucket = j.at("frames_by_bucket").get<decltype(s.frames_by_bucket)>();
    s.dropped_frames = j.at("dropped_frames").get<uint64_t>();
    s.anrs = j.at("anrs").get<uint64_t>();
    s.lags = j.at("lags").get<uint64_t>();
    s.signal_anrs = j.at("signal_anrs").get<uint64_t>();
    s.self_sigquits = j.at("self_sigquits").get<uint64_t>();
    s.idle_lags = j.at("idle_lags").get<uint64_t>();
    s.input_lags = j.at("input_lags").get<uint64_t>();
    s.barrier_leaks = j.at("barrier_leaks").get<uint64_t>();
    s.evil_methods = j.at("evil_methods").get<uint64_t>();
    s.window_ns = j.at("window_ns").get<uint64_t>();
    s.window_messages = j.at("window_messages").get<uint64_t>();
    s.messages_per_s = j.at("messages_per_s").get<double>();
    s.p50_ns = j.at("p50_ns").get<uint64_t>();
    s.p99_ns = j.at("p99_ns").get<uint64_t>();
    s.max_ns = j.at("max_ns").get<uint64_t>();
    s.busy_percent = j.at("busy_percent").get<double>();
    s.window_frames = j.at("window_frames").get<uint64_t>();
    s.window_janky = j.at("window_janky").get<uint64_t>();
    s.fps = j.at("fps").get<double>();
    s.refresh_hz = j.at("refresh_hz").get<double>();
    if (!j.at("current").is_null()) s.current = MessageFromJson(j.at("current"));
    s.current_running_ns = j.at("current_running_ns").get<uint64_t>();
    s.state = j.at("state").get<std::string>();
    s.frame = j.at("frame").get<std::string>();
    s.scene = j.at("scene").get<std::string>();
    s.lag_threshold_ns = j.at("lag_threshold_ns").get<uint64_t>();
    s.anr_threshold_ns = j.at("anr_threshold_ns").get<uint64_t>();
    for (const auto& m : j.at("recent_slow")) s.recent_slow.push_back(MessageFromJson(m));
    if (!j.at("last_stall").is_null()) {
      const json& l = j.at("last_stall");
      s.last_stall =
          LiveStall{l.at("kind").get<std::string>(), l.at("tid").get<uint32_t>(), l.at("at_ns").get<uint64_t>(),
                    l.at("message_begin_ns").get<uint64_t>(), l.at("name").get<std::string>()};
    }
    for (const auto& [name, value] : j.at("counters").items())
      if (auto id = StatFromName(name)) s.stats.Set(*id, value.get<uint64_t>());
    return s;
  } catch (const json::exception& e) {
    return MakeError(std::string("status: ") + e.what());
  }
}

}  // namespace looptrace
