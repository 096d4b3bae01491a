#include "looptrace/symbols/unwinder.h"
#include "looptrace/util/safe_file.h"

#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "looptrace/symbols/vdso.h"
#include "looptrace/util/log.h"
#include "unwind_common.h"

namespace looptrace::symbols {
namespace {

constexpr uint64_t UnwindRegisters::*kRegisterFields[UnwindRegisters::kCount] = {
    &UnwindRegisters::rax, &UnwindRegisters::rdx, &UnwindRegisters::rcx, &UnwindRegisters::rbx, &UnwindRegisters::rsi,
    &UnwindRegisters::rdi, &UnwindRegisters::rbp, &UnwindRegisters::rsp, &UnwindRegisters::r8,  &UnwindRegisters::r9,
    &UnwindRegisters::r10, &UnwindRegisters::r11, &UnwindRegisters::r12, &UnwindRegisters::r13, &UnwindRegisters::r14,
    &UnwindRegisters::r15, &UnwindRegisters::rip,
};

constexpr int kRsp = 7;
constexpr int kRip = 16;

// An ELF handle for the x86-64 backend of libdwfl's unwinder (our own executable), so
// attaching does not depend on a module being known at the sampled rip (JIT, vdso).
Elf* BackendElf() {
  static Elf* const elf = [] {
    elf_version(EV_CURRENT);
    const int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    return fd < 0 ? nullptr : elf_begin(fd, ELF_C_READ_MMAP, nullptr);  // kept for the process
  }();
  return elf;
}

}  // namespace

uint64_t UnwindRegisters::Get(int dwarf_regno) const {
  if (dwarf_regno < 0 || dwarf_regno >= kCount) return 0;
  return this->*kRegisterFields[dwarf_regno];
}

void UnwindRegisters::Set(int dwarf_regno, uint64_t value) {
  if (dwarf_regno < 0 || dwarf_regno >= kCount) return;
  this->*kRegisterFields[dwarf_regno] = value;
  valid_mask |= Bit(dwarf_regno);
}

// One libdwfl session: the Dwfl with its reported modules and thread callbacks.
struct Unwinder::Session {
  int pid = 0;
  Dwfl* dwfl = nullptr;
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  // What the callbacks work on during one Unwind call.
  const UnwindInput* input = nullptr;
  UnwindOutcome* outcome = nullptr;
  size_t max_frames = 0;
  // Modules reported, by mapping start: (path, end).
  std::map<uint64_t, std::pair<std::string, uint64_t>> reported;
  // Mappings libdwfl refused, whole (start, end, file offset, inode, path): not tried again
  // at every stack copy (each try opens and reads the file; node's V8 remaps its builtins
  // from its own binary, which libdwfl already holds elsewhere). Keyed by all of it so that
  // a library caught while ld.so maps it (one mapping, before its segments are split) is
  // tried again once mapped.
  std::set<std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, std::string>> refused;
  // The last memory read that could not be served (the walk may end there).
  uint64_t failed_read = 0;
  bool any_failed_read = false;
  // Open files for reads outside the stack copy, by mapping (path and start).
  std::map<std::string, int> files;
  static std::string fmt_key(const MapEntry& map) { return map.path + "@" + std::to_string(map.start); }

  ~Session() {
    if (dwfl != nullptr) dwfl_end(dwfl);
    for (auto& [path, fd] : files) {
      if (fd >= 0) close(fd);
    }
  }

  // Reports the module mapped at `pc` unless libdwfl already knows one there: a mapped
  // file (the one mapped, even if another was installed at its path since), or the vDSO.
  void ReportModuleAt(uint64_t pc) {
    if (dwfl_addrmodule(dwfl, pc) != nullptr) return;
    const MapEntry* map = internal::FindMapping(input->maps, pc);
    if (map == nullptr) return;
    auto whole = std::make_tuple(map->start, map->end, map->offset, map->inode, map->path);
    if (refused.contains(whole)) return;
    std::string path;
    if (map->path == "[vdso]" && !VdsoImagePath().empty() && map->end - map->start == VdsoImageSize()) {
      path = VdsoImagePath();
    } else if (map->is_file()) {
      MappedFileLocation located = LocateMappedFile(input->pid, *map);
      if (!located.trusted) return;  // another program's CFI would be wrong
      path = std::move(located.path);
    } else {
      return;
    }
    uint64_t bias = 0;
    bool is_exec = false;
    if (!internal::MappingLoadBias(path, *map, &bias, &is_exec)) return;
    dwfl_report_begin_add(dwfl);
    Dwfl_Module* module = dwfl_report_elf(dwfl, map->path.c_str(), path.c_str(), -1, is_exec ? 0 : bias, true);
    dwfl_report_end(dwfl, nullptr, nullptr);
    if (module == nullptr) {
      log::V2("unwinder: cannot report {} at {:#x}: {}", path, map->start, dwfl_errmsg(-1));
      refused.insert(std::move(whole));
      return;
    }
    reported[map->start] = {map->path, map->end};
    if (outcome != nullptr) ++outcome->modules_reported;
  }

  // 8 bytes at `address` of a file mapping, read from the file.
  bool ReadMapped(uint64_t address, uint64_t* value) {
    const MapEntry* map = internal::FindMapping(input->maps, address);
    if (map == nullptr || !map->is_file()) return false;
    auto [it, inserted] = files.try_emplace(fmt_key(*map), -1);
    if (inserted) {
      const MappedFileLocation located = LocateMappedFile(input->pid, *map);
      if (located.trusted) it->second = open(located.path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (it->second < 0) return false;
    const uint64_t offset = address - map->start + map->offset;
    return pread(it->second, value, sizeof(*value), static_cast<off_t>(offset)) == static_cast<ssize_t>(sizeof(*value));
  }

  static pid_t NextThread(Dwfl*, void* arg, void** thread_arg) {
    if (*thread_arg != nullptr) return 0;
    *thread_arg = arg;
    return static_cast<Session*>(arg)->pid;
  }

  static bool GetThread(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
    auto* session = static_cast<Session*>(arg);
    if (tid != session->pid) return false;
    *thread_arg = arg;
    return true;
  }

  static bool MemoryRead(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* arg) {
    auto* session = static_cast<Session*>(arg);
    uint64_t value = 0;
    if (internal::ReadStackCopy(*session->input, address, &value) || session->ReadMapped(address, &value)) {
      *result = value;
      return true;
    }
    session->failed_read = address;
    session->any_failed_read = true;
    return false;
  }

  static bool SetInitialRegisters(Dwfl_Thread* thread, void* arg) {
    auto* session = static_cast<Session*>(arg);
    const UnwindRegisters& regs = session->input->regs;
    for (int regno = 0; regno < UnwindRegisters::kCount; ++regno) {
      if (!regs.Has(regno)) continue;
      Dwarf_Word value = regs.Get(regno);
      if (!dwfl_thread_state_registers(thread, regno, 1, &value)) return false;
    }
    dwfl_thread_state_register_pc(thread, regs.rip);
    return true;
  }

  static int FrameCallback(Dwfl_Frame* state, void* arg) {
    auto* session = static_cast<Session*>(arg);
    Dwarf_Addr pc = 0;
    bool is_activation = false;
    if (!dwfl_frame_pc(state, &pc, &is_activation)) {
      session->outcome->stop_reason = dwfl_errmsg(-1);
      return DWARF_CB_ABORT;
    }
    UnwoundFrame frame;
    frame.pc = pc;
    frame.is_activation = is_activation;
    frame.lookup_pc = is_activation || pc == 0 ? pc : pc - 1;
    session->outcome->frames.push_back(frame);
    if (session->outcome->frames.size() >= session->max_frames) {
      session->outcome->stop_reason = "max frames";
      return DWARF_CB_ABORT;
    }
    // The next step needs the CFI of this frame's module.
    session->ReportModuleAt(frame.lookup_pc);
    return DWARF_CB_OK;
  }
};

Unwinder::Unwinder(UnwindOptions options) : options_(std::move(options)) {
  // libdwfl's syntax: "" = the file's directory, ".debug" = its subdirectory, then roots.
  debuginfo_path_ = ":.debug";
  for (const std::string& dir : options_.debug_directories) debuginfo_path_ += ":" + dir;
}

Unwinder::~Unwinder() = default;

void Unwinder::Forget(int pid) {
  std::erase_if(sessions_, [pid](const auto& session) { return session->pid == pid; });
}

Unwinder::Session* Unwinder::GetSession(const UnwindInput& input) {
  for (auto& session : sessions_) {
    if (session->pid != input.pid) continue;
    // A reported module whose mapping changed (dlclose + dlopen) needs a fresh session.
    bool stale = false;
    for (const auto& [start, module] : session->reported) {
      const MapEntry* map = internal::FindMapping(input.maps, start);
      if (map == nullptr || map->start != start || map->path != module.first) {
        stale = true;
        break;
      }
    }
    if (!stale) return session.get();
    Forget(input.pid);
    break;
  }
  auto session = std::make_unique<Session>();
  session->pid = input.pid;
  session->debuginfo_path = debuginfo_path_.data();
  session->callbacks.find_elf = dwfl_build_id_find_elf;
  session->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  session->callbacks.section_address = dwfl_offline_section_address;
  session->callbacks.debuginfo_path = &session->debuginfo_path;
  session->dwfl = dwfl_begin(&session->callbacks);
  if (session->dwfl == nullptr) return nullptr;
  sessions_.push_back(std::move(session));
  return sessions_.back().get();
}

Result<UnwindOutcome> Unwinder::Unwind(const UnwindInput& input) {
  if (!input.regs.Has(kRip) || !input.regs.Has(kRsp)) {
    return MakeError("cannot unwind: the sample lacks rip or rsp");
  }
  UnwindOutcome outcome;
  Session* session = GetSession(input);
  if (session == nullptr) return MakeError(std::string("cannot start libdwfl: ") + dwfl_errmsg(-1));
  session->input = &input;
  session->outcome = &outcome;
  session->max_frames = std::max<size_t>(options_.max_frames, 1);
  session->ReportModuleAt(input.regs.rip);

  static const Dwfl_Thread_Callbacks kThreadCallbacks = {
      .next_thread = &Session::NextThread,
      .get_thread = &Session::GetThread,
      .memory_read = &Session::MemoryRead,
      .set_initial_registers = &Session::SetInitialRegisters,
      .detach = nullptr,
      .thread_detach = nullptr,
  };
  // Attached once per session; later unwinds reuse the state with new inputs.
  if (dwfl_pid(session->dwfl) <= 0) {
    if (!dwfl_attach_state(session->dwfl, BackendElf(), input.pid, &kThreadCallbacks, session)) {
      std::string message = std::string("cannot unwind: ") + dwfl_errmsg(-1);
      Forget(input.pid);
      // Without any module libdwfl cannot pick a backend: frame 0 is all there is.
      outcome.frames.push_back({input.regs.rip, input.regs.rip, true});
      outcome.stop_reason = std::move(message);
      return outcome;
    }
  }
  session->any_failed_read = false;
  const int rc = dwfl_getthread_frames(session->dwfl, input.pid, &Session::FrameCallback, session);
  if (rc != 0 && outcome.stop_reason.empty()) {
    const char* message = dwfl_errmsg(-1);
    outcome.stop_reason = message != nullptr ? message : "unwinding failed";
  }
  if (outcome.stop_reason.empty() && session->any_failed_read) {
    char buffer[96];
    const uint64_t address = session->failed_read;
    const bool above = address >= input.stack_base + input.stack.size();
    std::snprintf(buffer, sizeof(buffer), "%s at 0x%llx",
                  above && address >= input.stack_base ? "stack copy exhausted" : "unreadable memory",
                  static_cast<unsigned long long>(address));
    outcome.stop_reason = buffer;
  }
  session->input = nullptr;
  session->outcome = nullptr;
  if (outcome.frames.empty()) {
    outcome.frames.push_back({input.regs.rip, input.regs.rip, true});
  }
  return outcome;
}

Result<std::vector<UnwoundFrame>> UnwindStack(const UnwindInput& input) {
  Unwinder unwinder;
  ASSIGN_OR_RETURN(UnwindOutcome outcome, unwinder.Unwind(input));
  return std::move(outcome.frames);
}

Result<std::vector<UnwoundFrame>> UnwindFramePointers(const UnwindInput& input, size_t max_frames) {
  if (!input.regs.Has(kRip)) return MakeError("cannot unwind: the sample lacks rip");
  std::vector<UnwoundFrame> frames;
  frames.push_back({input.regs.rip, input.regs.rip, true});
  if (!input.regs.Has(6)) return frames;
  uint64_t fp = input.regs.rbp;
  while (frames.size() < max_frames) {
    uint64_t next_fp = 0;
    uint64_t return_address = 0;
    if (!internal::ReadStackCopy(input, fp, &next_fp) || !internal::ReadStackCopy(input, fp + 8, &return_address))
      break;
    if (return_address == 0) break;
    if (!input.maps.empty()) {
      const MapEntry* map = internal::FindMapping(input.maps, return_address);
      if (map == nullptr || !map->is_executable()) break;
    }
    frames.push_back({return_address, return_address - 1, false});
    if (next_fp <= fp) break;  // the chain must go up the stack
    fp = next_fp;
  }
  return frames;
}

}  // namespace looptrace::symbols
