#include "looptrace/report/clickhouse_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace looptrace {
namespace {

using nlohmann::json;

constexpr const char* kIdentityColumns = R"(    host String,
    target String,
    pid UInt32,
    session_id String,
    build String,
    time DateTime,
    time_ns UInt64,)";

constexpr const char* kTreeColumns = R"(,
    tree_depth Array(UInt32),
    tree_name Array(String),
    tree_count Array(UInt32),
    tree_cost_ns Array(UInt64))";

struct TableSpec {
  const char* name;
  const char* comment;
  const char* columns;
  bool tree;
};

const TableSpec kTables[] = {
    {"sessions", "one row per session, replaced as it goes (query with FINAL or argMax)",
     R"(
    profile String,
    end_reason String,
    end_time DateTime,
    duration_ns UInt64,
    messages UInt64,
    busy_ns UInt64,
    anrs UInt32,
    lags UInt32,
    evil_methods UInt32,
    frames UInt64,
    janky_frames UInt64,
    data_loss UInt64,
    updated DateTime)",
     false},
    {"message_summaries", "per thread and flush interval: every message is counted in exactly one row",
     R"(
    tid UInt32,
    interval_ns UInt64,
    count UInt64,
    total_ns UInt64,
    busy_ns UInt64,
    min_ns UInt64,
    p50_ns UInt64,
    p90_ns UInt64,
    p99_ns UInt64,
    max_ns UInt64)",
     false},
    {"slow_messages", "messages at least --clickhouse-slow-threshold long (default 100 ms)",
     R"(
    tid UInt32,
    depth UInt32,
    msg_id Int64,
    name String,
    cost_ns UInt64,
    cpu_ns UInt64,
    stack_key String)",
     false},
    {"evil_methods", "slow messages (>= --evil-threshold) with their call tree and Matrix's stackKey",
     R"(
    tid UInt32,
    msg_id Int64,
    name String,
    cost_ns UInt64,
    cpu_ns UInt64,
    stack_cost_ns UInt64,
    stack_key String,
    stack_key_name String,
    beats_overwritten UInt64)",
     true},
    {"stalls", "ANR and LAG snapshots (with their cause), SIGQUITs from outside (signal_anr) and from the target",
     R"(
    kind String,
    tid UInt32,
    msg_id Int64,
    name String,
    threshold_ns UInt64,
    cost_ns UInt64,
    finished UInt8,
    cause String,
    deadlock_cycle Array(UInt32),
    stack_key String,
    main_user_stack Array(String),
    main_kernel_stack Array(String),
    off_cpu_reason Array(String),
    off_cpu_ns Array(UInt64),
    on_cpu_ns UInt64,
    scene String,
    frame String,
    sender_pid UInt32,
    sender_comm String,
    threads UInt32,
    process_cpu_percent Float64)",
     true},
    {"lags", "slow IdleHandlers (idle_lag), input events (input_lag) and sync barriers left standing (barrier_leak)",
     R"(
    kind String,
    tid UInt32,
    name String,
    cost_ns UInt64,
    sync_messages UInt64,
    scene String)",
     true},
    {"janky_frames", "frames that missed their deadline (class janky or frozen)",
     R"(
    tid UInt32,
    frame_id UInt64,
    scene String,
    class String,
    slow UInt8,
    total_ns UInt64,
    cost_ns UInt64,
    dropped_frames UInt64,
    bucket String,
    refresh_hz Float64,
    delay_by_messages_ns UInt64,
    phase_name Array(String),
    phase_ns Array(UInt64))",
     true},
    {"startups", "the cold start (Matrix's StartupTracer and what it cannot see) and warm starts",
     R"(
    kind String,
    scene String,
    cost_ns UInt64,
    exec_to_app_create_ns UInt64,
    application_create_ns UInt64,
    first_screen_ns UInt64,
    cold_from_exec_ns UInt64,
    ttid_ns UInt64,
    ttfd_ns UInt64,
    complete UInt8,
    over_threshold UInt8,
    excessive UInt8,
    missing Array(String))",
     true},
    {"data_quality", "loss and degradation counters: what each flush added",
     R"(
    counter String,
    severity String,
    value UInt64)",
     false},
};

void AddTree(json& j, const std::vector<NamedCallNode>& tree) {
  json depth = json::array(), name = json::array(), count = json::array(), cost = json::array();
  for (const auto& n : tree) {
    depth.push_back(n.node.depth);
    name.push_back(n.name);
    count.push_back(n.node.count);
    cost.push_back(n.node.cost_ns);
  }
  j["tree_depth"] = depth;
  j["tree_name"] = name;
  j["tree_count"] = count;
  j["tree_cost_ns"] = cost;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

int64_t MsgId(const std::optional<uint64_t>& id) { return id ? static_cast<int64_t>(*id) : -1; }

}  // namespace

const std::vector<std::string>& ClickHouseTables() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& t : kTables) names.push_back(t.name);
    return names;
  }();
  return kNames;
}

std::string ClickHouseSchema(const std::string& database) {
  std::string out = fmt::format(
      "-- looptrace report rows (ClickHouse 18.16 or later): `looptrace attach --clickhouse URL` inserts\n"
      "-- into these tables with INSERT ... FORMAT JSONEachRow over the HTTP interface.\n"
      "-- Every table starts with the same identity columns and is ordered by (host, target, time).\n"
      "--\n"
      "-- A cluster: create each table ON CLUSTER with ReplicatedMergeTree (or keep MergeTree per\n"
      "-- shard) under a local name, e.g. {0}.stalls_local, and a Distributed table named as below\n"
      "-- over it, e.g. ENGINE = Distributed(my_cluster, {0}, stalls_local, rand()); hosts insert\n"
      "-- into the Distributed tables and queries read them.\n\n"
      "CREATE DATABASE IF NOT EXISTS {0};\n",
      database);
  for (const auto& t : kTables) {
    const bool sessions = std::string_view(t.name) == "sessions";
    out += fmt::format(
        "\n-- {}\nCREATE TABLE IF NOT EXISTS {}.{}\n(\n{}{}{}\n)\nENGINE = {}\nPARTITION BY {}\nORDER BY {};\n",
        t.comment, database, t.name, kIdentityColumns, t.columns, t.tree ? kTreeColumns : "",
        sessions ? "ReplacingMergeTree(updated)" : "MergeTree()", sessions ? "toYYYYMM(time)" : "toYYYYMMDD(time)",
        sessions ? "(host, target, time, session_id)" : "(host, target, time)");
  }
  return out;
}

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

  std::map<std::pair<uint32_t, uint64_t>, std::string> stack_keys;  // (tid, begin) of evil methods
  for (const auto& e : report.evil_methods) {
    stack_keys[{e.message.tid, e.message.begin_ns}] = e.stack_key;
    if (!fresh(e.message.end_ns)) continue;
    json j = row(e.message.begin_ns);
    j["tid"] = e.message.tid;
    j["msg_id"] = MsgId(e.message.msg_id);
    j["name"] = e.message.name;
    j["cost_ns"] = e.message.cost_ns();
    j["cpu_ns"] = e.message.cpu_ns;
    j["stack_cost_ns"] = e.stack_cost_ns;
    j["stack_key"] = e.stack_key;
    j["stack_key_name"] = e.stack_key_name;
    j["beats_overwritten"] = e.beats_overwritten;
    AddTree(j, e.tree);
    out["evil_methods"].push_back(Dump(j));
  }
  for (const auto& m : report.messages.messages) {
    if (m.cost_ns() < slow_message_ns_ || !fresh(m.end_ns)) continue;
    json j = row(m.begin_ns);
    j["tid"] = m.tid;
    j["depth"] = m.depth;
    j["msg_id"] = MsgId(m.msg_id);
    j["name"] = m.name;
    j["cost_ns"] = m.cost_ns();
    j["cpu_ns"] = m.cpu_ns;
    auto key = stack_keys.find({m.tid, m.begin_ns});
    j["stack_key"] = key == stack_keys.end() ? "" : key->second;
    out["slow_messages"].push_back(Dump(j));
  }

  for (const auto& s : report.stalls) {
    // A stall is taken once its message ended (or the session did).
    if (!(s.finished || final) || !fresh(s.message.end_ns)) continue;
    json j = row(s.message.begin_ns);
    const ThreadSnapshot* self = s.snapshot.threads.empty() ? nullptr : &s.snapshot.threads.front();
    j["kind"] = s.anr ? "anr" : "lag";
    j["tid"] = s.message.tid;
    j["msg_id"] = MsgId(s.message.msg_id);
    j["name"] = s.message.name;
    j["threshold_ns"] = s.threshold_ns;
    j["cost_ns"] = s.message.cost_ns();
    j["finished"] = s.finished ? 1 : 0;
    j["cause"] = s.stuck_reason;
    j["deadlock_cycle"] = s.deadlock_cycle;
    j["stack_key"] = s.stack_key;
    j["main_user_stack"] = self ? self->user_stack : std::vector<std::string>{};
    j["main_kernel_stack"] = self ? self->kernel_stack : std::vector<std::string>{};
    json reasons = json::array(), ns = json::array();
    for (const auto& r : s.off_cpu_by_reason) {
      reasons.push_back(r.reason);
      ns.push_back(r.total_ns);
    }
    j["off_cpu_reason"] = reasons;
    j["off_cpu_ns"] = ns;
    j["on_cpu_ns"] = s.on_cpu_ns;
    j["scene"] = s.scene;
    j["frame"] = s.frame;
    j["sender_pid"] = 0;
    j["sender_comm"] = "";
    j["threads"] = s.snapshot.threads.size();
    j["process_cpu_percent"] = s.snapshot.process_cpu_percent;
    AddTree(j, s.tree);
    out["stalls"].push_back(Dump(j));
  }
  for (const auto& s : report.signal_anrs) {
    if (!fresh(s.signal.ts_ns)) continue;
    json j = row(s.signal.ts_ns);
    j["kind"] = s.from_self ? "self_sigquit" : "signal_anr";
    j["tid"] = s.signal.target_tid;
    j["msg_id"] = s.stalled ? MsgId(s.message.msg_id) : -1;
    j["name"] = s.stalled ? s.message.name : "";
    j["threshold_ns"] = 0;
    j["cost_ns"] = s.stalled ? s.message.cost_ns() : 0;
    j["finished"] = 0;
    j["cause"] = s.stalled ? "signal while a message ran" : "signal while idle";
    j["deadlock_cycle"] = json::array();
    j["stack_key"] = "";
    j["main_user_stack"] = json::array();
    j["main_kernel_stack"] = json::array();
    j["off_cpu_reason"] = json::array();
    j["off_cpu_ns"] = json::array();
    j["on_cpu_ns"] = 0;
    j["scene"] = s.scene;
    j["frame"] = "";
    j["sender_pid"] = s.signal.sender_pid;
    j["sender_comm"] = s.signal.sender_comm;
    j["threads"] = 0;
    j["process_cpu_percent"] = -1.0;
    AddTree(j, {});
    out["stalls"].push_back(Dump(j));
  }

  for (const auto& l : report.span_lags) {
    if (!fresh(l.end_ns)) continue;
    json j = row(l.begin_ns);
    j["kind"] = l.kind;
    j["tid"] = l.tid;
    j["name"] = l.name;
    j["cost_ns"] = l.end_ns - l.begin_ns;
    j["sync_messages"] = 0;
    j["scene"] = l.scene;
    AddTree(j, l.tree);
    out["lags"].push_back(Dump(j));
  }
  for (const auto& b : report.barrier_leaks) {
    if (!fresh(b.end_ns)) continue;
    json j = row(b.begin_ns);
    j["kind"] = "barrier_leak";
    j["tid"] = b.tid;
    j["name"] = fmt::format("barrier {}", b.token);
    j["cost_ns"] = b.end_ns - b.begin_ns;
    j["sync_messages"] = b.sync_messages_enqueued;
    j["scene"] = "";
    AddTree(j, {});
    out["lags"].push_back(Dump(j));
  }

  for (const auto& f : report.frames.frames) {
    if (!f.finished || !f.deadline_missed || !fresh(f.end_ns)) continue;
    json j = row(f.begin_ns);
    j["tid"] = f.tid;
    j["frame_id"] = f.frame_id;
    j["scene"] = f.scene;
    j["class"] = f.frozen ? "frozen" : "janky";
    j["slow"] = f.slow ? 1 : 0;
    j["total_ns"] = f.total_ns();
    j["cost_ns"] = f.cost_ns();
    j["dropped_frames"] = f.dropped_frames;
    j["bucket"] = f.bucket;
    j["refresh_hz"] = f.refresh_hz;
    j["delay_by_messages_ns"] = f.delay_by_messages_ns;
    json names = json::array(), ns = json::array();
    for (const auto& p : f.phases) {
      names.push_back(p.name);
      ns.push_back(p.cost_ns());
    }
    j["phase_name"] = names;
    j["phase_ns"] = ns;
    AddTree(j, f.tree);
    out["janky_frames"].push_back(Dump(j));
  }

  const StartupReport& st = report.startup;
  if (st.seen && !cold_startup_ && (st.cold_complete || final)) {
    uint64_t at = st.exec_ns ? *st.exec_ns : st.app_create_begin_ns ? *st.app_create_begin_ns : report.session.begin_ns;
    json j = row(at);
    j["kind"] = "cold";
    j["scene"] = st.care_scene;
    j["cost_ns"] = st.cold_ns;
    j["exec_to_app_create_ns"] = st.exec_to_app_create_ns;
    j["application_create_ns"] = st.application_create_ns;
    j["first_screen_ns"] = st.first_screen_ns;
    j["cold_from_exec_ns"] = st.cold_from_exec_ns;
    j["ttid_ns"] = st.ttid_ns;
    j["ttfd_ns"] = st.ttfd_ns;
    j["complete"] = st.cold_complete ? 1 : 0;
    j["over_threshold"] = st.over_threshold ? 1 : 0;
    j["excessive"] = st.excessive ? 1 : 0;
    j["missing"] = st.missing;
    AddTree(j, st.tree);
    out["startups"].push_back(Dump(j));
    cold_startup_ = true;
  }
  for (size_t i = warm_starts_; i < st.warm_starts.size(); ++i) {
    const WarmStart& w = st.warm_starts[i];
    if (!w.focus_ns && !final) break;  // still starting
    json j = row(w.launch_ns);
    j["kind"] = "warm";
    j["scene"] = w.activity;
    j["cost_ns"] = w.cost_ns();
    for (const char* zero :
         {"exec_to_app_create_ns", "application_create_ns", "first_screen_ns", "cold_from_exec_ns", "ttfd_ns"})
      j[zero] = 0;
    j["ttid_ns"] = w.first_frame_ns > w.launch_ns ? w.first_frame_ns - w.launch_ns : 0;
    j["complete"] = w.focus_ns ? 1 : 0;
    j["over_threshold"] = w.over_threshold ? 1 : 0;
    j["excessive"] = w.excessive ? 1 : 0;
    j["missing"] = json::array();
    AddTree(j, w.tree);
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
