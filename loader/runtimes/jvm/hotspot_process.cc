#include "loader/runtimes/jvm/hotspot_process.h"

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loader/runtimes/jvm/compiled_scopes.h"
#include "loader/runtimes/jvm/hotspot_layout.h"
#include "loader/runtimes/jvm/java_objects.h"
#include "loader/runtimes/jvm/jvm.h"
#include "loader/runtimes/jvm/method_namer.h"
#include "loader/runtimes/jvm/stub_names.h"
#include "loader/runtimes/jvm/thread_state.h"
#include "loader/runtimes/jvm/vm_structs.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/log.h"

namespace looptrace::loader::jvm {
namespace {

constexpr int kMaxThreads = 4096;
constexpr int kMaxFrames = 256;
constexpr int kMaxSegmentHops = 4096;
constexpr int kMaxHeaps = 8;
constexpr int kMaxCodeMisses = 200;  // Locate's tries (one per poll, 25 ms) before giving up
constexpr std::string_view kUnknownJavaFrame = "[unknown Java frame]";
constexpr std::string_view kUnknownStub = "[HotSpot stub]";

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// A compiled frame BPF sent (LT_HS_COMPILED), not an interpreted one with no bytecode index
// (LT_INTERP_NO_OFFSET has that bit too), nor a stub's (LT_HS_STUB).
bool IsCompiledFrame(const lt_interp_frame& frame) {
  const uint32_t offset = frame.offset & LT_INTERP_NO_OFFSET;
  return offset != LT_INTERP_NO_OFFSET && (offset & (LT_HS_COMPILED | LT_HS_STUB)) == LT_HS_COMPILED;
}

// A frame in one of StubRoutines' stubs (code = its pc).
bool IsStubFrame(const lt_interp_frame& frame) {
  const uint32_t offset = frame.offset & LT_INTERP_NO_OFFSET;
  return offset != LT_INTERP_NO_OFFSET && (offset & (LT_HS_COMPILED | LT_HS_STUB)) == (LT_HS_COMPILED | LT_HS_STUB);
}

// One code heap: its reserved code range and the segment map that finds a block's start.
struct CodeHeap {
  uint64_t low = 0, high = 0, segmap = 0;
  int log2_segment = 0;
};

class HotSpotProcess : public InterpreterSupport {
 public:
  HotSpotProcess(std::string libjvm, int pid)
      : libjvm_(std::move(libjvm)), pid_(pid), memory_(python::ProcessMemory(pid)) {
    what_ = fmt::format("HotSpot ({})", libjvm_);
  }

  const std::string& what() const override { return what_; }

  // The layout comes from the running JVM (Locate); BPF only learns it is one to walk.
  void DescribeLayout(InterpreterBpfConfig* config) const override { config->hotspot_enabled = true; }

  Result<bool> Locate(InterpreterBpfConfig* config) override {
    if (!elf_) {  // opened once: libjvm.so's symbol table is large, Locate is asked often
      auto elf = symbols::ElfFile::Open(libjvm_);
      if (!elf) return MakeError(fmt::format("{}: {}", libjvm_, elf.error().message));
      elf_.emplace(std::move(*elf));
    }
    const symbols::ElfFile* elf = &*elf_;
    auto bias = LoadBias(*elf);
    if (!bias) return false;  // not mapped yet
    auto structs_at = elf->FindObject("gHotSpotVMStructs");
    if (!structs_at)
      return MakeError(fmt::format("{} exports no gHotSpotVMStructs (not a HotSpot?): no Java frames", libjvm_));
    uint64_t structs = 0;
    if (!memory_->Read(*structs_at + *bias, &structs, 8) || !structs) return false;  // not initialized yet
    // Mapped but not relocated yet (a JVM just started): the slot still holds the link-time
    // address, which lies below the load address.
    if (structs < *bias) return false;
    auto fail = [&](const std::string& why) {
      return MakeError(fmt::format("{}: {}: no Java frames in thread dumps, messages still work", what_, why));
    };
    auto vm = ReadVmStructs(*elf, *bias, *memory_);
    if (!vm) return fail(vm.error().message);
    auto layout = LayoutFrom(*vm);
    if (!layout) return fail(layout.error().message);
    uint64_t list = 0;
    if (!memory_->Read(layout->java_thread_list, &list, 8) || !list) return false;  // threads not started yet
    layout_ = *layout;
    namer_ = std::make_unique<MethodNamer>(layout_, *memory_);
    if (auto stub_list = elf->FindObject("_ZN12StubCodeDesc5_listE"))  // StubCodeDesc::_list
      stubs_ = std::make_unique<StubNames>(*stub_list + *bias, *memory_);
    if (layout_.compiled_scopes)
      scopes_ = std::make_unique<CompiledScopes>(layout_, *memory_);
    else
      log::Warning(
          "{}: no compiled frame debug info exported: JIT-compiled frames name their method, no line or inlined callee",
          what_);
    ReadCode();
    if (heaps_.empty() || !interpreter_begin_) {
      // A JVM `run` just started may list its first threads before it made its code heaps
      // and interpreter (Temurin 25 did): ask again, for a while.
      if (++code_misses_ < kMaxCodeMisses) return false;
      return fail("no code heaps or interpreter code found");
    }
    objects_ = JavaObjects::Read(*elf, *bias, *vm, *memory_);
    if (!objects_) log::V1("{}: Java thread names not readable: threads keep their kernel names", what_);
    FillBpfConfig(&config->hotspot);
    log::V1("{}: {} fields and {} types in its VMStructs", what_, vm->offsets.size() + vm->addresses.size(),
            vm->sizes.size());
    return true;
  }

  // A frame BPF walked; one it cannot name is counted and shown as unknown, never guessed.
  // A compiled one stands for the methods inlined at its pc too: the innermost is given.
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats) override {
    if (IsStubFrame(frame)) {
      if (auto name = stubs_ ? stubs_->At(frame.code) : std::nullopt) {
        InterpreterFrame stub;
        stub.function = std::move(*name);
        return stub;
      }
      stats->Add(StatId::interp_frames_unnamed);
      return InterpreterFrame::Marker(kUnknownStub);
    }
    if (IsCompiledFrame(frame)) {
      std::vector<InterpreterFrame> frames;
      ExpandFrame(frame, stats, &frames);
      return frames.front();
    }
    const uint32_t offset = frame.offset & LT_INTERP_NO_OFFSET;
    auto named = namer_ ? namer_->Name(frame.code, offset == LT_INTERP_NO_OFFSET ? -1 : static_cast<int>(offset),
                                       frame.fingerprint)
                        : std::nullopt;
    if (named) return named;
    stats->Add(StatId::interp_frames_unnamed);
    return InterpreterFrame::Marker(kUnknownJavaFrame);
  }

  // A compiled frame (LT_HS_COMPILED): the methods at its pc, inlined ones first, each at
  // its line; the same pc of the same nmethod is named once.
  bool ExpandFrame(const lt_interp_frame& frame, Stats* stats, std::vector<InterpreterFrame>* out) override {
    if (!IsCompiledFrame(frame)) return InterpreterSupport::ExpandFrame(frame, stats, out);
    const CompiledPc key{frame.code, frame.fingerprint, frame.offset & LT_HS_PC_OFFSET};
    auto it = compiled_.find(key);
    if (it == compiled_.end()) {
      if (compiled_.size() >= kMaxCompiledPcs) compiled_.clear();
      it = compiled_.emplace(key, CompiledFrames(key.nmethod, key.compile_id, key.nmethod + key.offset)).first;
    }
    if (it->second.empty()) {  // not that nmethod any more: freed, its memory reused
      stats->Add(StatId::interp_frames_unnamed);
      out->push_back(InterpreterFrame::Marker(kUnknownJavaFrame));
      return true;
    }
    for (const InterpreterFrame& f : it->second) {
      if (f.function == kUnknownJavaFrame) stats->Add(StatId::interp_frames_unnamed);
      out->push_back(f);
    }
    return true;
  }

  CallableName NameCallable(std::span<const uint64_t>, const TargetTextLookup&, Stats*) override { return {}; }

  std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats* stats) override {
    std::map<uint32_t, std::vector<InterpreterFrame>> out;
    if (!namer_) return out;
    ReadCode();
    states_.clear();
    ForEachJavaThread([&](uint64_t thread, uint32_t tid) {
      auto frames = Frames(thread, stats);
      if (auto state = StateOf(thread, frames); !state.empty()) states_[tid] = std::move(state);
      if (!frames.empty()) out[tid] = std::move(frames);
    });
    return out;
  }

  std::optional<std::string> ThreadState(uint32_t tid) const override {
    auto it = states_.find(tid);
    if (it == states_.end()) return std::nullopt;
    return it->second;
  }

  // The java.lang.Thread's name of a Java thread. Every Java thread's is read at once when a
  // thread not seen at the last look is asked for (a dump asks for all of them); a thread
  // that is no Java thread then is remembered as such for a while (a thread the VM has not
  // yet registered, or named, may be one at the next look).
  std::optional<std::string> ThreadName(uint32_t tid) override {
    if (!namer_ || !objects_) return std::nullopt;
    auto it = thread_names_.find(tid);
    const auto now = std::chrono::steady_clock::now();
    auto not_java = not_java_.find(tid);
    if (it == thread_names_.end() && (not_java == not_java_.end() || now - not_java->second > kNotJavaFor)) {
      thread_names_.clear();
      not_java_.clear();
      ForEachJavaThread([&](uint64_t thread, uint32_t thread_tid) {
        if (auto name = objects_->ThreadName(thread)) thread_names_[thread_tid] = std::move(*name);
      });
      it = thread_names_.find(tid);
      if (it == thread_names_.end()) not_java_[tid] = now;
    }
    if (it == thread_names_.end()) return std::nullopt;
    return it->second;
  }

  // The VM's Java threads (main, the event dispatch thread, the program's own, the compiler
  // and service threads; not the launcher's first thread, nor GC workers): the program's
  // work runs on them, not on the thread the session watches first.
  std::vector<uint32_t> ThreadsToSample() override {
    std::vector<uint32_t> out;
    if (namer_) ForEachJavaThread([&](uint64_t, uint32_t tid) { out.push_back(tid); });
    return out;
  }

  // HotSpot's generated code (interpreter, compiled methods, stubs) resolves as "[jit]":
  // native frames end there, the Java frames take its place.
  bool IsInterpreterModule(std::string_view module) const override { return module == "[jit]"; }
  bool IsGeneratedCode(std::string_view module) const override { return module == "[jit]"; }
  bool MarksItsEntry() const override { return true; }
  bool IsInterpreterLoop(std::string_view) const override { return false; }
  bool EndsLoopRun(const lt_interp_frame&) const override { return true; }

 private:
  // The frames of the nmethod at `nmethod` compiled as `compile_id` at `pc`, innermost first
  // (inlined methods, then their callers in it); empty when that nmethod is gone.
  std::vector<InterpreterFrame> CompiledFrames(uint64_t nmethod, uint32_t compile_id, uint64_t pc) {
    std::vector<InterpreterFrame> frames;
    auto scopes = scopes_ ? scopes_->At(nmethod, compile_id, pc) : std::nullopt;
    if (!scopes) return frames;
    for (const Scope& scope : *scopes) {
      auto named = namer_->Name(scope.method, scope.bci);
      frames.push_back(named ? std::move(*named) : InterpreterFrame::Marker(kUnknownJavaFrame));
    }
    return frames;
  }

  // jstack's words for the thread's state: its java.lang.Thread's threadStatus, else the
  // VM's own state and the innermost Java frame (thread_state.h).
  std::string StateOf(uint64_t thread, const std::vector<InterpreterFrame>& frames) {
    if (objects_)
      if (auto status = objects_->ThreadStatus(thread))
        if (auto state = StateFromThreadStatus(*status); !state.empty()) return state;
    auto vm_state = Int(thread + layout_.thread_state);
    if (!vm_state) return "";
    const VmThreadStates states{layout_.new_thread, layout_.in_native, layout_.in_vm, layout_.in_java, layout_.blocked};
    return StateFromVm(*vm_state, frames.empty() ? std::string_view() : frames.front().function, states);
  }

  // Every JavaThread of the VM's thread list with its kernel thread id.
  template <typename Visit>
  void ForEachJavaThread(Visit visit) {
    const HotSpotLayout& l = layout_;
    auto list = Pointer(l.java_thread_list);
    if (!list) return;
    uint32_t length = 0;
    auto threads = Pointer(*list + l.threads_list_threads);
    if (!threads || !memory_->Read(*list + l.threads_list_length, &length, 4)) return;
    for (uint32_t i = 0; i < length && i < kMaxThreads; ++i) {
      auto thread = Pointer(*threads + i * 8ull);
      if (!thread) continue;
      auto osthread = Pointer(*thread + l.thread_osthread);
      int32_t tid = 0;
      if (!osthread || !memory_->Read(*osthread + l.osthread_thread_id, &tid, 4) || tid <= 0) continue;
      visit(*thread, static_cast<uint32_t>(tid));
    }
  }

  std::optional<uint64_t> LoadBias(const symbols::ElfFile& elf) const {
    auto maps = symbols::ReadProcMaps(pid_);
    if (!maps) return std::nullopt;
    for (const auto& m : *maps) {
      if (!m.is_file() || Basename(m.path) != Basename(libjvm_)) continue;
      auto vaddr = elf.FileOffsetToAddress(m.offset);
      if (vaddr) return m.start - (*vaddr & ~uint64_t{0xfff});
    }
    return std::nullopt;
  }

  void FillBpfConfig(lt_hotspot_config* c) const {
    const HotSpotLayout& l = layout_;
    *c = lt_hotspot_config{};
    c->java_thread_list = l.java_thread_list;
    c->interpreter_begin = interpreter_begin_;
    c->interpreter_end = interpreter_end_;
    c->call_stub_return = call_stub_return_;
    for (size_t i = 0; i < heaps_.size() && i < LT_HS_MAX_HEAPS; ++i) {
      c->heaps[i] = {heaps_[i].low, heaps_[i].high, heaps_[i].segmap, static_cast<uint64_t>(heaps_[i].log2_segment)};
      c->nr_heaps = static_cast<uint16_t>(i + 1);
    }
    auto u16 = [](uint64_t v) { return static_cast<uint16_t>(v); };
    c->threads_list_length = u16(l.threads_list_length);
    c->threads_list_threads = u16(l.threads_list_threads);
    c->thread_osthread = u16(l.thread_osthread);
    c->osthread_thread_id = u16(l.osthread_thread_id);
    c->thread_state = u16(l.thread_state);
    c->thread_anchor = u16(l.thread_anchor);
    c->anchor_sp = u16(l.anchor_sp);
    c->anchor_pc = u16(l.anchor_pc);
    c->anchor_fp = u16(l.anchor_fp);
    c->blob_name = u16(l.blob_name);
    c->blob_frame_size = u16(l.blob_frame_size);
    c->nmethod_method = u16(l.nmethod_method);
    c->nmethod_compile_id = l.compiled_scopes ? u16(l.nmethod_compile_id) : 0;
    c->method_const = u16(l.method_const);
    c->const_method_size = u16(l.const_method_size);
    c->heap_block_size = u16(l.heap_block_size);
    c->in_java = u16(l.in_java);
    c->frame_sender_sp = static_cast<int16_t>(l.frame_sender_sp);
    c->frame_method = static_cast<int16_t>(l.frame_method);
    c->frame_bcp = static_cast<int16_t>(l.frame_bcp);
    c->ready = 1;
  }

  std::optional<uint64_t> Pointer(uint64_t address) {
    uint64_t value = 0;
    if (!address || !memory_->Read(address, &value, 8)) return std::nullopt;
    return value;
  }
  std::optional<int32_t> Int(uint64_t address) {
    int32_t value = 0;
    if (!address || !memory_->Read(address, &value, 4)) return std::nullopt;
    return value;
  }

  // The code heaps, the interpreter's code and the call stub's return address: fixed once
  // the JVM started, read again at each dump (cheap) so nothing stale is kept.
  void ReadCode() {
    const HotSpotLayout& l = layout_;
    heaps_.clear();
    if (auto array = Pointer(l.code_heaps); array && *array) {
      auto len = Int(*array + l.array_len);
      auto data = Pointer(*array + l.array_data);
      for (int i = 0; len && data && i < *len && i < kMaxHeaps; ++i) {
        auto heap = Pointer(*data + i * 8ull);
        if (!heap) continue;
        CodeHeap h;
        const uint64_t memory = *heap + l.heap_memory;
        h.low = Pointer(memory + l.space_low).value_or(0);
        h.high = Pointer(memory + l.space_high).value_or(0);
        h.segmap = Pointer(*heap + l.heap_segmap + l.space_low).value_or(0);
        h.log2_segment = Int(*heap + l.heap_log2_segment).value_or(0);
        if (h.low && h.high > h.low && h.segmap && h.log2_segment > 0 && h.log2_segment < 16) heaps_.push_back(h);
      }
    }
    interpreter_begin_ = interpreter_end_ = 0;
    if (auto queue = Pointer(l.interpreter_code); queue && *queue) {
      interpreter_begin_ = Pointer(*queue + l.stub_buffer).value_or(0);
      interpreter_end_ = interpreter_begin_ + Int(*queue + l.stub_buffer_limit).value_or(0);
    }
    call_stub_return_ = Pointer(l.call_stub_return).value_or(0);
  }

  // The CodeBlob holding `pc`, through its heap's segment map (HotSpot's
  // CodeHeap::find_block_for: each map byte says how many segments back to hop).
  std::optional<uint64_t> BlobAt(uint64_t pc) {
    for (const CodeHeap& h : heaps_) {
      if (pc < h.low || pc >= h.high) continue;
      uint64_t index = (pc - h.low) >> h.log2_segment;
      for (int hop = 0; hop < kMaxSegmentHops; ++hop) {
        uint8_t back = 0;
        if (!memory_->Read(h.segmap + index, &back, 1) || back == 0xff) return std::nullopt;  // free
        if (back == 0) return h.low + (index << h.log2_segment) + layout_.heap_block_size;
        if (back > index) return std::nullopt;
        index -= back;
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  bool IsNmethod(uint64_t blob) {
    auto name = Pointer(blob + layout_.blob_name);
    char text[16] = {};
    if (!name || !memory_->Read(*name, text, sizeof(text) - 1)) return false;
    const std::string_view s(text);
    return s == "nmethod" || s == "native nmethod";
  }

  void Add(std::vector<InterpreterFrame>* frames, uint64_t method, int bci, Stats* stats) {
    auto named = namer_->Name(method, bci);
    if (!named) {
      stats->Add(StatId::interp_frames_unnamed);
      frames->push_back(InterpreterFrame::Marker(kUnknownJavaFrame));
      return;
    }
    frames->push_back(*named);
  }

  // The thread's Java frames from its last Java frame anchor, innermost first.
  std::vector<InterpreterFrame> Frames(uint64_t thread, Stats* stats) {
    const HotSpotLayout& l = layout_;
    std::vector<InterpreterFrame> frames;
    const uint64_t anchor = thread + l.thread_anchor;
    uint64_t sp = Pointer(anchor + l.anchor_sp).value_or(0);
    uint64_t fp = Pointer(anchor + l.anchor_fp).value_or(0);
    uint64_t pc = Pointer(anchor + l.anchor_pc).value_or(0);
    if (!sp) return frames;  // running Java code, or no Java frame at all
    if (!pc) pc = Pointer(sp - 8).value_or(0);
    for (int i = 0; i < kMaxFrames && pc; ++i) {
      if (pc == call_stub_return_) break;  // the VM called into Java here: native frames below
      if (pc >= interpreter_begin_ && pc < interpreter_end_) {
        const uint64_t method = Pointer(fp + l.frame_method * 8).value_or(0);
        const uint64_t bcp = Pointer(fp + l.frame_bcp * 8).value_or(0);
        Add(&frames, method, namer_->BciOf(method, bcp), stats);
        sp = Pointer(fp + l.frame_sender_sp * 8).value_or(0);
        pc = Pointer(fp + 8).value_or(0);
        fp = Pointer(fp).value_or(0);
        continue;
      }
      auto blob = BlobAt(pc);
      if (!blob) break;  // not Java code: the walk ends
      auto frame_size = Int(*blob + l.blob_frame_size);
      if (!frame_size || *frame_size <= 0 || *frame_size > (1 << 20)) break;
      // A compiled frame: the methods inlined at its pc, then the nmethod's own.
      if (IsNmethod(*blob)) {
        auto compile_id = scopes_ ? Int(*blob + l.nmethod_compile_id) : std::nullopt;
        auto compiled = compile_id ? CompiledFrames(*blob, static_cast<uint32_t>(*compile_id), pc)
                                   : std::vector<InterpreterFrame>();
        if (compiled.empty()) Add(&frames, Pointer(*blob + l.nmethod_method).value_or(0), -1, stats);
        for (InterpreterFrame& f : compiled) {
          if (f.function == kUnknownJavaFrame) stats->Add(StatId::interp_frames_unnamed);
          frames.push_back(std::move(f));
        }
      }
      sp += static_cast<uint64_t>(*frame_size) * 8;
      pc = Pointer(sp - 8).value_or(0);
      fp = Pointer(sp - 16).value_or(0);
    }
    return frames;
  }

  std::string libjvm_;
  std::optional<symbols::ElfFile> elf_;
  int pid_;
  std::unique_ptr<Memory> memory_;
  std::string what_;
  HotSpotLayout layout_;
  std::unique_ptr<MethodNamer> namer_;
  std::unique_ptr<CompiledScopes> scopes_;  // null: the JVM does not export compiled frames' debug info
  std::unique_ptr<StubNames> stubs_;        // null: libjvm.so has no symbol table to find them by
  // A compiled frame BPF sent, and its frames (CompiledFrames) once named.
  struct CompiledPc {
    uint64_t nmethod = 0;
    uint32_t compile_id = 0, offset = 0;
    bool operator==(const CompiledPc&) const = default;
  };
  struct CompiledPcHash {
    size_t operator()(const CompiledPc& k) const {
      return std::hash<uint64_t>()(k.nmethod ^ (uint64_t{k.compile_id} << 32) ^
                                   (uint64_t{k.offset} * 0x9e3779b97f4a7c15ull));
    }
  };
  static constexpr size_t kMaxCompiledPcs = 1 << 16;
  std::unordered_map<CompiledPc, std::vector<InterpreterFrame>, CompiledPcHash> compiled_;
  std::optional<JavaObjects> objects_;
  std::unordered_map<uint32_t, std::string> thread_names_;                        // ThreadName's last look
  std::unordered_map<uint32_t, std::chrono::steady_clock::time_point> not_java_;  // when looked at
  static constexpr std::chrono::milliseconds kNotJavaFor{250};
  std::unordered_map<uint32_t, std::string> states_;  // ThreadStacks' last look
  std::vector<CodeHeap> heaps_;
  uint64_t interpreter_begin_ = 0, interpreter_end_ = 0, call_stub_return_ = 0;
  int code_misses_ = 0;
};

}  // namespace

Result<std::unique_ptr<InterpreterSupport>> MakeHotSpotSupport(const TargetBinaries& target, int pid) {
  std::optional<std::string> libjvm;
  if (auto maps = symbols::ReadProcMaps(pid))
    for (const auto& m : *maps)
      if (m.is_file() && Basename(m.path) == "libjvm.so") libjvm = m.path;
  if (!libjvm) libjvm = LauncherLibjvm("libjvm.so", target.exe_path);
  if (!libjvm) return std::unique_ptr<InterpreterSupport>();
  return std::make_unique<HotSpotProcess>(*libjvm, pid);
}

}  // namespace looptrace::loader::jvm
