// Reports are plain data built by tracers, then rendered (text, JSON lines).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/stats.h"

namespace looptrace {

struct SessionInfo {
  uint32_t pid = 0;
  std::string command;
  std::string profile;
  std::string thread_filter = "main";
  uint64_t begin_ns = 0;      // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  uint64_t wall_time_ns = 0;  // CLOCK_REALTIME at begin
  std::string end_reason;
  std::vector<ProbeDescription> probes;
  DeviceInfo device;

  uint64_t duration_ns() const { return end_ns > begin_ns ? end_ns - begin_ns : 0; }
};

// One dispatched message (a looper work unit).
struct Message {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;  // for unfinished messages: the session end
  std::optional<uint64_t> msg_id;
  std::string name;     // empty when the profile binds no name
  uint32_t depth = 0;   // > 0 for a message dispatched inside another (nested loop)
  uint64_t cpu_ns = 0;  // the thread's CPU time during the message (0 = unknown)

  uint64_t cost_ns() const { return end_ns - begin_ns; }
};

// Nearest-rank percentiles over message costs.
struct CostSummary {
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p90_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t max_ns = 0;
  uint64_t mean_ns = 0;
};

CostSummary SummarizeCosts(std::vector<uint64_t> costs);

struct ThreadMessages {
  uint32_t tid = 0;
  CostSummary cost;
  uint64_t busy_ns = 0;  // time inside top-level messages (nested ones not double counted)
};

struct NamedMessages {
  std::string name;
  CostSummary cost;
};

struct MessagesReport {
  bool enabled = false;                 // false when the profile maps no dispatch roles
  std::vector<Message> messages;        // completed, ordered by (begin_ns, tid)
  std::vector<ThreadMessages> threads;  // ordered by tid
  std::vector<Message> slowest;         // top N by cost, ties by begin_ns
  std::vector<NamedMessages> by_name;   // ordered by total cost, then name
  std::vector<Message> unfinished;      // still running at session end
};

// A call-tree node with its display name.
struct NamedCallNode {
  CallNode node;
  std::string name;
};

struct EvilMethodReport {
  Message message;
  std::string process;
  bool has_beats = false;             // false: the profile maps no method roles
  MethodIdKind kind = MethodIdKind::kId;
  std::vector<NamedCallNode> tree;    // pre-order, trimmed; root = the message
  size_t nodes_before_trim = 0;
  uint64_t stack_cost_ns = 0;         // max(message cost, costliest node)
  std::string stack_key;              // Matrix's "<id>|"
  std::string stack_key_name;
  uint64_t beats_overwritten = 0;
  bool matrix_compat = false;
  std::string matrix_stack;           // Matrix's "depth,methodId,count,cost\n" lines (ms)
  uint64_t matrix_cost_ms = 0;        // Matrix's "cost"
};

struct Report {
  SessionInfo session;
  MessagesReport messages;
  uint64_t evil_threshold_ns = 0;
  std::vector<EvilMethodReport> evil_methods;
  Stats stats;
};

}  // namespace looptrace
