#include "looptrace/loader/stall_snapshot.h"

#include "looptrace/loader/proc_readers.h"

#include "looptrace/util/log.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
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
    if (names.empty() && (name.starts_with("bpf_prog_") || name.starts_with("bpf_trace_run") ||
                          name.starts_with("__bpf_trace") || name.starts_with("__traceiter") ||
                          name.starts_with("perf_trace") || name.starts_with("bpf_get_stack")))
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
  while (cpu_samples_.size() > 2 && now_ns - cpu_samples_.front().first > 5'000'000'000ull)
    cpu_samples_.pop_front();
}

std::vector<std::string> SnapshotTaker::UserStack(const std::vector<uint64_t>& ips) {
  std::vector<std::string> frames;
  for (uint64_t ip : ips) {
    auto where = symbolizer_->Symbolize(ip);
    if (!where) {
      frames.push_back(fmt::format("pc {:#x}", ip));
      continue;
    }
    std::string module = where->module.substr(where->module.find_last_of('/') + 1);
    if (where->function.empty())
      frames.push_back(fmt::format("pc {:#x} {}+{:#x}", ip, module, where->module_offset));
    else
      frames.push_back(fmt::format("pc {:#x} {} ({}+{:#x})", ip, module, where->function, where->function_offset));
  }
  return frames;
}

std::optional<std::vector<std::string>> SnapshotTaker::DwarfStack(uint32_t tid, uint64_t state_since_ns) {
  if (!bpf_) return std::nullopt;
  auto copy = bpf_->StackCopy(tid);
  if (!copy || copy->size == 0) return std::nullopt;
  log::V2("stack copy of thread {}: {} bytes from sp {:#x}", tid, copy->size, copy->regs[7]);
  // A copy older than the thread's current state describes an earlier stop.
  if (state_since_ns && copy->ts_ns + 1'000'000 < state_since_ns) return std::nullopt;
  auto maps = symbols::ReadProcMaps(pid_);
  if (!maps) return std::nullopt;
  symbols::UnwindInput input;
  input.pid = pid_;
  for (int i = 0; i < LT_UNWIND_REGS; ++i)
    if (copy->valid_mask & (1u << i)) input.regs.Set(i, copy->regs[i]);
  input.stack_base = copy->regs[7];
  input.stack = std::span<const uint8_t>(copy->bytes, copy->size);
  input.maps = *maps;
  auto outcome = unwinder_.Unwind(input);
  // The unwinder reports modules to libdwfl lazily, as the walk reaches them; a first
  // walk in a session can stop where it met a new module. A second walk, with the
  // modules known, goes on: keep the deeper one.
  if (auto again = unwinder_.Unwind(input);
      again && (!outcome || again->frames.size() > outcome->frames.size()))
    outcome = std::move(again);
  if (!outcome || outcome->frames.empty()) {
    stats_->Add(StatId::snapshot_incomplete);
    return std::nullopt;
  }
  std::vector<std::string> frames;
  for (const auto& frame : outcome->frames) {
    auto where = symbolizer_->SymbolizeFull(frame.lookup_pc);
    std::string module, function, location;
    if (where) {
      module = where->module.substr(where->module.find_last_of('/') + 1);
      if (!where->frames.empty()) {
        // Innermost inline frame first, as eu-addr2line -i prints them.
        for (size_t i = 0; i < where->frames.size(); ++i) {
          const auto& f = where->frames[i];
          std::string text = fmt::format("pc {:#x} {} ({}){}{}", frame.pc, module, f.function,
                                         f.file.empty() ? "" : " " + f.Location(), f.inlined ? " [inlined]" : "");
          frames.push_back(std::move(text));
        }
        continue;
      }
      function = where->function;
    }
    frames.push_back(function.empty() ? fmt::format("pc {:#x} {}", frame.pc, module)
                                      : fmt::format("pc {:#x} {} ({})", frame.pc, module, function));
  }
  return frames;
}

StallSnapshot SnapshotTaker::Take(uint32_t tid, uint64_t message_begin_ns, bool anr, uint64_t now_ns) {
  StallSnapshot s;
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
    auto fields = StatFields(dir + "/stat");
    if (fields.empty()) {
      stats_->Add(StatId::snapshot_incomplete);  // the thread vanished meanwhile
      continue;
    }
    ts.state = fields[0].empty() ? '?' : fields[0][0];
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
    if (auto it = bpf_states.find(t); it != bpf_states.end()) {
      const lt_thread_state& st = it->second;
      ts.state_since_ns = st.since_ns;
      bool running = ts.state == 'R';
      int32_t kstack = running && st.sample_kstack_id >= 0 ? st.sample_kstack_id : st.kstack_id;
      int32_t ustack = running && st.sample_ustack_id >= 0 ? st.sample_ustack_id : st.ustack_id;
      if (!running || st.sample_kstack_id >= 0) ts.kernel_stack = kernel_stacks_->KernelStack(kstack);
      // Unwound with DWARF CFI when a stack copy exists (--dwarf-unwind), else the
      // frame-pointer walk BPF did.
      if (auto dwarf = t == tid ? DwarfStack(t, st.since_ns) : std::nullopt) {
        ts.user_stack = std::move(*dwarf);
      } else if (ustack >= 0) {
        auto ips = bpf_->StackIps(ustack);
        if (ips.empty()) stats_->Add(StatId::snapshot_incomplete);
        ts.user_stack = UserStack(ips);
      }
    }
    s.threads.push_back(std::move(ts));
  }

  // Process CPU over the last seconds, and memory, like Matrix's ANR block.
  SampleCpu(now_ns);
  if (cpu_samples_.size() >= 2) {
    auto [t0, c0] = cpu_samples_.front();
    auto [t1, c1] = cpu_samples_.back();
    if (t1 > t0) {
      s.cpu_window_ns = t1 - t0;
      s.process_cpu_percent = 100.0 * static_cast<double>(c1 - c0) /
                              static_cast<double>(sysconf(_SC_CLK_TCK)) / ((t1 - t0) / 1e9);
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
