#include "loader/session/stall_snapshot.h"

#include "loader/target/proc_readers.h"

#include "looptrace/util/log.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace looptrace::loader {
namespace {

constexpr long kSysFutex = 202;  // x86-64
constexpr int kFutexCmdMask = 0x7f;
constexpr int kFutexWait = 0, kFutexLockPi = 6, kFutexWaitBitset = 9, kFutexLockPi2 = 13;

}  // namespace

std::vector<std::string> BpfKernelStacks::Names(const std::vector<uint64_t>& ips) {
  if (!kallsyms_tried_) {
    kallsyms_tried_ = true;
    if (auto k = symbols::KernelSymbols::Load()) kallsyms_ = std::move(*k);
  }
  std::vector<std::string> names;
  for (uint64_t ip : ips) {
    std::string_view name = kallsyms_ ? kallsyms_->Name(ip) : std::string_view();
    // The frames of looptrace's own program and the tracepoint glue say nothing.
    if (names.empty() &&
        (name.starts_with("bpf_prog_") || name.starts_with("bpf_trace_run") || name.starts_with("__bpf_trace") ||
         name.starts_with("__traceiter") || name.starts_with("perf_trace") || name.starts_with("bpf_get_stack")))
      continue;
    names.push_back(name.empty() ? fmt::format("{:#x}", ip) : std::string(name));
  }
  return names;
}

std::vector<std::string> BpfKernelStacks::KernelStack(int32_t stack_id) {
  if (stack_id < 0) return {};
  if (auto it = cache_.find(stack_id); it != cache_.end()) return it->second;
  auto names = Names(bpf_->StackIps(stack_id));
  cache_.emplace(stack_id, names);
  return names;
}

void SnapshotTaker::SampleCpu(uint64_t now_ns) {
  auto ticks = ReadCpuTicks(pid_);
  if (!ticks) return;
  cpu_samples_.emplace_back(now_ns, *ticks);
  while (cpu_samples_.size() > 2 && now_ns - cpu_samples_.front().first > 5'000'000'000ull) cpu_samples_.pop_front();
}

bool SnapshotTaker::StillWaiting(const lt_thread_state& state) {
  return state.ustack_id == LT_STACK_AT_SNAPSHOT && state.state != LT_STATE_RUNNING && state.wait_sp;
}

std::vector<std::string> SnapshotTaker::WaitingKernelStack(uint32_t tid) const {
  // "[<0>] futex_wait_queue+0x60/0x90": the kernel's own walk of a sleeping task, no stack
  // taken at its switch-out.
  std::vector<std::string> names;
  std::ifstream file(fmt::format("/proc/{}/task/{}/stack", pid_, tid));
  for (std::string line; std::getline(file, line);) {
    const size_t begin = line.find("] ");
    if (begin == std::string::npos) continue;
    const size_t end = line.find('+', begin);
    names.push_back(line.substr(begin + 2, end == std::string::npos ? std::string::npos : end - begin - 2));
  }
  return names;
}

void SnapshotTaker::UserStack(ThreadSnapshot* ts, const lt_thread_state& state, int32_t ustack, bool in_chain) {
  const uint32_t t = ts->tid;
  std::optional<ResolvedStack> dwarf;
  if (StillWaiting(state)) {
    // Still in the wait its switch-out left to the snapshot: unwound from the registers kept then.
    symbols::UnwindRegisters regs;
    regs.Set(16, state.wait_pc);
    regs.Set(7, state.wait_sp);
    if (state.wait_bp) regs.Set(6, state.wait_bp);
    dwarf = stacks_->FromWaitingThread(regs, bpf_ ? bpf_->ShadowStack(t) : std::vector<lt_shadow_frame>{});
  } else if (dwarf_ && bpf_ && (all_threads_ || t == static_cast<uint32_t>(pid_))) {
    // A watched thread's copy from its last switch-out or sample, if that is its current stop.
    if (auto copy = bpf_->StackCopy(t);
        copy && copy->size > 0 && !(state.since_ns && copy->ts_ns + 1'000'000 < state.since_ns)) {
      log::V2("stack copy of thread {}: {} bytes from sp {:#x}", t, copy->size, copy->regs[7]);
      symbols::UnwindRegisters regs;
      for (int i = 0; i < LT_UNWIND_REGS; ++i)
        if (copy->valid_mask & (1u << i)) regs.Set(i, copy->regs[i]);
      dwarf = stacks_->FromCopy(regs, copy->regs[7], std::span<const uint8_t>(copy->bytes, copy->size),
                                std::span<const lt_shadow_frame>(copy->shadow, copy->nr_shadow));
    }
  }
  if (dwarf_ && !dwarf && in_chain && ts->state != 'R') {
    // A thread the stalled one waits for: blocked, so its stack can be read now.
    dwarf = stacks_->FromBlockedThread(t, bpf_ ? bpf_->ShadowStack(t) : std::vector<lt_shadow_frame>{});
  }
  std::optional<ResolvedStack> fp;
  if (ustack >= 0 && (!dwarf || !dwarf->stop.empty())) {
    auto ips = bpf_->StackIps(ustack);
    if (ips.empty())
      stats_->Add(StatId::snapshot_incomplete);
    else
      fp = stacks_->FromIps(ips, stacks_->LiveShadow(bpf_->ShadowStack(t)));
  }
  // DWARF when it reached the end, else whichever walk went deeper.
  const ResolvedStack* best = dwarf ? &*dwarf : fp ? &*fp : nullptr;
  if (dwarf && fp && !dwarf->stop.empty() && fp->frames.size() > dwarf->frames.size()) best = &*fp;
  if (auto py = interp_stacks_.find(t); py != interp_stacks_.end() && !py->second.empty()) {
    InterpreterStack(ts, best, py->second);
    return;
  }
  if (!best) {
    ts->user_stack_stop =
        ustack < 0 && !dwarf_ ? "no user stack was captured at its last switch-out" : "no user stack could be read";
    return;
  }
  if (best->frames.empty() && dwarf) stats_->Add(StatId::snapshot_incomplete);
  for (const ResolvedFrame& frame : best->frames) ts->user_stack.push_back(frame.Describe());
  ts->user_stack_stop = best->stop;
}

void SnapshotTaker::InterpreterStack(ThreadSnapshot* ts, const ResolvedStack* native,
                                     const std::vector<InterpreterFrame>& frames) {
  ts->user_stack.clear();
  if (native)
    for (const ResolvedFrame& f : native->frames) {
      if (interpreter_->IsInterpreterModule(f.module) || interpreter_->IsInterpreterLoop(f.function)) break;
      ts->user_stack.push_back(f.Describe());
    }
  for (const InterpreterFrame& f : frames) ts->user_stack.push_back(f.Name());
  ts->user_stack_stop.clear();
}

StallSnapshot SnapshotTaker::Take(uint32_t tid, uint64_t message_begin_ns, bool anr, uint64_t now_ns) {
  StallSnapshot s;
  interp_stacks_.clear();
  if (interpreter_) interp_stacks_ = interpreter_->ThreadStacks(stats_);
  s.anr = anr;
  s.ts_ns = now_ns;
  s.tid = tid;
  s.message_begin_ns = message_begin_ns;

  std::map<uint32_t, lt_thread_state> bpf_states;
  if (bpf_) {
    for (const auto& [t, state] : bpf_->ThreadStates()) bpf_states[t] = state;
  }
  std::vector<uint32_t> tids;
  const std::string task_dir = fmt::format("/proc/{}/task", pid_);
  if (DIR* dir = opendir(task_dir.c_str())) {
    while (dirent* entry = readdir(dir))
      if (entry->d_name[0] != '.') tids.push_back(static_cast<uint32_t>(std::strtoul(entry->d_name, nullptr, 10)));
    closedir(dir);
  } else {
    stats_->Add(StatId::snapshot_incomplete);  // the process is gone
  }
  std::sort(tids.begin(), tids.end());
  std::stable_partition(tids.begin(), tids.end(), [&](uint32_t t) { return t == tid; });

  for (uint32_t t : tids) {
    ThreadSnapshot ts;
    ts.tid = t;
    const std::string dir = fmt::format("{}/{}", task_dir, t);
    ts.name = ReadName(dir + "/comm");
    if (interpreter_)  // a runtime's own name (a Java thread's, whole)
      if (auto name = interpreter_->ThreadName(ts.tid)) ts.name = std::move(*name);
    auto fields = StatFields(dir + "/stat");
    if (fields.empty()) {
      stats_->Add(StatId::snapshot_incomplete);  // the thread vanished meanwhile
      continue;
    }
    ts.state = fields[0].empty() ? '?' : fields[0][0];
    if (interpreter_)
      if (auto state = interpreter_->ThreadState(ts.tid)) ts.java_state = std::move(*state);
    ts.wchan = ReadFirstLine(dir + "/wchan");
    // "202 0xuaddr 0xop ..." while blocked in futex(): the address it waits on.
    std::istringstream syscall(ReadFirstLine(dir + "/syscall"));
    long nr = -1;
    std::string uaddr, op;
    if (syscall >> nr >> uaddr >> op && nr == kSysFutex && ParseUnsigned(op, 16) && ParseUnsigned(uaddr, 16)) {
      int cmd = static_cast<int>(*ParseUnsigned(op, 16)) & kFutexCmdMask;
      if (cmd == kFutexWait || cmd == kFutexWaitBitset || cmd == kFutexLockPi || cmd == kFutexLockPi2) {
        ts.futex_address = *ParseUnsigned(uaddr, 16);
        // glibc's pthread_mutex_t keeps its owner's tid 8 bytes after the futex word.
        int32_t owner = 0;
        iovec local{&owner, sizeof(owner)};
        iovec remote{reinterpret_cast<void*>(ts.futex_address + 8), sizeof(owner)};
        if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) == sizeof(owner) && owner > 0 &&
            access(fmt::format("{}/{}", task_dir, owner).c_str(), F_OK) == 0)
          ts.futex_owner_tid = static_cast<uint32_t>(owner);
      }
    }
    s.threads.push_back(std::move(ts));
  }

  // The threads the stalled one waits for: the owners of the mutexes along its chain (a
  // deadlock's members), and the thread that last woke it.
  std::set<uint32_t> chain;
  for (uint32_t at = tid; at && chain.insert(at).second;) {
    uint32_t next = 0;
    for (const ThreadSnapshot& t : s.threads)
      if (t.tid == at) next = t.futex_owner_tid;
    at = next;
  }
  if (auto w = last_waker_.find(tid); w != last_waker_.end()) chain.insert(w->second);
  for (ThreadSnapshot& ts : s.threads) {
    const bool in_chain = chain.contains(ts.tid) && ts.tid != tid;
    auto it = bpf_states.find(ts.tid);
    lt_thread_state unseen{};  // a thread that did not switch since tracing began
    unseen.kstack_id = unseen.ustack_id = unseen.sample_kstack_id = unseen.sample_ustack_id = -1;
    if (it == bpf_states.end() && !(dwarf_ && in_chain)) {
      // Not seen by BPF since tracing began, but an interpreter thread: its interpreted frames.
      if (auto py = interp_stacks_.find(ts.tid); py != interp_stacks_.end() && !py->second.empty())
        InterpreterStack(&ts, nullptr, py->second);
      continue;
    }
    const lt_thread_state& st = it == bpf_states.end() ? unseen : it->second;
    if (it != bpf_states.end()) ts.state_since_ns = st.since_ns;
    const bool running = ts.state == 'R';
    int32_t kstack = running && st.sample_kstack_id >= 0 ? st.sample_kstack_id : st.kstack_id;
    int32_t ustack = running && st.sample_ustack_id >= 0 ? st.sample_ustack_id : st.ustack_id;
    if (StillWaiting(st))
      ts.kernel_stack = WaitingKernelStack(ts.tid);
    else if (!running || st.sample_kstack_id >= 0)
      ts.kernel_stack = kernel_stacks_->KernelStack(kstack);
    UserStack(&ts, st, ustack, in_chain);
  }

  // Process CPU over the last seconds, and memory, like Matrix's ANR block.
  SampleCpu(now_ns);
  if (cpu_samples_.size() >= 2) {
    auto [t0, c0] = cpu_samples_.front();
    auto [t1, c1] = cpu_samples_.back();
    if (t1 > t0) {
      s.cpu_window_ns = t1 - t0;
      s.process_cpu_percent =
          100.0 * static_cast<double>(c1 - c0) / static_cast<double>(sysconf(_SC_CLK_TCK)) / ((t1 - t0) / 1e9);
    }
  }
  s.memory_kb = ReadMemoryFields(pid_);
  auto pfields = StatFields(fmt::format("/proc/{}/stat", pid_));
  if (pfields.size() > 16) {
    s.priority = static_cast<int>(ParseSigned(pfields[15]).value_or(0));
    s.nice = static_cast<int>(ParseSigned(pfields[16]).value_or(0));
  }
  return s;
}

}  // namespace looptrace::loader
