// MessagesTracer (Matrix's LooperMonitor, from outside): every message span becomes a
// Message: cost distribution per thread, slowest messages, by-name table.
#pragma once

#include <vector>

#include "looptrace/tracers/report.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace {

// The Message a message span describes.
Message MessageOf(const Span& span);

struct MessagesOptions : TracerOptions {
  void Declare(OptionSet&) override {}
};

class MessagesTracer : public Tracer {
 public:
  MessagesTracer(const MessagesOptions& options, const TracerContext& context);
  uint32_t span_kinds() const override { return SpanBit(SpanKind::kMessage); }
  uint32_t event_types() const override { return 0; }
  void OnSpanEnd(const Span& span) override;
  void Contribute(Report& report) override;

 private:
  TracerContext context_;
  std::vector<Message> completed_;
  std::vector<Message> unfinished_;
  bool saw_message_ = false;
};

}  // namespace looptrace
