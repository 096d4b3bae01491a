// The JSON shape of each plain data struct, declared once as a to_json/from_json pair that
// nlohmann finds by argument-dependent lookup, and used by every direction that needs it:
// recordings (tracers/event_json.cc), the report's records (json_records.h), the thread
// dump, and the live status and session summary the control socket carries both ways.
// Keys are written in nlohmann's order (sorted), so a shape is only its field list.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "looptrace/report/live_status.h"
#include "looptrace/report/process.h"
#include "looptrace/report/report.h"
#include "looptrace/report/stats.h"
#include "looptrace/util/result.h"

// An empty optional is null, and null reads back as empty.
template <typename T>
struct nlohmann::adl_serializer<std::optional<T>> {
  static void to_json(nlohmann::json& j, const std::optional<T>& value) {
    j = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  }
  static void from_json(const nlohmann::json& j, std::optional<T>& value) {
    if (j.is_null())
      value.reset();
    else
      value = j.get<T>();
  }
};

namespace looptrace {

// Reading untrusted JSON (recordings): a value as T, or nothing when it has another type.
// An integer field takes only a JSON integer within T's range: a fraction, a negative count
// or a value too large is the wrong type, never converted (nlohmann's get<T>() truncates
// silently, and a float beyond T's range is undefined behaviour).
template <typename T>
std::optional<T> JsonGet(const nlohmann::json& value) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (value.is_number_unsigned()) {
      const uint64_t u = value.get<uint64_t>();
      if (!std::in_range<T>(u)) return std::nullopt;
      return static_cast<T>(u);
    }
    if (value.is_number_integer()) {
      const int64_t i = value.get<int64_t>();
      if (!std::in_range<T>(i)) return std::nullopt;
      return static_cast<T>(i);
    }
    return std::nullopt;
  } else {
    try {
      return value.get<T>();
    } catch (const nlohmann::json::exception&) {
      return std::nullopt;
    }
  }
}

// A required field: missing or of the wrong type is an error naming it.
template <typename T>
Result<T> JsonField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return MakeError(std::string("missing field '") + key + "'");
  std::optional<T> value = JsonGet<T>(*it);
  if (!value) return MakeError(std::string("field '") + key + "' has the wrong type");
  return *std::move(value);
}

// An optional field: missing or of the wrong type reads as `fallback`.
template <typename T>
T JsonFieldOr(const nlohmann::json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  return JsonGet<T>(*it).value_or(std::move(fallback));
}

// Matrix's device block: machine, cpu_app, mem, mem_free. Reading is lenient (a recording's
// missing or odd field keeps its default).
void to_json(nlohmann::json& j, const DeviceInfo& device);
void from_json(const nlohmann::json& j, DeviceInfo& device);

// One thread of a stall snapshot, as recordings, stall records and thread dumps show it.
// Reading is lenient.
void to_json(nlohmann::json& j, const ThreadSnapshot& thread);
void from_json(const nlohmann::json& j, ThreadSnapshot& thread);

// Every counter by name. Reading sets the counters it knows and ignores the others.
void to_json(nlohmann::json& j, const Stats& stats);
void from_json(const nlohmann::json& j, Stats& stats);

// Report parts whose keys are their member names.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CostSummary, count, total_ns, min_ns, p50_ns, p90_ns, p99_ns, max_ns, mean_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OffCpuInterval, begin_ns, end_ns, reason, state, kernel_stack, waker_tid, waker_comm,
                                   open)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReasonTotal, reason, total_ns, count)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Milestone, name, ts_ns, activity, warm)

// A runtime stall cause, with its cost_ns.
void to_json(nlohmann::json& j, const StallCause& cause);

// The live status and what the daemon says about a session: every field by its name, both
// ways (reading throws nlohmann's exceptions on a missing or mistyped field).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LiveThread, tid, messages, busy_ns, total_ns, buckets)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LiveMessage, tid, begin_ns, end_ns, msg_id, name)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LiveStall, kind, tid, at_ns, message_begin_ns, name)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SessionSummary, pid, command, profile, since_wall_ns, daemon_pid, probe_points,
                                   output, format, metrics_url, log_path, messages, anrs, lags, data_loss, clickhouse,
                                   clickhouse_url, rows_sent, rows_dropped, rows_queued, clickhouse_error)
// LiveStatus adds "type": "status" and writes its stats as "counters".
void to_json(nlohmann::json& j, const LiveStatus& status);
void from_json(const nlohmann::json& j, LiveStatus& status);

// The text forms the control socket carries (one line, invalid UTF-8 replaced).
std::string LiveStatusToJson(const LiveStatus& status);
Result<LiveStatus> LiveStatusFromJson(std::string_view text);
std::string SessionSummaryToJson(const SessionSummary& summary);
Result<SessionSummary> SessionSummaryFromJson(std::string_view text);

}  // namespace looptrace
