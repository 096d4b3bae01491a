#include "looptrace/tracers/messages.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace looptrace {

Message MessageOf(const Span& span) {
  Message m;
  m.tid = span.tid;
  m.begin_ns = span.begin_ns;
  m.end_ns = std::max(span.end_ns, span.begin_ns);
  if (span.begin.Arg("id")) m.msg_id = span.key;
  m.name = span.ArgText("name");
  m.depth = span.depth;
  m.cpu_ns = span.cpu_ns();
  return m;
}

MessagesTracer::MessagesTracer(const MessagesOptions&, const TracerContext& context) : context_(context) {}

void MessagesTracer::OnSpanEnd(const Span& span) {
  if (span.kind != SpanKind::kMessage) return;
  saw_message_ = true;
  if (span.close == SpanClose::kEnded) completed_.push_back(MessageOf(span));
  else if (span.close == SpanClose::kUnfinished) unfinished_.push_back(MessageOf(span));
}

namespace {

bool ByBegin(const Message& a, const Message& b) {
  return std::tie(a.begin_ns, a.tid, a.depth) < std::tie(b.begin_ns, b.tid, b.depth);
}

}  // namespace

CostSummary SummarizeCosts(std::vector<uint64_t> costs) {
  CostSummary s;
  if (costs.empty()) return s;
  std::sort(costs.begin(), costs.end());
  s.count = costs.size();
  for (uint64_t c : costs) s.total_ns += c;
  s.min_ns = costs.front();
  s.max_ns = costs.back();
  s.mean_ns = s.total_ns / s.count;
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  auto rank = [&](unsigned percent) {
    size_t r = (costs.size() * percent + 99) / 100;
    return costs[std::max<size_t>(r, 1) - 1];
  };
  s.p50_ns = rank(50);
  s.p90_ns = rank(90);
  s.p99_ns = rank(99);
  return s;
}

void MessagesTracer::Contribute(Report& r) {
  MessagesReport& report = r.messages;
  bool profiled = false;
  for (const auto& p : context_.session->probes)
    profiled |= p.role == Role::kDispatchBegin ||
                (p.role == Role::kPollBegin && context_.spans->message_definition() == MessageDefinition::kPollBounded);
  report.enabled = saw_message_ || profiled;
  report.messages = std::move(completed_);
  std::sort(report.messages.begin(), report.messages.end(), ByBegin);
  report.unfinished = std::move(unfinished_);
  std::sort(report.unfinished.begin(), report.unfinished.end(), ByBegin);

  std::map<uint32_t, std::vector<uint64_t>> costs_by_tid;
  std::map<uint32_t, uint64_t> busy_by_tid;
  std::map<std::string, std::vector<uint64_t>> costs_by_name;
  for (const Message& m : report.messages) {
    costs_by_tid[m.tid].push_back(m.cost_ns());
    if (m.depth == 0) busy_by_tid[m.tid] += m.cost_ns();
    if (!m.name.empty()) costs_by_name[m.name].push_back(m.cost_ns());
  }
  report.threads.clear();
  for (auto& [tid, costs] : costs_by_tid)
    report.threads.push_back({tid, SummarizeCosts(std::move(costs)), busy_by_tid[tid]});

  report.by_name.clear();
  for (auto& [name, costs] : costs_by_name) report.by_name.push_back({name, SummarizeCosts(std::move(costs))});
  std::stable_sort(report.by_name.begin(), report.by_name.end(),
                   [](const NamedMessages& a, const NamedMessages& b) { return a.cost.total_ns > b.cost.total_ns; });

  report.slowest = report.messages;
  std::stable_sort(report.slowest.begin(), report.slowest.end(),
                   [](const Message& a, const Message& b) { return a.cost_ns() > b.cost_ns(); });
  if (report.slowest.size() > context_.common->top_n) report.slowest.resize(context_.common->top_n);
}

}  // namespace looptrace
