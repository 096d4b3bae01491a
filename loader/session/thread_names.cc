#include "loader/session/thread_names.h"

#include <fmt/format.h>

#include <variant>

#include "loader/target/proc_readers.h"

namespace looptrace::loader {
namespace {

// The thread an event is about (0: none): what ran, was sampled, switched or was woken.
uint32_t ThreadOf(const Event& event) {
  if (const auto* e = std::get_if<ProbeEvent>(&event)) return e->tid;
  if (const auto* e = std::get_if<StackSample>(&event)) return e->tid;
  if (const auto* e = std::get_if<ThreadSwitch>(&event)) return e->tid;
  if (const auto* e = std::get_if<Wakeup>(&event)) return e->tid;
  return 0;
}

uint64_t TimeOf(const Event& event) {
  return std::visit(
      [](const auto& e) -> uint64_t {
        if constexpr (requires { e.ts_ns; }) return e.ts_ns;
        return 0;
      },
      event);
}

}  // namespace

ThreadNamer::Reader ThreadNamer::ProcReader(pid_t tgid) {
  return [tgid](uint32_t tid) { return ReadName(fmt::format("/proc/{}/task/{}/comm", tgid, tid)); };
}

void ThreadNamer::OnEvent(const Event& event) {
  const uint32_t tid = ThreadOf(event);
  if (tid && seen_.size() < kMaxNamedThreads && seen_.insert(tid).second) {
    if (std::string name = read_(tid); !name.empty()) next_.OnEvent(ThreadName{TimeOf(event), tid, std::move(name)});
  }
  next_.OnEvent(event);
}

}  // namespace looptrace::loader
