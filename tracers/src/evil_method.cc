#include "looptrace/tracers/evil_method.h"

#include <fmt/format.h>

#include <algorithm>

#include "looptrace/tracers/matrix_compat.h"

namespace looptrace {

EvilMethodTracer::EvilMethodTracer(EvilMethodOptions options, Stats* stats, const MethodNamer* namer)
    : options_(options), stats_(stats), namer_(namer) {}

void EvilMethodTracer::OnBeats(const MethodBeats& beats) {
  if (beats.span == "message") pending_[beats.tid] = beats;
}

std::string NameMethod(const MethodNamer* namer, const MethodBeats* beats, uint64_t id, Stats* stats) {
  if (id == kDispatchMethodId) return "";
  if (beats) {
    if (auto it = beats->names.find(id); it != beats->names.end()) return it->second;
  }
  MethodIdKind kind = beats ? beats->kind : MethodIdKind::kId;
  if (namer) {
    if (auto name = namer->Name(kind, id)) return *name;
  }
  stats->Add(StatId::method_names_unknown);
  return kind == MethodIdKind::kId ? fmt::format("method#{}", id) : fmt::format("{:#x}", id);
}

std::string EvilMethodTracer::NameOf(const MethodBeats* beats, uint64_t id) {
  return NameMethod(namer_, beats, id, stats_);
}

namespace {

// Matrix's clock: milliseconds; the slice starts with the DISPATCH enter at the message
// begin and ends with its exit (UIThreadMonitor's records), times relative to `base_ns`.
std::vector<int64_t> ToMatrixRecords(const MethodBeats& beats, const Message& m, uint64_t base_ns) {
  auto ms = [&](uint64_t ts) { return static_cast<int64_t>((ts - std::min(ts, base_ns)) / 1'000'000); };
  std::vector<int64_t> records;
  records.push_back(matrix::EncodeRecord(true, matrix::kMethodIdDispatch, ms(m.begin_ns)));
  for (const auto& b : beats.beats) {
    if (b.id >= static_cast<uint64_t>(matrix::kMethodIdMax)) continue;  // i()/o() ignore these
    records.push_back(matrix::EncodeRecord(b.enter, static_cast<int>(b.id), ms(b.ts_ns)));
  }
  records.push_back(matrix::EncodeRecord(false, matrix::kMethodIdDispatch, ms(m.end_ns)));
  return records;
}

}  // namespace

void EvilMethodTracer::OnMessage(const Message& message, const std::string& process) {
  auto pending = pending_.find(message.tid);
  const MethodBeats* beats = nullptr;
  if (pending != pending_.end() && pending->second.begin_ns == message.begin_ns)
    beats = &pending->second;
  if (message.cost_ns() < options_.threshold_ns) {
    if (beats) pending_.erase(pending);
    return;
  }

  EvilMethodReport report;
  report.message = message;
  report.process = process;
  report.has_beats = beats != nullptr;
  if (beats) {
    report.kind = beats->kind;
    report.beats_overwritten = beats->overwritten;
    if (beats->overwritten) stats_->Add(StatId::method_beats_overwritten, beats->overwritten);
  }

  if (options_.matrix_compat && beats && beats->kind == MethodIdKind::kId) {
    report.matrix_compat = true;
    const uint64_t base_ns = message.begin_ns - message.begin_ns % 1'000'000'000;
    auto records = ToMatrixRecords(*beats, message, base_ns);
    const int64_t end_ms = static_cast<int64_t>((message.end_ns - base_ns) / 1'000'000);
    auto stack = matrix::StructuredDataToStack(records, /*strict=*/true, end_ms);
    report.nodes_before_trim = stack.size();
    matrix::TrimStack(stack, static_cast<int>(options_.max_nodes));
    int64_t max_ms = 0;
    report.matrix_stack = matrix::StackToString(stack, &max_ms);
    const int64_t dispatch_ms = static_cast<int64_t>(message.cost_ns() / 1'000'000);
    const int64_t stack_cost = std::max(dispatch_ms, max_ms);
    report.matrix_cost_ms = static_cast<uint64_t>(stack_cost);
    report.stack_cost_ns = static_cast<uint64_t>(stack_cost) * 1'000'000;
    report.stack_key = matrix::GetTreeKey(stack, stack_cost);
    for (const auto& item : stack) {
      CallNode node;
      node.id = static_cast<uint64_t>(item.method_id);
      node.depth = static_cast<uint32_t>(item.depth);
      node.count = static_cast<uint32_t>(item.count);
      node.cost_ns = static_cast<uint64_t>(item.duration_ms) * 1'000'000;
      report.tree.push_back({node, NameOf(beats, node.id)});
    }
  } else {
    std::vector<CallNode> nodes;
    if (beats) {
      nodes = BuildCallTree(*beats, options_.tree, stats_);
    } else {
      CallNode root;
      root.id = kDispatchMethodId;
      root.begin_ns = message.begin_ns;
      root.cost_ns = message.cost_ns();
      nodes.push_back(root);
    }
    report.nodes_before_trim = nodes.size();
    TrimCallTree(&nodes, std::max<size_t>(options_.max_nodes, 1));
    uint64_t max_cost = 0;
    for (const auto& n : nodes) max_cost = std::max(max_cost, n.cost_ns);
    report.stack_cost_ns = std::max(message.cost_ns(), max_cost);
    if (const CallNode* key = StackKeyNode(nodes, report.stack_cost_ns)) {
      report.stack_key = (beats && beats->kind != MethodIdKind::kId && key->id != kDispatchMethodId)
                             ? fmt::format("{:#x}|", key->id)
                             : fmt::format("{}|", key->id);
      report.stack_key_name = NameOf(beats, key->id);
    }
    for (const auto& n : nodes) {
      report.matrix_stack += fmt::format("{},{},{},{}\n", n.depth, n.id, n.count, n.cost_ns / 1'000'000);
      report.tree.push_back({n, NameOf(beats, n.id)});
    }
    report.matrix_cost_ms = report.stack_cost_ns / 1'000'000;
  }
  if (report.matrix_compat) {
    for (const auto& n : report.tree)
      if (report.stack_key == fmt::format("{}|", n.node.id)) report.stack_key_name = n.name;
  }
  reports_.push_back(std::move(report));
  if (beats) pending_.erase(pending);
}

}  // namespace looptrace
