#include "looptrace/tracers/looper_monitor.h"

#include <algorithm>
#include <tuple>

namespace looptrace {

LooperMonitor::LooperMonitor(LooperMonitorOptions options, Stats* stats)
    : options_(options), stats_(stats) {}

std::optional<Message> LooperMonitor::OnProbe(const ProbeEvent& event) {
  if (event.role != Role::kDispatchBegin && event.role != Role::kDispatchEnd) return std::nullopt;
  saw_dispatch_ = true;

  uint64_t& last_ts = last_ts_by_tid_[event.tid];
  if (event.ts_ns < last_ts) stats_->Add(StatId::events_out_of_order);
  last_ts = std::max(last_ts, event.ts_ns);

  auto& stack = open_by_tid_[event.tid];
  if (event.role == Role::kDispatchBegin) {
    Message m;
    m.tid = event.tid;
    m.begin_ns = event.ts_ns;
    if (const EventArg* id = event.Arg("id")) m.msg_id = id->value;
    if (const EventArg* name = event.Arg("name")) {
      if (name->text) m.name = *name->text;
    }
    m.depth = static_cast<uint32_t>(stack.size());
    began_tids_.insert(event.tid);
    stack.push_back(Open{std::move(m), event.thread_cpu_ns});
    return std::nullopt;
  }

  if (stack.empty()) {
    // Before the thread's first begin, an end closes a message that began before tracing.
    stats_->Add(began_tids_.contains(event.tid) ? StatId::unmatched_dispatch_end
                                                : StatId::messages_running_at_start);
    return std::nullopt;
  }
  Message m = std::move(stack.back().message);
  const uint64_t begin_cpu_ns = stack.back().begin_cpu_ns;
  stack.pop_back();
  if (begin_cpu_ns && event.thread_cpu_ns >= begin_cpu_ns) m.cpu_ns = event.thread_cpu_ns - begin_cpu_ns;
  if (const EventArg* id = event.Arg("id"); id && m.msg_id && *m.msg_id != id->value)
    stats_->Add(StatId::dispatch_id_mismatch);
  m.end_ns = std::max(event.ts_ns, m.begin_ns);
  completed_.push_back(m);
  return m;
}

std::vector<const Message*> LooperMonitor::OpenMessages(uint32_t tid) const {
  std::vector<const Message*> out;
  if (auto it = open_by_tid_.find(tid); it != open_by_tid_.end())
    for (const Open& open : it->second) out.push_back(&open.message);
  return out;
}

void LooperMonitor::Finish(uint64_t end_ns) {
  for (auto& [tid, stack] : open_by_tid_) {
    for (auto& open : stack) {
      Message m = std::move(open.message);
      m.end_ns = std::max(end_ns, m.begin_ns);
      unfinished_.push_back(std::move(m));
      stats_->Add(StatId::unfinished_messages);
    }
    stack.clear();
  }
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

void LooperMonitor::Contribute(MessagesReport* report) const {
  report->enabled = saw_dispatch_ || report->enabled;
  report->messages = completed_;
  std::sort(report->messages.begin(), report->messages.end(), ByBegin);
  report->unfinished = unfinished_;
  std::sort(report->unfinished.begin(), report->unfinished.end(), ByBegin);

  std::map<uint32_t, std::vector<uint64_t>> costs_by_tid;
  std::map<uint32_t, uint64_t> busy_by_tid;
  std::map<std::string, std::vector<uint64_t>> costs_by_name;
  for (const Message& m : report->messages) {
    costs_by_tid[m.tid].push_back(m.cost_ns());
    if (m.depth == 0) busy_by_tid[m.tid] += m.cost_ns();
    if (!m.name.empty()) costs_by_name[m.name].push_back(m.cost_ns());
  }
  report->threads.clear();
  for (auto& [tid, costs] : costs_by_tid)
    report->threads.push_back({tid, SummarizeCosts(std::move(costs)), busy_by_tid[tid]});

  report->by_name.clear();
  for (auto& [name, costs] : costs_by_name)
    report->by_name.push_back({name, SummarizeCosts(std::move(costs))});
  std::stable_sort(report->by_name.begin(), report->by_name.end(),
                   [](const NamedMessages& a, const NamedMessages& b) {
                     return a.cost.total_ns > b.cost.total_ns;
                   });

  report->slowest = report->messages;
  std::stable_sort(report->slowest.begin(), report->slowest.end(),
                   [](const Message& a, const Message& b) { return a.cost_ns() > b.cost_ns(); });
  if (report->slowest.size() > options_.top_n) report->slowest.resize(options_.top_n);
}

}  // namespace looptrace
