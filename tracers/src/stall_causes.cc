#include "looptrace/tracers/stall_causes.h"

#include <fmt/format.h>

#include <algorithm>

namespace looptrace {
namespace {

// Enough history for the longest message a report looks back on: causes end before the
// message that contains them ends, and GC runs are rare.
constexpr size_t kMaxClosed = 8192;
constexpr size_t kMaxReleasesPerMonitor = 16;
constexpr size_t kMaxMonitors = 4096;

std::string GcDetail(const Span& span) {
  if (auto full = span.ArgValue("full")) return *full ? "full" : "young";
  if (auto generation = span.ArgValue("generation")) return fmt::format("generation {}", *generation);
  return "";
}

}  // namespace

StallCause StallCauses::FromSpan(const Span& span) const {
  StallCause c;
  c.kind = span.kind == SpanKind::kGc ? "gc" : "monitor";
  c.tid = span.tid;
  c.begin_ns = span.begin_ns;
  c.end_ns = span.end_ns;
  c.open = span.close == SpanClose::kOpen;
  if (span.kind == SpanKind::kGc) {
    c.detail = GcDetail(span);
    return c;
  }
  c.monitor = span.ArgValue("monitor").value_or(0);
  c.detail = span.ArgText("class");
  // HotSpot passes class names with slashes (java/lang/Object).
  std::replace(c.detail.begin(), c.detail.end(), '/', '.');
  return c;
}

void StallCauses::AddEnded(const Span& span) {
  StallCause c = FromSpan(span);
  c.open = false;
  if (span.kind == SpanKind::kLockWait) {
    // The holder handed the monitor over: its release came last before the waiter got it.
    if (auto it = releases_.find(c.monitor); it != releases_.end()) {
      for (auto r = it->second.rbegin(); r != it->second.rend(); ++r) {
        if (r->ts_ns > c.end_ns || r->tid == c.tid) continue;
        if (r->ts_ns < c.begin_ns) break;
        c.holder_tid = r->tid;
        c.holder_name = r->name;
        break;
      }
    }
  }
  closed_.push_back(std::move(c));
  if (closed_.size() > kMaxClosed) closed_.pop_front();
}

void StallCauses::AddRelease(const ProbeEvent& event) {
  const EventArg* monitor = event.Arg("monitor");
  if (!monitor) return;
  if (!releases_.contains(monitor->value) && releases_.size() >= kMaxMonitors) releases_.erase(releases_.begin());
  auto& list = releases_[monitor->value];
  Release r;
  r.ts_ns = event.ts_ns;
  r.tid = event.tid;
  if (const EventArg* name = event.Arg("thread"); name && name->text) r.name = *name->text;
  list.push_back(std::move(r));
  if (list.size() > kMaxReleasesPerMonitor) list.pop_front();
}

std::vector<StallCause> StallCauses::Within(uint32_t tid, uint64_t begin_ns, uint64_t end_ns,
                                            const SpanTracker& spans) const {
  std::vector<StallCause> out;
  auto take = [&](StallCause c) {
    if (c.kind == "monitor" && c.tid != tid) return;
    if (c.end_ns < begin_ns || c.begin_ns > end_ns) return;
    c.begin_ns = std::max(c.begin_ns, begin_ns);
    c.end_ns = std::min(c.end_ns, end_ns);
    out.push_back(std::move(c));
  };
  for (auto it = closed_.rbegin(); it != closed_.rend(); ++it) {
    // Ends are in order: everything before this one ended before the interval began.
    if (it->end_ns < begin_ns) break;
    take(*it);
  }
  for (SpanKind kind : {SpanKind::kGc, SpanKind::kLockWait})
    for (const Span* span : spans.OpenAnywhere(kind)) {
      StallCause c = FromSpan(*span);
      c.end_ns = end_ns;
      c.open = true;
      take(std::move(c));
    }
  std::stable_sort(out.begin(), out.end(), [](const StallCause& a, const StallCause& b) {
    if (a.begin_ns != b.begin_ns) return a.begin_ns < b.begin_ns;
    return a.tid < b.tid;
  });
  return out;
}

}  // namespace looptrace
