// Every string of an event (names read from the target, /proc, symbols, a recording) made
// valid UTF-8 of bounded length (util/text_safety.h) before any tracer or renderer sees it.
#pragma once

#include "looptrace/tracers/event.h"

namespace looptrace {

// Applies SafeText to every string field of `event`; returns whether anything changed.
bool SanitizeEvent(Event* event);
// Whether SanitizeEvent would change nothing (cheap: no copy).
bool IsEventSafe(const Event& event);

// Forwards events to `next`, sanitized. Events that are already safe (nearly all) are
// forwarded without a copy.
class SanitizingSink : public EventSink {
 public:
  explicit SanitizingSink(EventSink& next) : next_(next) {}
  void OnEvent(const Event& event) override;

 private:
  EventSink& next_;
};

}  // namespace looptrace
