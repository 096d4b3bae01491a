#include "looptrace/tracers/event_sanitize.h"

#include <type_traits>

#include "looptrace/tracers/text_pool.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

// Visits every string of an event with `f(std::string&)` (or const), and returns whether
// any call returned true.
template <typename E, typename F>
bool ForEachString(E& e, F&& f) {
  using T = std::remove_const_t<E>;
  bool any = false;
  auto one = [&](auto& s) { any |= f(s); };
  auto all = [&](auto& list) {
    for (auto& s : list) one(s);
  };
  if constexpr (std::is_same_v<T, SessionStart>) {
    one(e.command);
    one(e.command_line);
    one(e.profile);
    one(e.thread_filter);
    one(e.device.machine);
    for (auto& p : e.probes) {
      one(p.kind);
      one(p.binary);
      one(p.point);
    }
  } else if constexpr (std::is_same_v<T, ProbeEvent>) {
    // Argument names come from the profile and texts are interned (shared, immutable):
    // an unsafe text is replaced by a pointer to its safe copy.
    for (auto& arg : e.args) {
      if (!arg.text) continue;
      if constexpr (std::is_const_v<E>) {
        one(*arg.text);
      } else if (!IsSafeText(*arg.text)) {
        std::string text = *arg.text;
        one(text);
        arg.text = TextPool::Intern(text);
      }
    }
  } else if constexpr (std::is_same_v<T, SessionEnd>) {
    one(e.reason);
  } else if constexpr (std::is_same_v<T, MethodBeats>) {
    one(e.span);
    for (auto& [id, name] : e.names) one(name);
  } else if constexpr (std::is_same_v<T, ThreadSwitch>) {
    all(e.kernel_stack);
  } else if constexpr (std::is_same_v<T, Wakeup>) {
    one(e.waker_comm);
  } else if constexpr (std::is_same_v<T, SignalSent>) {
    one(e.sender_comm);
  } else if constexpr (std::is_same_v<T, StallSnapshot>) {
    for (auto& t : e.threads) {
      one(t.name);
      one(t.wchan);
      all(t.kernel_stack);
      all(t.user_stack);
    }
    for (auto& [key, value] : e.memory_kb) one(key);
  } else if constexpr (std::is_same_v<T, ProcessExec>) {
    one(e.comm);
  } else if constexpr (std::is_same_v<T, ThreadName>) {
    one(e.name);
  } else if constexpr (std::is_same_v<T, StackSample>) {
    all(e.frames);
    one(e.stop);
    one(e.callable);
  } else {
    static_assert(std::is_same_v<T, LossCounters>, "a new event type: list its strings here");
  }
  return any;
}

}  // namespace

bool SanitizeEvent(Event* event) {
  return std::visit([](auto& e) { return ForEachString(e, [](std::string& s) { return MakeSafeText(&s); }); }, *event);
}

bool IsEventSafe(const Event& event) {
  return !std::visit(
      [](const auto& e) { return ForEachString(e, [](const std::string& s) { return !IsSafeText(s); }); }, event);
}

void SanitizingSink::OnEvent(const Event& event) {
  if (IsEventSafe(event)) {
    next_.OnEvent(event);
    return;
  }
  Event copy = event;
  SanitizeEvent(&copy);
  next_.OnEvent(copy);
}

}  // namespace looptrace
