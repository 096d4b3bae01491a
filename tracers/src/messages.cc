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
  if (const EventArg* name = span.begin.Arg("name"); name && name->text) m.name = *name->text;
  m.depth = span.depth;
  m.cpu_ns = span.cpu_ns();
  return m;
}

void MessagesOptions::Declare(OptionSet& options) {
  options.Count("keep-messages", &keep_messages, 0, SIZE_MAX,
                "list only the latest N messages (default 100000; 0 = all); summaries still count every one");
}

MessagesTracer::MessagesTracer(const MessagesOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {}

namespace {

bool ByBegin(const Message& a, const Message& b) {
  return std::tie(a.begin_ns, a.tid, a.depth) < std::tie(b.begin_ns, b.tid, b.depth);
}

// The slowest-table order: cost, then as the list is sorted (ByBegin).
bool Slower(const Message& a, const Message& b) {
  if (a.cost_ns() != b.cost_ns()) return a.cost_ns() > b.cost_ns();
  return ByBegin(a, b);
}

}  // namespace

void MessagesTracer::OnSpanEnd(const Span& span) {
  if (span.kind != SpanKind::kMessage) return;
  saw_message_ = true;
  if (span.close == SpanClose::kEnded) Keep(MessageOf(span));
  else if (span.close == SpanClose::kUnfinished) unfinished_.push_back(MessageOf(span));
}

void MessagesTracer::Keep(Message m) {
  const size_t limit = options_.keep_messages;
  auto it = by_tid_.find(m.tid);  // not try_emplace: that builds an accumulator every time
  if (it == by_tid_.end()) it = by_tid_.emplace(m.tid, ThreadCosts{CostAccumulator(limit)}).first;
  ThreadCosts& thread = it->second;
  thread.costs.Add(m.cost_ns());
  if (m.depth == 0) thread.busy_ns += m.cost_ns();
  if (!m.name.empty()) {
    auto named = by_name_.find(m.name);
    if (named == by_name_.end()) named = by_name_.emplace(m.name, CostAccumulator(limit)).first;
    named->second.Add(m.cost_ns());
  }
  const size_t top_n = context_.common->top_n;
  if (slowest_.size() < top_n || Slower(m, slowest_.back())) {
    slowest_.insert(std::upper_bound(slowest_.begin(), slowest_.end(), m, Slower), m);
    if (slowest_.size() > top_n) slowest_.pop_back();
  }
  completed_.push_back(std::move(m));
  if (limit && completed_.size() > limit) {
    completed_.pop_front();
    ++not_listed_;
  }
}

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
  report.messages.assign(std::make_move_iterator(completed_.begin()), std::make_move_iterator(completed_.end()));
  completed_.clear();
  // Messages end in begin order unless nested: mostly sorted already.
  if (!std::is_sorted(report.messages.begin(), report.messages.end(), ByBegin))
    std::sort(report.messages.begin(), report.messages.end(), ByBegin);
  report.unfinished = std::move(unfinished_);
  std::sort(report.unfinished.begin(), report.unfinished.end(), ByBegin);
  report.not_listed = not_listed_;
  report.keep_limit = options_.keep_messages;

  report.threads.clear();
  for (const auto& [tid, thread] : by_tid_) {
    report.threads.push_back({tid, thread.costs.Summary(), thread.busy_ns});
    report.approximate_percentiles |= !thread.costs.exact();
  }
  report.by_name.clear();
  for (const auto& [name, costs] : by_name_) {
    report.by_name.push_back({name, costs.Summary()});
    report.approximate_percentiles |= !costs.exact();
  }
  std::stable_sort(report.by_name.begin(), report.by_name.end(),
                   [](const NamedMessages& a, const NamedMessages& b) { return a.cost.total_ns > b.cost.total_ns; });
  report.slowest = std::move(slowest_);
}

}  // namespace looptrace
