#include "looptrace/tracers/messages.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
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

void MessagesOptions::Declare(OptionSet& options) {
  options.Count("keep-messages", &keep_messages, 0, SIZE_MAX,
                "completed messages kept one by one for JSON records and timelines (the most "
                "recent; 0 = all); counts and percentiles always cover every message");
}

MessagesTracer::MessagesTracer(const MessagesOptions& options, const TracerContext& context)
    : options_(options), context_(context) {}

namespace {

bool ByBegin(const Message& a, const Message& b) {
  return std::tie(a.begin_ns, a.tid, a.depth) < std::tie(b.begin_ns, b.tid, b.depth);
}

// Slower first; equal costs by begin (the order of a stable sort by cost of messages
// ordered by begin).
bool Slower(const Message& a, const Message& b) {
  const uint64_t ca = a.cost_ns(), cb = b.cost_ns();
  if (ca != cb) return ca > cb;
  return ByBegin(a, b);
}

}  // namespace

void MessagesTracer::OnSpanEnd(const Span& span) {
  if (span.kind != SpanKind::kMessage) return;
  saw_message_ = true;
  if (span.close == SpanClose::kEnded) AddCompleted(MessageOf(span));
  else if (span.close == SpanClose::kUnfinished) unfinished_.push_back(MessageOf(span));
}

void MessagesTracer::AddCompleted(Message m) {
  const uint64_t cost = m.cost_ns();
  ThreadAggregate& t = threads_[m.tid];
  t.cost.Add(cost);
  if (m.depth == 0) t.busy_ns += cost;
  if (!m.name.empty()) {
    auto it = names_.find(m.name);
    if (it != names_.end()) {
      it->second.Add(cost);
    } else if (names_.size() < kMaxMessageNames) {
      names_[m.name].Add(cost);
    } else {
      other_names_.Add(cost);
      if (context_.stats) context_.stats->Add(StatId::message_names_aggregated);
    }
  }

  const size_t top_n = context_.common ? context_.common->top_n : 10;
  if (slowest_.size() < top_n) {
    slowest_.push_back(m);
    std::push_heap(slowest_.begin(), slowest_.end(), Slower);
  } else if (top_n > 0 && Slower(m, slowest_.front())) {
    std::pop_heap(slowest_.begin(), slowest_.end(), Slower);
    slowest_.back() = m;
    std::push_heap(slowest_.begin(), slowest_.end(), Slower);
  }

  if (options_.keep_messages != 0 && recent_.size() >= options_.keep_messages) {
    recent_.pop_front();
    ++not_kept_;
    if (context_.stats) context_.stats->Add(StatId::messages_not_kept);
  }
  recent_.push_back(std::move(m));
}

size_t MessagesTracer::RetainedBytes() const {
  auto message_bytes = [](const Message& m) {
    return sizeof(Message) + (m.name.capacity() > 15 ? m.name.capacity() + 1 : 0);
  };
  size_t bytes = slowest_.capacity() * sizeof(Message) + unfinished_.capacity() * sizeof(Message);
  for (const Message& m : recent_) bytes += message_bytes(m);
  for (const auto& [tid, t] : threads_) bytes += sizeof(t) + t.cost.bytes() + 48;
  for (const auto& [name, h] : names_) bytes += name.capacity() + sizeof(h) + h.bytes() + 64;
  return bytes + other_names_.bytes();
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
  report.messages.assign(std::make_move_iterator(recent_.begin()), std::make_move_iterator(recent_.end()));
  recent_.clear();
  std::sort(report.messages.begin(), report.messages.end(), ByBegin);
  report.unfinished = std::move(unfinished_);
  std::sort(report.unfinished.begin(), report.unfinished.end(), ByBegin);
  report.not_kept = not_kept_;
  report.percentiles_from_histogram = not_kept_ > 0;

  report.slowest = std::move(slowest_);
  std::sort(report.slowest.begin(), report.slowest.end(), Slower);

  if (report.percentiles_from_histogram) {
    // Some messages are gone: exact counts and totals, percentiles from the histograms.
    report.threads.clear();
    for (const auto& [tid, t] : threads_) report.threads.push_back({tid, t.cost.Summary(), t.busy_ns});
    report.by_name.clear();
    for (const auto& [name, h] : names_) report.by_name.push_back({name, h.Summary()});
    std::sort(report.by_name.begin(), report.by_name.end(),
              [](const NamedMessages& a, const NamedMessages& b) { return a.name < b.name; });
    if (other_names_.count()) report.by_name.push_back({kOtherNamesRow, other_names_.Summary()});
    std::stable_sort(report.by_name.begin(), report.by_name.end(),
                     [](const NamedMessages& a, const NamedMessages& b) { return a.cost.total_ns > b.cost.total_ns; });
    return;
  }

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
  std::vector<uint64_t> other_costs;
  for (auto& [name, costs] : costs_by_name) {
    // Every message is kept: exact percentiles, with the same name cap as the histograms.
    if (names_.contains(name)) report.by_name.push_back({name, SummarizeCosts(std::move(costs))});
    else other_costs.insert(other_costs.end(), costs.begin(), costs.end());
  }
  if (!other_costs.empty()) report.by_name.push_back({kOtherNamesRow, SummarizeCosts(std::move(other_costs))});
  std::stable_sort(report.by_name.begin(), report.by_name.end(),
                   [](const NamedMessages& a, const NamedMessages& b) { return a.cost.total_ns > b.cost.total_ns; });
}

}  // namespace looptrace
