#include "looptrace/tracers/evil_method.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "looptrace/tracers/matrix_compat.h"
#include "looptrace/tracers/messages.h"
#include "looptrace/tracers/sample_store.h"
#include "looptrace/tracers/stall_causes.h"

namespace looptrace {

void EvilMethodOptions::Declare(OptionSet& options) {
  options.Flag("matrix-compat", &matrix_compat, "reproduce Matrix's stack algorithm exactly (ms clock, its quirks)");
}

EvilMethodTracer::EvilMethodTracer(const EvilMethodOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {}

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

void EvilMethodTracer::ReportSlow(const Span& span) {
  const Message message = MessageOf(span);
  const MethodBeats* beats = span.beats;
  Stats* stats = context_.stats;
  const size_t max_nodes = context_.common->max_nodes;

  EvilMethodReport report;
  report.message = message;
  report.process = context_.session->command;
  report.has_beats = beats != nullptr;
  if (beats) {
    report.kind = beats->kind;
    report.beats_overwritten = beats->overwritten;
    if (beats->overwritten) stats->Add(StatId::method_beats_overwritten, beats->overwritten);
  }

  if (options_.matrix_compat && beats && beats->kind == MethodIdKind::kId) {
    report.matrix_compat = true;
    const uint64_t base_ns = message.begin_ns - message.begin_ns % 1'000'000'000;
    auto records = ToMatrixRecords(*beats, message, base_ns);
    const int64_t end_ms = static_cast<int64_t>((message.end_ns - base_ns) / 1'000'000);
    auto stack = matrix::StructuredDataToStack(records, /*strict=*/true, end_ms);
    report.nodes_before_trim = stack.size();
    matrix::TrimStack(stack, static_cast<int>(max_nodes));
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
      report.tree.push_back({node, NameMethod(context_.namer, beats, node.id, stats)});
    }
    for (const auto& n : report.tree)
      if (report.stack_key == fmt::format("{}|", n.node.id)) report.stack_key_name = n.name;
  } else if (beats) {
    NamedCallTree tree = BuildNamedCallTree(*beats, max_nodes, message.cost_ns(), context_.namer, stats, options_.tree);
    report.nodes_before_trim = tree.nodes_before_trim;
    report.stack_cost_ns = tree.stack_cost_ns;
    report.stack_key = std::move(tree.stack_key);
    report.stack_key_name = std::move(tree.stack_key_name);
    report.tree = std::move(tree.nodes);
    for (const auto& n : report.tree)
      report.matrix_stack +=
          fmt::format("{},{},{},{}\n", n.node.depth, n.node.id, n.node.count, n.node.cost_ns / 1'000'000);
    report.matrix_cost_ms = report.stack_cost_ns / 1'000'000;
  } else {
    // No method beats (the profile maps no method roles): the message alone, no stackKey.
    CallNode root;
    root.id = kDispatchMethodId;
    root.begin_ns = message.begin_ns;
    root.cost_ns = message.cost_ns();
    report.nodes_before_trim = 1;
    report.tree.push_back({root, ""});
    report.stack_cost_ns = message.cost_ns();
    report.matrix_cost_ms = report.stack_cost_ns / 1'000'000;
  }
  if (context_.causes) report.causes = context_.causes->Within(span.tid, span.begin_ns, span.end_ns, *context_.spans);
  if (context_.samples) report.sampled = context_.samples->TreeOf(span);
  if (message.depth > 0) {
    nested_.push_back(std::move(report));  // the outer message, slower still, ends later
    return;
  }
  // The slow messages nested in this one are this event: listed in it, not counted again.
  for (auto it = nested_.begin(); it != nested_.end();) {
    const Message& inner = it->message;
    if (inner.tid == message.tid && inner.begin_ns >= message.begin_ns && inner.end_ns <= message.end_ns) {
      report.nested.push_back(inner);
      it = nested_.erase(it);
    } else {
      ++it;
    }
  }
  std::stable_sort(report.nested.begin(), report.nested.end(), [](const Message& a, const Message& b) {
    return std::tie(a.begin_ns, a.depth) < std::tie(b.begin_ns, b.depth);
  });
  reports_.push_back(std::move(report));
}

void EvilMethodTracer::Contribute(Report& report) {
  report.evil_threshold_ns = context_.common->evil_threshold_ns;
  // Nested ones whose outer message never ended (the session ended inside it): on their own,
  // among the others in the order they ended.
  if (!nested_.empty()) {
    for (auto& inner : nested_) reports_.push_back(std::move(inner));
    nested_.clear();
    std::stable_sort(reports_.begin(), reports_.end(), [](const EvilMethodReport& a, const EvilMethodReport& b) {
      return a.message.end_ns < b.message.end_ns;
    });
  }
  report.evil_methods = std::move(reports_);
}

}  // namespace looptrace
