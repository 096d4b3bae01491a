#include "loader/decode/stack_resolver.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/uio.h>
#include <time.h>

#include <cerrno>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/frame_pointers.h"
#include "looptrace/symbols/vdso.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

constexpr auto kMapsRefresh = std::chrono::milliseconds(5);
constexpr uint64_t kUserSpaceEnd = 0x800000000000;  // x86-64, 4-level page tables
constexpr uint64_t kPerfMapMissRefreshNs = 200'000'000;
constexpr const char* kTrampolineName = "[uretprobe trampoline]";

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The outermost frames of a program's or a thread's stack: a walk that reached one is
// complete, whatever the frame pointer or CFI says after it.
bool IsOutermost(const std::string& function) {
  static const std::set<std::string, std::less<>> kEntries = {
      "main",    "_start",   "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3",
      "__clone", "__clone3", "thread_start"};
  std::string_view name = function;
  if (auto paren = name.find('('); paren != std::string_view::npos) name = name.substr(0, paren);
  return kEntries.contains(name);
}

bool ReachedOutermost(const std::vector<ResolvedFrame>& frames) {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it)
    if (!it->inlined) return IsOutermost(it->function);
  return false;
}

const symbols::ElfFile* VdsoElf() {
  static const std::optional<symbols::ElfFile> elf = []() -> std::optional<symbols::ElfFile> {
    if (symbols::VdsoImagePath().empty()) return std::nullopt;
    auto opened = symbols::ElfFile::Open(symbols::VdsoImagePath());
    if (!opened) return std::nullopt;
    return std::move(*opened);
  }();
  return elf ? &*elf : nullptr;
}

}  // namespace

std::string ResolvedFrame::Name() const {
  if (!function.empty()) return inlined ? function + " (inlined)" : function;
  if (unnamed_function) return fmt::format("sub_{:x} ({})", *unnamed_function, module.empty() ? "?" : module);
  return fmt::format("{}+{:#x}", module.empty() ? "?" : module, module_offset);
}

std::string ResolvedFrame::Describe() const {
  if (function.empty() && unnamed_function)
    return fmt::format("pc {:#x} {}+{:#x} (sub_{:x})", pc, module, module_offset, *unnamed_function);
  if (function.empty()) return fmt::format("pc {:#x} {}+{:#x}", pc, module, module_offset);
  return fmt::format("pc {:#x} {} ({}){}{}", pc, module, function, location.empty() ? "" : " " + location,
                     inlined ? " [inlined]" : "");
}

StackResolver::StackResolver(pid_t pid, symbols::ProcessSymbolizer* symbolizer, Stats* stats, MapsReader read_maps)
    : pid_(pid),
      symbolizer_(symbolizer),
      stats_(stats),
      read_maps_(read_maps ? std::move(read_maps) : MapsReader([pid] { return symbols::ReadProcMaps(pid); })),
      perf_map_(symbols::PerfMapPath(pid)),
      copy_(std::make_unique<lt_stack_copy>()) {
  RefreshMaps();
}

StackResolver::~StackResolver() = default;

void StackResolver::OnExec() {
  maps_read_at_ = {};
  names_.clear();
  keeps_frame_pointers_.clear();
  unwinder_.Forget(pid_);
  table_unwinder_.Forget(pid_);
}

bool StackResolver::RefreshMaps() {
  maps_read_at_ = std::chrono::steady_clock::now();
  auto maps = read_maps_();
  if (!maps) {
    process_gone_ = true;  // keep what we had: addresses stay nameable
    return false;
  }
  if (maps->empty()) {
    maps_read_at_ = {};  // caught in the middle of an exec: try again at the next miss
    return false;
  }
  std::sort(maps->begin(), maps->end(),
            [](const symbols::MapEntry& a, const symbols::MapEntry& b) { return a.start < b.start; });
  if (maps->size() != maps_.size() ||
      !std::equal(maps->begin(), maps->end(), maps_.begin(), [](const auto& a, const auto& b) {
        return a.start == b.start && a.end == b.end && a.path == b.path && a.inode == b.inode;
      })) {
    names_.clear();  // a library may have been replaced at the same addresses
  }
  maps_ = std::move(*maps);
  return true;
}

const symbols::MapEntry* StackResolver::Find(uint64_t pc) {
  auto lookup = [&]() -> const symbols::MapEntry* {
    auto it = std::upper_bound(maps_.begin(), maps_.end(), pc,
                               [](uint64_t a, const symbols::MapEntry& m) { return a < m.start; });
    if (it == maps_.begin()) return nullptr;
    --it;
    return pc < it->end ? &*it : nullptr;
  };
  const symbols::MapEntry* map = lookup();
  // A user-space address the maps lack may be a library loaded since (kernel-half ones are
  // garbage from a broken walk: no reason to look).
  if (!map && pc < kUserSpaceEnd && !process_gone_ && std::chrono::steady_clock::now() - maps_read_at_ > kMapsRefresh &&
      RefreshMaps())
    map = lookup();
  return map;
}

StackResolver::Where StackResolver::Classify(uint64_t pc, const symbols::MapEntry** out) {
  const symbols::MapEntry* map = Find(pc);
  *out = map;
  if (!map) return Where::kInvalid;
  if (map->path == "[uprobes]") return Where::kTrampoline;
  if (!map->is_executable()) return Where::kInvalid;
  if (map->path == "[vdso]") return Where::kVdso;
  if (map->is_file()) return Where::kFile;
  if (map->path.empty() || map->path.starts_with("/memfd:") || map->path.starts_with("[anon")) return Where::kJit;
  return Where::kInvalid;  // [stack], [heap] ... executable but no code of its own
}

const std::vector<ResolvedFrame>& StackResolver::Name(uint64_t pc, uint64_t lookup, Where where,
                                                      const symbols::MapEntry* map) {
  if (auto it = names_.find(lookup); it != names_.end() && it->second.front().pc == pc) return it->second;
  std::vector<ResolvedFrame> frames;
  ResolvedFrame base;
  base.pc = pc;
  base.module_offset = map ? lookup - map->start + map->offset : lookup;
  bool cacheable = true;
  switch (where) {
    case Where::kFile: {
      base.module = Basename(map->path);
      auto where_full = symbolizer_->SymbolizeFull(lookup);
      if (where_full && !where_full->module.empty()) {
        base.module = Basename(where_full->module);
        base.module_offset = where_full->module_offset;
        base.unnamed_function = where_full->unnamed_function_address;
        for (const auto& f : where_full->frames) {
          ResolvedFrame frame = base;
          frame.function = f.function;
          frame.location = f.file.empty() ? "" : f.Location();
          frame.inlined = f.inlined;
          frames.push_back(std::move(frame));
        }
        if (frames.empty() && !where_full->function.empty()) {
          base.function = where_full->function;
          frames.push_back(base);
        }
      }
      break;
    }
    case Where::kVdso:
      base.module = "[vdso]";
      if (const symbols::ElfFile* vdso = VdsoElf(); vdso && map->end - map->start == symbols::VdsoImageSize())
        if (const symbols::Symbol* sym = vdso->FindFunctionOrLabel(lookup - map->start)) base.function = sym->demangled;
      break;
    case Where::kJit: {
      base.module = "[jit]";
      base.module_offset = lookup;
      // A JIT reuses the addresses of code it freed, appending a line for the new method:
      // a sample taken after the last look at the map may run code only a newer line names,
      // so the map is looked at again (one stat when it did not grow), and JIT names are
      // never cached.
      cacheable = false;
      uint64_t now = MonotonicNs();
      if (sample_at_ns_ > perf_map_.checked_at_ns()) perf_map_.Refresh(now);
      const std::string* name = perf_map_.Lookup(lookup, sample_at_ns_);
      if (!name && now - perf_map_.checked_at_ns() > kPerfMapMissRefreshNs) {
        // A line still buffered by the JIT when the sample was taken.
        perf_map_.Refresh(now);
        name = perf_map_.Lookup(lookup, sample_at_ns_);
      }
      if (name) base.function = *name;
      break;
    }
    case Where::kTrampoline:
      base.module = "[uprobes]";
      base.function = kTrampolineName;
      break;
    case Where::kInvalid:
      break;
  }
  if (frames.empty()) frames.push_back(base);
  if (!cacheable) {
    static thread_local std::vector<ResolvedFrame> uncached;
    uncached = std::move(frames);
    return uncached;
  }
  auto& slot = names_[lookup];
  slot = std::move(frames);
  return slot;
}

bool StackResolver::KeepsNoFramePointers(const ResolvedFrame& last) {
  if (last.module.empty() || last.module.front() == '[') return false;
  const symbols::MapEntry* map = Find(last.pc);
  if (!map || !map->is_file()) return false;
  auto [it, inserted] = keeps_frame_pointers_.try_emplace(map->path);
  if (inserted) {
    // The module the frame was named from: a large executable is not read a second time
    // while the drain waits (node's symbol table takes a second on a loaded machine).
    if (auto elf = symbolizer_->cache().Elf(symbols::MappedFileOpenPath(pid_, *map)))
      it->second = symbols::KeepsFramePointers(**elf);
  }
  return it->second && !*it->second;
}

std::string StackResolver::FramePointerStop(const ResolvedFrame* last) {
  if (!last || last->module.empty() || last->module.front() == '[') return "frame pointer invalid";
  // The frame whose function should have set up the frame pointer is the last good one.
  if (KeepsNoFramePointers(*last))
    return fmt::format("{} keeps no frame pointers (--dwarf-unwind unwinds it)", last->module);
  return fmt::format("frame pointer invalid after {}", last->Name());
}

// Appends the frames at `pc` unless it lies outside the target's code; false (with `stop`)
// when the walk ends here.
bool StackResolver::Validate(uint64_t pc, uint64_t lookup, std::vector<ResolvedFrame>* out, std::string* stop) {
  const symbols::MapEntry* map = nullptr;
  const Where where = Classify(pc, &map);
  if (where == Where::kInvalid) {
    stats_->Add(StatId::bogus_frames_dropped);
    *stop = "";  // the caller words it
    return false;
  }
  const auto& frames = Name(pc, lookup, where, map);
  out->insert(out->end(), frames.begin(), frames.end());
  if (where == Where::kTrampoline) {
    *stop = "uretprobe trampoline (the real return address was not recorded)";
    return false;
  }
  return true;
}

ResolvedStack StackResolver::FromIps(std::span<const uint64_t> ips, std::span<const lt_shadow_frame> shadow) {
  ResolvedStack stack;
  size_t next_shadow = 0;
  for (size_t i = 0; i < ips.size(); ++i) {
    uint64_t pc = ips[i];
    const symbols::MapEntry* map = nullptr;
    Where where = Classify(pc, &map);
    if (where == Where::kTrampoline && next_shadow < shadow.size()) {
      // The k-th trampoline from the innermost frame stands for the k-th pending uretprobe.
      pc = shadow[next_shadow++].ret;
      stats_->Add(StatId::uretprobe_frames_restored);
      where = Classify(pc, &map);
    }
    // Past main or a thread's entry the chain runs into the C runtime's frames, which keep
    // no frame pointer: nothing to report.
    if (where == Where::kInvalid && ReachedOutermost(stack.frames)) return stack;
    const ResolvedFrame last = stack.frames.empty() ? ResolvedFrame{} : stack.frames.back();
    std::string stop;
    if (!Validate(pc, i == 0 ? pc : pc - 1, &stack.frames, &stop)) {
      stack.stop = !stop.empty() ? stop
                   : i == 0      ? "the sampled pc lies outside the target's code"
                                 : FramePointerStop(&last);
      log::V2("stack walk of {} ips ends at #{} {:#x} (maps: {}, in {}): {}", ips.size(), i, pc, maps_.size(),
              map ? map->path + " " + map->perms : "none", stack.stop);
      return stack;
    }
  }
  if (ips.size() >= LT_MAX_SAMPLE_FRAMES) {
    stack.stop = "max frames";
  } else if (!stack.frames.empty() && !ReachedOutermost(stack.frames)) {
    // The chain ended early (a null frame pointer) inside code that keeps none: its callers
    // are lost. (Not worded otherwise: walks BPF cut at the interpreter end so on purpose.)
    if (KeepsNoFramePointers(stack.frames.back())) stack.stop = FramePointerStop(&stack.frames.back());
  }
  return stack;
}

std::string StackResolver::DwarfStop(const std::string& reason, const ResolvedFrame* last, uint64_t last_pc) {
  if (reason.empty()) return "";
  if (reason == "max frames") return reason;
  if (reason.starts_with("stack copy exhausted")) return "stack copy too short";
  if (reason.starts_with("unreadable memory")) return "unreadable memory";
  const symbols::MapEntry* map = Find(last_pc);
  const std::string module = last ? last->module : map ? Basename(map->path) : "";
  if (!module.empty()) {
    std::string lower = reason;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("dwarf") != std::string::npos || lower.find("cfi") != std::string::npos ||
        lower.find("address range") != std::string::npos || lower.find("no module") != std::string::npos)
      return fmt::format("no CFI for {}", module);
    return fmt::format("{} (in {})", reason, module);
  }
  return reason;
}

namespace {

// Whether a walk over compiled rows ended where libdwfl could not go further either: the
// thread's first frame, the end of the stack copy, code outside every module (JIT), the
// frame limit.
bool TableWalkIsFinal(const std::string& stop_reason) {
  return stop_reason.empty() || stop_reason == "stack copy exhausted" ||
         stop_reason == "no module at the return address" || stop_reason == "max frames";
}

}  // namespace

ResolvedStack StackResolver::FromCopy(const symbols::UnwindRegisters& regs, uint64_t stack_base,
                                      std::span<const uint8_t> bytes, std::span<const lt_shadow_frame> shadow) {
  ResolvedStack stack;
  // Put back the return addresses pending uretprobes replaced.
  bytes_.assign(bytes.begin(), bytes.end());
  for (const lt_shadow_frame& f : shadow) {
    if (f.slot < stack_base || f.slot - stack_base > bytes_.size() || bytes_.size() - (f.slot - stack_base) < 8)
      continue;
    uint64_t now = 0;
    std::memcpy(&now, bytes_.data() + (f.slot - stack_base), 8);
    if (now == f.ret) continue;
    std::memcpy(bytes_.data() + (f.slot - stack_base), &f.ret, 8);
    stats_->Add(StatId::uretprobe_frames_restored);
  }
  symbols::UnwindInput input;
  input.pid = pid_;
  input.regs = regs;
  input.stack_base = stack_base;
  input.stack = bytes_;
  Find(regs.rip);  // re-reads the maps when the sampled pc lies in a mapping they lack
  input.maps = maps_;
  // The rows compiled from .eh_frame walk most stacks whole, ~17x cheaper than libdwfl
  // (bench/unwind_bench.cc); libdwfl's full DWARF interpreter takes over where a row cannot
  // say how to go on (DWARF expressions, signal frames, CFI only in .debug_frame).
  auto outcome = table_unwinder_.Unwind(input);
  // A copy BPF sent because its walk met a library mapped since (dlopen): the maps read
  // before lack it too; read them again and walk once more.
  if (outcome && outcome->stop_reason == "no module at the return address" && !outcome->frames.empty() &&
      Find(outcome->frames.back().lookup_pc) != nullptr) {
    input.maps = maps_;
    outcome = table_unwinder_.Unwind(input);
  }
  if (outcome && !TableWalkIsFinal(outcome->stop_reason)) outcome = unwinder_.Unwind(input);
  // libdwfl learns modules as the walk reaches them; a walk that stopped where it met a new
  // one goes on the second time.
  if (outcome && !outcome->stop_reason.empty() && outcome->modules_reported > 0) {
    if (auto again = unwinder_.Unwind(input); again && again->frames.size() > outcome->frames.size())
      outcome = std::move(again);
  }
  if (!outcome || outcome->frames.empty()) {
    stack.stop = outcome ? "no frame" : outcome.error().message;
    return stack;
  }
  for (size_t i = 0; i < outcome->frames.size(); ++i) {
    const symbols::UnwoundFrame& f = outcome->frames[i];
    const ResolvedFrame last_copy = stack.frames.empty() ? ResolvedFrame{} : stack.frames.back();
    const symbols::MapEntry* map = nullptr;
    if (Classify(f.pc, &map) == Where::kInvalid && ReachedOutermost(stack.frames)) return stack;
    std::string stop;
    if (!Validate(f.pc, f.lookup_pc, &stack.frames, &stop)) {
      stack.stop = !stop.empty() ? stop
                   : i == 0      ? "the sampled pc lies outside the target's code"
                            : fmt::format("return address outside every executable mapping after {}", last_copy.Name());
      if (log::Enabled(log::Level::kV2)) {
        std::string frames;
        for (const auto& r : stack.frames) frames += "\n    " + r.Describe();
        log::V2("DWARF walk ends at #{} {:#x}: {}{}", i, f.pc, stack.stop, frames);
      }
      return stack;
    }
  }
  const ResolvedFrame* last = stack.frames.empty() ? nullptr : &stack.frames.back();
  if (!ReachedOutermost(stack.frames))
    stack.stop = DwarfStop(outcome->stop_reason, last, outcome->frames.back().lookup_pc);
  return stack;
}

std::vector<lt_shadow_frame> StackResolver::LiveShadow(std::span<const lt_shadow_frame> shadow) {
  std::vector<lt_shadow_frame> live;
  for (const lt_shadow_frame& f : shadow) {
    uint64_t now = 0;
    iovec local{&now, sizeof(now)};
    iovec remote{reinterpret_cast<void*>(f.slot), sizeof(now)};
    if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) == sizeof(now) && now != f.ret) live.push_back(f);
  }
  return live;
}

std::optional<ResolvedStack> StackResolver::FromBlockedThread(uint32_t tid, std::span<const lt_shadow_frame> shadow) {
  std::ifstream file(fmt::format("/proc/{}/task/{}/syscall", pid_, tid));
  std::string line;
  if (!std::getline(file, line) || line.starts_with("running")) return std::nullopt;
  // "NR ARG1..ARG6 SP PC" in a system call, "-1 SP PC" blocked outside one.
  std::istringstream in(line);
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  if (fields.size() < 3) return std::nullopt;
  uint64_t sp = 0, pc = 0;
  try {
    sp = std::stoull(fields[fields.size() - 2], nullptr, 16);
    pc = std::stoull(fields[fields.size() - 1], nullptr, 16);
  } catch (...) {
    return std::nullopt;
  }
  if (!sp || !pc) return std::nullopt;
  symbols::UnwindRegisters regs;
  regs.Set(16, pc);
  regs.Set(7, sp);
  return FromWaitingThread(regs, shadow);
}

std::optional<ResolvedStack> StackResolver::FromWaitingThread(const symbols::UnwindRegisters& regs,
                                                              std::span<const lt_shadow_frame> shadow) {
  const uint64_t sp = regs.rsp;
  if (!sp || !regs.rip) return std::nullopt;
  std::vector<uint8_t> bytes(LT_MAX_STACK_COPY);
  iovec local{bytes.data(), bytes.size()};
  iovec remote{reinterpret_cast<void*>(sp), bytes.size()};
  // A partial read stops at the first unmapped page: the top of the stack.
  ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  if (n <= 0) {
    stats_->Add(StatId::stack_copy_failed);
    return std::nullopt;
  }
  bytes.resize(static_cast<size_t>(n));
  auto live = LiveShadow(shadow);
  return FromCopy(regs, sp, bytes, live);
}

std::optional<StackSample> StackResolver::Decode(std::span<const uint8_t> raw, ResolvedStack* resolved) {
  lt_record_header header;
  std::memcpy(&header, raw.data(), sizeof(header));
  StackSample sample;
  ResolvedStack stack;
  bool cut_at_interpreter = false;
  if (header.type == LT_RECORD_SAMPLE) {
    constexpr size_t kIps = offsetof(lt_sample_record, ips);
    lt_sample_record rec;
    if (raw.size() < kIps) return std::nullopt;
    std::memcpy(&rec, raw.data(), kIps);
    if (rec.nr_ips > LT_MAX_SAMPLE_FRAMES || rec.nr_shadow > LT_MAX_SHADOW || header.size != kIps + 8 * rec.nr_ips ||
        raw.size() < header.size)
      return std::nullopt;
    std::memcpy(rec.ips, raw.data() + kIps, 8 * rec.nr_ips);
    sample.ts_ns = rec.ts_ns;
    sample_at_ns_ = rec.ts_ns;
    sample.tid = rec.tid;
    sample.on_cpu = rec.kind == LT_SAMPLE_CPU;
    if (rec.nr_ips == 0) {
      stack.stop = "no user stack";
    } else {
      stack = FromIps(std::span<const uint64_t>(reinterpret_cast<const uint64_t*>(rec.ips), rec.nr_ips),
                      std::span<const lt_shadow_frame>(rec.shadow, rec.nr_shadow));
    }
    // Cut on purpose: the interpreter's frames that come with it take the place of the rest.
    cut_at_interpreter = rec.walk_end == LT_WALK_AT_INTERPRETER;
    if (cut_at_interpreter) stack.stop = kCutAtInterpreter;
  } else if (header.type == LT_RECORD_SAMPLE_COPY) {
    constexpr size_t kBytes = offsetof(lt_stack_copy, bytes);
    lt_stack_copy& copy = *copy_;
    if (raw.size() < kBytes) return std::nullopt;
    std::memcpy(&copy, raw.data(), kBytes);
    if (copy.size > LT_MAX_STACK_COPY || copy.nr_shadow > LT_MAX_SHADOW || header.size != kBytes + copy.size ||
        raw.size() < header.size)
      return std::nullopt;
    ++copies_decoded_;
    sample.ts_ns = copy.ts_ns;
    sample_at_ns_ = copy.ts_ns;
    sample.tid = copy.tid;
    sample.on_cpu = copy.kind == LT_SAMPLE_CPU;
    symbols::UnwindRegisters regs;
    for (int i = 0; i < LT_UNWIND_REGS; ++i)
      if (copy.valid_mask & (1u << i)) regs.Set(i, copy.regs[i]);
    if (copy.size == 0) {
      // Nothing readable at the stack pointer: only where it was.
      log::V2("stack copy of thread {} faulted: sp {:#x} pc {:#x}", copy.tid, copy.regs[7], copy.regs[16]);
      stats_->Add(StatId::stack_copy_failed);
      std::string stop;
      if (regs.Has(16)) Validate(regs.rip, regs.rip, &stack.frames, &stop);
      stack.stop = "stack copy faulted";

    } else {
      stack = FromCopy(regs, copy.regs[7], std::span<const uint8_t>(raw.data() + kBytes, copy.size),
                       std::span<const lt_shadow_frame>(copy.shadow, copy.nr_shadow));
    }
  } else {
    return std::nullopt;
  }
  sample_at_ns_ = symbols::PerfMap::kNow;
  // The share of whole stacks (data quality): a walk cut on purpose is not a try.
  if (!cut_at_interpreter) {
    stack.tried = true;
    stack.whole = ReachedOutermost(stack.frames);
    stats_->Add(StatId::user_stacks_sampled);
    if (stack.whole) stats_->Add(StatId::user_stacks_complete);
  }
  // The process may have exited since the sample: its files still name the frames.
  // Asked every 10 ms, not at every stack: one syscall a stack was 7% of the loader's CPU on
  // a busy server.
  if (const auto now = std::chrono::steady_clock::now(); !process_gone_ && now - gone_checked_at_ >= kGoneCheck) {
    gone_checked_at_ = now;
    if (kill(pid_, 0) != 0 && errno == ESRCH) process_gone_ = true;
  }
  if (process_gone_) stats_->Add(StatId::samples_after_exit);
  sample.frames.reserve(stack.frames.size());
  for (const ResolvedFrame& f : stack.frames) sample.frames.push_back(f.Name());
  sample.stop = stack.stop;
  if (resolved) *resolved = std::move(stack);
  return sample;
}

void StackResolver::Finish() {
  stats_->Add(StatId::perf_map_bad_lines, perf_map_.malformed_lines());
  const uint64_t replaced = symbolizer_->stats().modules_replaced;
  if (replaced > reported_replaced_) stats_->Add(StatId::module_replaced, replaced - reported_replaced_);
  reported_replaced_ = replaced;
}

}  // namespace looptrace::loader
