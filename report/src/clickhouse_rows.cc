// The rows are made from the report's JSON records (json_records.h), not from the report's
// structs: a column says what the JSON report says, under the name the table gives it.
#include "looptrace/report/clickhouse_rows.h"

#include <fmt/format.h>

#include <algorithm>

#include "looptrace/report/json_records.h"

namespace looptrace {
namespace {

using nlohmann::json;

// A record's call tree as the four tree columns (empty arrays when it has none).
void AddTree(json& row, const json& record) {
  json depth = json::array(), name = json::array(), count = json::array(), cost = json::array();
  if (auto tree = record.find("tree"); tree != record.end())
    for (const json& n : *tree) {
      depth.push_back(n.at("depth"));
      name.push_back(n.at("name"));
      count.push_back(n.at("count"));
      cost.push_back(n.at("cost_ns"));
    }
  row["tree_depth"] = depth;
  row["tree_name"] = name;
  row["tree_count"] = count;
  row["tree_cost_ns"] = cost;
}

void NoTree(json& row) { AddTree(row, json::object()); }

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

uint64_t U64(const json& record, const char* key) { return record.at(key).get<uint64_t>(); }

// msg_id: the record's (null when the message had none) as -1.
int64_t MsgId(const json& record) {
  auto it = record.find("msg_id");
  return it == record.end() || it->is_null() ? -1 : static_cast<int64_t>(it->get<uint64_t>());
}

// A name a record writes null when empty.
json Text(const json& record, const char* key) {
  const json& value = record.at(key);
  return value.is_null() ? json("") : value;
}

int Flag(const json& record, const char* key) { return record.at(key).get<bool>() ? 1 : 0; }

// Copies `keys` from the record under the same names.
void Copy(json& row, const json& record, std::initializer_list<const char*> keys) {
  for (const char* key : keys) row[key] = record.at(key);
}

}  // namespace

RowBuilder::RowBuilder(RowIdentity identity, uint64_t slow_message_ns)
    : id_(std::move(identity)), slow_message_ns_(slow_message_ns) {}

uint64_t RowBuilder::WallNs(uint64_t monotonic_ns) const {
  if (monotonic_ns >= id_.begin_ns) return id_.begin_wall_ns + (monotonic_ns - id_.begin_ns);
  const uint64_t before = id_.begin_ns - monotonic_ns;
  return id_.begin_wall_ns > before ? id_.begin_wall_ns - before : 0;
}

std::vector<TableRows> RowBuilder::Rows(const Report& report, const std::vector<MessageInterval>& intervals,
                                        const Stats& counters, bool final, uint64_t settle_ns) {
  std::map<std::string, std::vector<std::string>> out;
  const uint64_t end_ns = report.session.end_ns;
  const uint64_t settled = final ? UINT64_MAX : (end_ns > settle_ns ? end_ns - settle_ns : 0);
  auto fresh = [&](uint64_t record_end_ns) { return record_end_ns > watermark_ns_ && record_end_ns <= settled; };
  auto row = [&](uint64_t at_ns) {
    const uint64_t wall = WallNs(at_ns);
    return json{{"host", id_.host},   {"target", id_.target},         {"pid", id_.pid}, {"session_id", id_.session_id},
                {"build", id_.build}, {"time", wall / 1'000'000'000}, {"time_ns", wall}};
  };

  // The session: once while it runs, and at the end.
  if (final || !session_row_) {
    json j = row(id_.begin_ns);
    uint64_t messages = 0, busy = 0, janky = 0, loss = 0;
    for (const auto& t : report.messages.threads) {
      messages += t.cost.count;
      busy += t.busy_ns;
    }
    for (const auto& f : report.frames.frames) janky += f.finished && f.deadline_missed;
    for (int i = 0; i < kStatCount; ++i)
      if (StatSeverityOf(static_cast<StatId>(i)) == StatSeverity::kDataLoss)
        loss += counters.Get(static_cast<StatId>(i));
    size_t anrs = 0, lags = 0;
    for (const auto& s : report.stalls) ++(s.anr ? anrs : lags);
    const uint64_t end_wall = WallNs(end_ns);
    j["profile"] = id_.profile;
    j["end_reason"] = final ? report.session.end_reason : "running";
    j["end_time"] = final ? end_wall / 1'000'000'000 : 0;
    j["duration_ns"] = report.session.duration_ns();
    j["messages"] = messages;
    j["busy_ns"] = busy;
    j["anrs"] = anrs;
    j["lags"] = lags;
    j["evil_methods"] = report.evil_methods.size();
    j["frames"] = report.frames.frames.size();
    j["janky_frames"] = janky;
    j["data_loss"] = loss;
    j["updated"] = end_wall / 1'000'000'000;
    out["sessions"].push_back(Dump(j));
    session_row_ = true;
  }

  for (const auto& i : intervals) {
    json j = row(i.begin_ns);
    j["tid"] = i.tid;
    j["interval_ns"] = i.end_ns - i.begin_ns;
    j["count"] = i.cost.count;
    j["total_ns"] = i.cost.total_ns;
    j["busy_ns"] = i.busy_ns;
    j["min_ns"] = i.cost.min_ns;
    j["p50_ns"] = i.cost.p50_ns;
    j["p90_ns"] = i.cost.p90_ns;
    j["p99_ns"] = i.cost.p99_ns;
    j["max_ns"] = i.cost.max_ns;
    out["message_summaries"].push_back(Dump(j));
  }

  // The evil methods' stackKeys, for the slow messages they are (by tid and begin).
  std::map<std::pair<uint32_t, uint64_t>, std::string> stack_keys;
  for (const auto& e : report.evil_methods) {
    stack_keys[{e.message.tid, e.message.begin_ns}] = e.stack_key;
    if (!fresh(e.message.end_ns)) continue;
    const json r = EvilMethodJson(report, e);
    json j = row(U64(r, "begin_ns"));
    j["tid"] = r.at("tid");
    j["msg_id"] = MsgId(r);
    j["name"] = Text(r, "name");
    Copy(j, r, {"cost_ns", "cpu_ns", "stack_cost_ns"});
    j["stack_key"] = r.at("stackKey");
    Copy(j, r, {"stack_key_name", "beats_overwritten"});
    AddTree(j, r);
    out["evil_methods"].push_back(Dump(j));
  }
  for (const auto& m : report.messages.messages) {
    if (m.cost_ns() < slow_message_ns_ || !fresh(m.end_ns)) continue;
    const json r = MessageJson(m, true);
    json j = row(U64(r, "begin_ns"));
    Copy(j, r, {"tid", "depth"});
    j["msg_id"] = MsgId(r);
    j["name"] = Text(r, "name");
    Copy(j, r, {"cost_ns", "cpu_ns"});
    auto key = stack_keys.find({m.tid, m.begin_ns});
    j["stack_key"] = key == stack_keys.end() ? "" : key->second;
    out["slow_messages"].push_back(Dump(j));
  }

  for (const auto& s : report.stalls) {
    // A stall is taken once its message ended (or the session did).
    if (!(s.finished || final) || !fresh(s.message.end_ns)) continue;
    const json r = StallJson(report, s);
    json j = row(U64(r, "begin_ns"));
    const json& threads = r.at("threads");
    const json main = threads.empty() ? json::object() : threads.front();
    j["kind"] = r.at("type");
    j["tid"] = r.at("tid");
    j["msg_id"] = MsgId(r);
    j["name"] = Text(r, "name");
    Copy(j, r, {"threshold_ns", "cost_ns"});
    j["finished"] = Flag(r, "finished");
    j["cause"] = r.at("stuck_reason");
    j["deadlock_cycle"] = r.at("deadlock_cycle");
    j["stack_key"] = r.at("stackKey");
    j["main_user_stack"] = main.value("user_stack", json::array());
    j["main_kernel_stack"] = main.value("kernel_stack", json::array());
    json reasons = json::array(), ns = json::array();
    for (const json& reason : r.at("off_cpu_by_reason")) {
      reasons.push_back(reason.at("reason"));
      ns.push_back(reason.at("total_ns"));
    }
    j["off_cpu_reason"] = reasons;
    j["off_cpu_ns"] = ns;
    Copy(j, r, {"on_cpu_ns", "scene", "frame"});
    j["sender_pid"] = 0;
    j["sender_comm"] = "";
    j["threads"] = threads.size();
    j["process_cpu_percent"] = r.at("process_cpu_percent");
    AddTree(j, r);
    out["stalls"].push_back(Dump(j));
  }
  for (const auto& s : report.signal_anrs) {
    if (!fresh(s.signal.ts_ns)) continue;
    const json r = SignalAnrJson(report, s);
    const bool stalled = r.at("stalled").get<bool>();
    json j = row(U64(r, "ts_ns"));
    j["kind"] = r.at("type");
    j["tid"] = s.signal.target_tid;  // the record names the sender, not the thread signalled
    j["msg_id"] = MsgId(r);
    j["name"] = stalled ? r.at("name") : json("");
    j["threshold_ns"] = 0;
    j["cost_ns"] = stalled ? r.at("running_ns") : json(0);
    j["finished"] = 0;
    j["cause"] = stalled ? "signal while a message ran" : "signal while idle";
    for (const char* empty : {"deadlock_cycle", "main_user_stack", "main_kernel_stack", "off_cpu_reason", "off_cpu_ns"})
      j[empty] = json::array();
    j["stack_key"] = "";
    j["on_cpu_ns"] = 0;
    j["scene"] = r.at("scene");
    j["frame"] = "";
    Copy(j, r, {"sender_pid", "sender_comm"});
    j["threads"] = 0;
    j["process_cpu_percent"] = -1.0;
    NoTree(j);
    out["stalls"].push_back(Dump(j));
  }

  for (const auto& l : report.span_lags) {
    if (!fresh(l.end_ns)) continue;
    const json r = SpanLagJson(report, l);
    json j = row(U64(r, "begin_ns"));
    j["kind"] = r.at("type");
    Copy(j, r, {"tid", "name", "cost_ns"});
    j["sync_messages"] = 0;
    j["scene"] = r.at("scene");
    AddTree(j, r);
    out["lags"].push_back(Dump(j));
  }
  for (const auto& b : report.barrier_leaks) {
    if (!fresh(b.end_ns)) continue;
    const json r = BarrierLeakJson(b);
    json j = row(U64(r, "begin_ns"));
    j["kind"] = r.at("type");
    j["tid"] = r.at("tid");
    j["name"] = fmt::format("barrier {}", U64(r, "token"));
    j["cost_ns"] = r.at("duration_ns");
    j["sync_messages"] = r.at("sync_messages_enqueued");
    j["scene"] = "";
    NoTree(j);
    out["lags"].push_back(Dump(j));
  }

  for (const auto& f : report.frames.frames) {
    if (!f.finished || !f.deadline_missed || !fresh(f.end_ns)) continue;
    const json r = FrameJson(f);
    json j = row(U64(r, "begin_ns"));
    Copy(j, r, {"tid", "frame_id", "scene"});
    j["class"] = r.at("frozen").get<bool>() ? "frozen" : "janky";
    j["slow"] = Flag(r, "slow");
    Copy(j, r, {"total_ns", "cost_ns", "dropped_frames", "bucket", "refresh_hz", "delay_by_messages_ns"});
    json names = json::array(), ns = json::array();
    for (const json& p : r.at("phases")) {
      names.push_back(p.at("name"));
      ns.push_back(p.at("cost_ns"));
    }
    j["phase_name"] = names;
    j["phase_ns"] = ns;
    AddTree(j, r);
    out["janky_frames"].push_back(Dump(j));
  }

  const StartupReport& st = report.startup;
  if (st.seen && !cold_startup_ && (st.cold_complete || final)) {
    const json r = ColdStartJson(report);
    const json& exec = r.at("exec_ns");
    const json& app_create = r.at("app_create_begin_ns");
    json j = row(!exec.is_null()         ? exec.get<uint64_t>()
                 : !app_create.is_null() ? app_create.get<uint64_t>()
                                         : report.session.begin_ns);
    j["kind"] = "cold";
    j["scene"] = r.at("care_scene");
    j["cost_ns"] = r.at("cold_ns");
    Copy(j, r,
         {"exec_to_app_create_ns", "application_create_ns", "first_screen_ns", "cold_from_exec_ns", "ttid_ns",
          "ttfd_ns"});
    j["complete"] = Flag(r, "cold_complete");
    j["over_threshold"] = Flag(r, "over_threshold");
    j["excessive"] = Flag(r, "vitals_excessive");
    j["missing"] = r.at("missing");
    AddTree(j, r);
    out["startups"].push_back(Dump(j));
    cold_startup_ = true;
  }
  for (size_t i = warm_starts_; i < st.warm_starts.size(); ++i) {
    const WarmStart& w = st.warm_starts[i];
    if (!w.focus_ns && !final) break;  // still starting
    const json r = WarmStartJson(report, w);
    const uint64_t launch = U64(r, "launch_ns");
    const json& first_frame = r.at("first_frame_ns");
    json j = row(launch);
    j["kind"] = "warm";
    j["scene"] = r.at("application_create_scene");
    j["cost_ns"] = r.at("warm_ns");
    for (const char* zero :
         {"exec_to_app_create_ns", "application_create_ns", "first_screen_ns", "cold_from_exec_ns", "ttfd_ns"})
      j[zero] = 0;
    j["ttid_ns"] =
        !first_frame.is_null() && first_frame.get<uint64_t>() > launch ? first_frame.get<uint64_t>() - launch : 0;
    j["complete"] = r.at("focus_ns").is_null() ? 0 : 1;
    j["over_threshold"] = Flag(r, "over_threshold");
    j["excessive"] = Flag(r, "vitals_excessive");
    j["missing"] = json::array();
    AddTree(j, r);
    out["startups"].push_back(Dump(j));
    warm_starts_ = i + 1;
  }

  for (int i = 0; i < kStatCount; ++i) {
    const StatId id = static_cast<StatId>(i);
    const uint64_t now = counters.Get(id), before = counters_.Get(id);
    if (now <= before) continue;
    json j = row(end_ns);
    j["counter"] = StatName(id);
    j["severity"] = SeverityName(StatSeverityOf(id));
    j["value"] = now - before;
    out["data_quality"].push_back(Dump(j));
    counters_.Set(id, now);
  }

  if (settled != UINT64_MAX)
    watermark_ns_ = std::max(watermark_ns_, settled);
  else
    watermark_ns_ = UINT64_MAX;
  std::vector<TableRows> tables;
  for (const auto& name : ClickHouseTables()) {
    auto it = out.find(name);
    if (it != out.end() && !it->second.empty()) tables.push_back({name, std::move(it->second)});
  }
  return tables;
}

}  // namespace looptrace
