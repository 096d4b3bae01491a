#include "looptrace/tracers/messages.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace looptrace {

void MessagesOptions::Declare(OptionSet& options) {
  options.Count("keep-messages", &keep_messages, 0, SIZE_MAX,
                "list only the latest N messages (default 100000; 0 = all); summaries still count every one");
}

MessagesTracer::MessagesTracer(const MessagesOptions& options, const TracerContext& context)
    : CopyableTracer(context), options_(options) {
  // The ring's whole size at once (up to a million): no copy of the kept messages each time
  // it would grow. Untouched pages of it cost no memory until messages fill them.
  constexpr size_t kReservedAtMost = 1 << 20;
  if (options_.keep_messages) completed_.reserve(std::min(options_.keep_messages, kReservedAtMost));
  loop_delays_ = CostAccumulator(options_.keep_messages);
}

namespace {

// On Messages or records (a record is compared with the slowest kept before it becomes one).
constexpr auto ByBegin = [](const auto& a, const auto& b) {
  return std::tie(a.begin_ns, a.tid, a.depth) < std::tie(b.begin_ns, b.tid, b.depth);
};

// The slowest-table order: cost, then as the list is sorted (ByBegin).
constexpr auto Slower = [](const auto& a, const auto& b) {
  if (a.cost_ns() != b.cost_ns()) return a.cost_ns() > b.cost_ns();
  return ByBegin(a, b);
};

}  // namespace

// Inline into OnSpanEnd, its only caller (one call frame less per message).
[[gnu::always_inline]] inline void MessagesTracer::Keep(const MessageRecord& m) {
  const uint64_t cost = m.cost_ns();
  const size_t limit = options_.keep_messages;
  ThreadCosts* thread = by_tid_.Find(m.tid);
  if (!thread) {
    thread = &by_tid_[m.tid];
    thread->costs = CostAccumulator(limit);
  }
  thread->costs.Add(cost);
  if (m.depth == 0) thread->busy_ns += cost;
  if (m.has_loop_delay) loop_delays_.Add(m.loop_delay_ns);
  if (const std::string* key = m.group ? m.group : m.name) {
    CostAccumulator*& named = by_name_text_.entries[key];
    if (!named) named = &by_name_.try_emplace(*key, CostAccumulator(limit)).first->second;
    named->Add(cost);
  }
  const size_t top_n = context_.common->top_n;
  if (m.depth > 0 || !nested_waiting_.empty()) [[unlikely]] {
    RankNesting(m.ToMessage());
  } else if (slowest_.size() < top_n || Slower(m, slowest_.back())) {  // a Message only for these
    const Message message = m.ToMessage();
    slowest_.insert(std::upper_bound(slowest_.begin(), slowest_.end(), message, Slower), message);
    if (slowest_.size() > top_n) slowest_.pop_back();
  }
  if (limit && completed_.size() == limit) {
    completed_[oldest_] = m;
    if (++oldest_ == limit) oldest_ = 0;
    ++not_listed_;
  } else {
    completed_.push_back(m);
  }
}

namespace {

bool Holds(const Message& outer, const Message& inner) {
  return inner.tid == outer.tid && inner.depth > outer.depth && inner.begin_ns >= outer.begin_ns &&
         inner.begin_ns <= outer.end_ns;
}

}  // namespace

bool MessagesTracer::CouldRank(const Message& message) const {
  return slowest_.size() < context_.common->top_n || Slower(message, slowest_.back());
}

void MessagesTracer::Rank(const Message& message, std::vector<Message> nested) {
  if (!CouldRank(message)) return;
  slowest_.insert(std::upper_bound(slowest_.begin(), slowest_.end(), message, Slower), message);
  if (slowest_.size() > context_.common->top_n) slowest_.pop_back();
  for (Message& inner : nested) slowest_nested_.push_back(std::move(inner));
  // Those under messages no longer listed go now and then: the list stays about N long.
  if (slowest_nested_.size() > 4 * context_.common->top_n + 64) DropUnlisted();
}

void MessagesTracer::DropUnlisted() {
  std::erase_if(slowest_nested_, [&](const Message& inner) {
    return std::none_of(slowest_.begin(), slowest_.end(), [&](const Message& outer) { return Holds(outer, inner); });
  });
}

void MessagesTracer::RankNesting(const Message& message) {
  // The slow ones waiting inside it are counted in it.
  std::vector<Message> nested;
  if (auto it = nested_waiting_.find(message.tid); it != nested_waiting_.end()) {
    auto& waiting = it->second;
    for (auto w = waiting.begin(); w != waiting.end();) {
      if (!Holds(message, w->message)) {
        ++w;
        continue;
      }
      nested.push_back(std::move(w->message));
      for (Message& inner : w->nested) nested.push_back(std::move(inner));
      w = waiting.erase(w);
    }
    if (waiting.empty()) nested_waiting_.erase(it);
  }
  if (message.depth == 0) {
    Rank(message, std::move(nested));
    return;
  }
  if (!CouldRank(message)) return;  // nor could what it holds (no slower than it)
  auto& waiting = nested_waiting_[message.tid];
  waiting.push_back({message, std::move(nested)});
  // A thread's waiting ones share their fate (held by one open message, or ranked alone):
  // more than N of them can only rank the N slowest.
  if (waiting.size() > context_.common->top_n) {
    auto fastest = std::min_element(waiting.begin(), waiting.end(), [](const NestedSlow& a, const NestedSlow& b) {
      return Slower(b.message, a.message);
    });
    waiting.erase(fastest);
  }
}

void MessagesTracer::ReleaseNested(const Message& holder) {
  auto it = nested_waiting_.find(holder.tid);
  if (it == nested_waiting_.end()) return;
  std::vector<NestedSlow> alone;
  auto& waiting = it->second;
  for (auto w = waiting.begin(); w != waiting.end();) {
    if (Holds(holder, w->message)) {
      alone.push_back(std::move(*w));
      w = waiting.erase(w);
    } else {
      ++w;
    }
  }
  if (waiting.empty()) nested_waiting_.erase(it);
  for (NestedSlow& w : alone) Rank(w.message, std::move(w.nested));
}

void MessagesTracer::OnSpanEnd(const Span& span) {
  if (span.kind != SpanKind::kMessage) return;
  saw_message_ = true;
  if (span.close == SpanClose::kEnded) {
    Keep(MessageRecord::Of(span));
    return;
  }
  if (span.close == SpanClose::kUnfinished) unfinished_.push_back(MessageOf(span));
  if (!nested_waiting_.empty()) ReleaseNested(MessageOf(span));
}

CostSummary SummarizeCosts(std::vector<uint64_t> costs) {
  CostSummary s;
  if (costs.empty()) return s;
  s.count = costs.size();
  for (uint64_t c : costs) s.total_ns += c;
  s.mean_ns = s.total_ns / s.count;
  // Nearest rank: the smallest value with at least q of the samples at or below it. Three
  // selections instead of a sort (each one partitions what lies above the previous rank).
  auto index = [&](unsigned percent) { return std::max<size_t>((costs.size() * percent + 99) / 100, 1) - 1; };
  const size_t i50 = index(50), i90 = index(90), i99 = index(99);
  std::nth_element(costs.begin(), costs.begin() + i50, costs.end());
  s.min_ns = *std::min_element(costs.begin(), costs.begin() + i50 + 1);
  s.p50_ns = costs[i50];
  std::nth_element(costs.begin() + i50, costs.begin() + i90, costs.end());
  s.p90_ns = costs[i90];
  std::nth_element(costs.begin() + i90, costs.begin() + i99, costs.end());
  s.p99_ns = costs[i99];
  s.max_ns = *std::max_element(costs.begin() + i99, costs.end());
  return s;
}

void MessagesTracer::OnEvent(const Event& event) {
  if (const auto* start = std::get_if<SessionStart>(&event)) {
    dispatch_probed_ = poll_probed_ = false;
    for (const auto& p : start->probes) {
      dispatch_probed_ |= p.role == Role::kDispatchBegin;
      poll_probed_ |= p.role == Role::kPollBegin;
    }
  }
}

void MessagesTracer::Contribute(Report& r) {
  MessagesReport& report = r.messages;
  const bool profiled = dispatch_probed_ || context_.spans->wait_bounded() ||
                        (poll_probed_ && context_.spans->message_definition() == MessageDefinition::kPollBounded);
  report.enabled = saw_message_ || profiled;
  // Made at once, then filled in place (no capacity check and no move per message).
  const size_t listed = report.messages.size();
  report.messages.resize(listed + completed_.size());
  Message* out = report.messages.data() + listed;
  for (size_t i = oldest_; i < completed_.size(); ++i) completed_[i].FillMessage(*out++);
  for (size_t i = 0; i < oldest_; ++i) completed_[i].FillMessage(*out++);
  completed_.clear();
  oldest_ = 0;
  // Messages end in begin order unless nested: mostly sorted already.
  if (!std::is_sorted(report.messages.begin(), report.messages.end(), ByBegin))
    std::sort(report.messages.begin(), report.messages.end(), ByBegin);
  report.unfinished = std::move(unfinished_);
  std::sort(report.unfinished.begin(), report.unfinished.end(), ByBegin);
  report.not_listed = not_listed_;
  report.keep_limit = options_.keep_messages;

  report.loop_delay = loop_delays_.Summary();
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
  for (auto& [tid, waiting] : nested_waiting_)  // their holders never ended (none should be left)
    for (NestedSlow& w : waiting) Rank(w.message, std::move(w.nested));
  nested_waiting_.clear();
  DropUnlisted();  // only those under a message still listed
  report.slowest = std::move(slowest_);
  report.slowest_nested = std::move(slowest_nested_);
  slowest_nested_.clear();
  // Under a full list, only those that would have been listed on their own.
  if (report.slowest.size() >= context_.common->top_n)
    std::erase_if(report.slowest_nested, [&](const Message& inner) { return !Slower(inner, report.slowest.back()); });
  std::sort(report.slowest_nested.begin(), report.slowest_nested.end(), ByBegin);
}

}  // namespace looptrace
