#include "loader/session/thread_names.h"

#include <fmt/format.h>

#include <variant>

#include "looptrace/tracers/text_pool.h"

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
    if (std::string name = read_(tid); !name.empty()) {
      if (name.size() == kCommBytes) cut_names_[tid] = {name, TimeOf(event) + kRetryNs};
      next_.OnEvent(ThreadName{TimeOf(event), tid, std::move(name)});
    }
  } else if (!cut_names_.empty()) [[unlikely]] {
    RetryCutName(tid, TimeOf(event));
  }
  if (const auto* probe = std::get_if<ProbeEvent>(&event); probe && probe->role == Role::kLockRelease) [[unlikely]] {
    if (auto named = WholeHolderName(*probe)) return next_.OnEvent(Event(std::move(*named)));
  }
  next_.OnEvent(event);
}

void ThreadNamer::RetryCutName(uint32_t tid, uint64_t now_ns) {
  auto it = cut_names_.find(tid);
  if (it == cut_names_.end() || now_ns < it->second.next_ns) return;
  std::string name = read_(tid);
  if (name.size() > kCommBytes && name.starts_with(it->second.name)) {
    next_.OnEvent(ThreadName{now_ns, tid, std::move(name)});
    cut_names_.erase(it);
  } else if (name.empty() || --it->second.left == 0) {
    cut_names_.erase(it);
  } else {
    it->second.next_ns = now_ns + kRetryNs;
  }
}

std::optional<ProbeEvent> ThreadNamer::WholeHolderName(const ProbeEvent& release) {
  // BPF took the kernel's 15 bytes at the hit; a runtime's whole name for the same thread
  // (a Java thread's) replaces them while the thread lives.
  ProbeEvent named = release;
  for (EventArg& arg : named.args) {
    if (arg.name != "thread" || !arg.text) continue;
    const std::string name = read_(release.tid);
    if (name.size() <= arg.text->size() || !name.starts_with(*arg.text)) return std::nullopt;
    arg.text = TextPool::Intern(name);
    return named;
  }
  return std::nullopt;
}

}  // namespace looptrace::loader
