// MessagesTracer (Matrix's LooperMonitor, from outside): every message span becomes a
// Message: cost distribution per thread, slowest messages, by-name table.
//
// Memory is bounded whatever the session's length: exact counters and a CostHistogram per
// thread and per name (at most kMaxMessageNames names, the rest in an "(other names)" row),
// the --top slowest in a bounded heap, and only the most recent --keep-messages messages one
// by one. While every message is kept the percentiles are exact (nearest rank over the
// messages); once some were left out they come from the histograms (within 1%), and the
// report says so.
#pragma once

#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "looptrace/tracers/cost_histogram.h"
#include "looptrace/tracers/report.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// The Message a message span describes.
Message MessageOf(const Span& span);

// Distinct message names with a row of their own in the by-name table.
constexpr size_t kMaxMessageNames = 1000;
// The row the messages of every later name are counted in.
constexpr const char* kOtherNamesRow = "(other names)";

struct MessagesOptions : TracerOptions {
  // Completed messages kept one by one (JSON records, timelines); 0 = all.
  size_t keep_messages = 100'000;
  void Declare(OptionSet& options) override;
};

class MessagesTracer : public Tracer {
 public:
  MessagesTracer(const MessagesOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override { return SpanBit(SpanKind::kMessage); }
  uint32_t event_types() const override { return 0; }
  void OnSpanEnd(const Span& span) override;
  void Contribute(Report& report) override;

  // Bytes held for the messages so far (an estimate: containers and names), for benchmarks.
  size_t RetainedBytes() const;

 private:
  struct ThreadAggregate {
    CostHistogram cost;
    uint64_t busy_ns = 0;
  };
  void AddCompleted(Message m);

  MessagesOptions options_;
  TracerContext context_;
  std::deque<Message> recent_;        // completion order, at most keep_messages
  std::vector<Message> slowest_;      // a heap: the kept message least slow on top
  std::vector<Message> unfinished_;
  std::map<uint32_t, ThreadAggregate> threads_;
  std::unordered_map<std::string, CostHistogram> names_;
  CostHistogram other_names_;
  uint64_t not_kept_ = 0;
  bool saw_message_ = false;
};

}  // namespace looptrace
