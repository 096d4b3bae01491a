// Builds an event stream in any order and runs it, sorted by time, through the real
// pipeline (span tracker + every tracer): what unit tests of the tracers feed.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "looptrace/tracers/pipeline.h"
#include "looptrace/tracers/text_pool.h"

namespace looptrace::testing {

inline EventArg U(const char* name, uint64_t value) {
  EventArg a;
  a.name = TextPool::Name(name);
  a.value = value;
  return a;
}

inline EventArg S(const char* name, const std::string& text) {
  EventArg a;
  a.name = TextPool::Name(name);
  a.text = TextPool::Intern(text);
  a.is_string = true;
  return a;
}

inline ProbeEvent Probe(Role role, uint64_t ts, std::vector<EventArg> args, uint32_t tid, uint32_t pid = 0) {
  ProbeEvent e;
  e.ts_ns = ts;
  e.pid = pid ? pid : tid;
  e.tid = tid;
  e.role = role;
  for (const auto& a : args) e.args.push_back(a);
  return e;
}

// When an event happens. Method beats of a span: at its begin, so they precede its end; an
// open message's slice: with its snapshot (at the slice's end).
inline uint64_t TimeOf(const Event& event) {
  if (const auto* beats = std::get_if<MethodBeats>(&event))
    return beats->span == "open" ? beats->end_ns : beats->begin_ns;
  return std::visit(
      [](const auto& e) -> uint64_t {
        if constexpr (requires { e.ts_ns; }) return e.ts_ns;
        return 0;
      },
      event);
}

class EventScript {
 public:
  void Add(Event event) { events_.push_back(std::move(event)); }
  // A message as its dispatch.begin (id, name) and dispatch.end.
  void AddMessage(const Message& m) {
    std::vector<EventArg> args;
    if (m.msg_id) args.push_back(U("id", *m.msg_id));
    if (!m.name.empty()) args.push_back(S("name", m.name));
    Add(Probe(Role::kDispatchBegin, m.begin_ns, std::move(args), m.tid));
    Add(Probe(Role::kDispatchEnd, m.end_ns,
              m.msg_id ? std::vector<EventArg>{U("id", *m.msg_id)} : std::vector<EventArg>{}, m.tid));
  }
  // Runs every event in time order (ties keep the order they were added in), then ends the
  // session at `end_ns` (0: no SessionEnd, the stream ends at its last event).
  Report Run(const AnalysisOptions& options, uint64_t end_ns = 0, std::optional<SessionStart> start = std::nullopt) {
    std::stable_sort(events_.begin(), events_.end(),
                     [](const Event& a, const Event& b) { return TimeOf(a) < TimeOf(b); });
    Pipeline pipeline(options);
    if (start) pipeline.OnEvent(*start);
    for (const Event& e : events_) pipeline.OnEvent(e);
    if (end_ns) pipeline.OnEvent(SessionEnd{end_ns, "duration", std::nullopt});
    return pipeline.TakeReport();
  }

 private:
  std::vector<Event> events_;
};

}  // namespace looptrace::testing
