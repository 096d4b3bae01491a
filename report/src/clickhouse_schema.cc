// The tables the ClickHouse rows go to, as CREATE statements (declared in clickhouse_rows.h).
#include <fmt/format.h>

#include <string_view>

#include "looptrace/report/clickhouse_rows.h"

namespace looptrace {
namespace {

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

}  // namespace looptrace
