#include "loader/runtimes/python/python_process.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "loader/runtimes/python/python.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/symbols/symbolizer.h"
#include "looptrace/util/log.h"

namespace looptrace::loader::python {
namespace {

constexpr uint64_t kObType = 8;  // PyObject.ob_type, every version

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// 3.13's _Py_DebugOffsets, in 8-byte words from the start of _PyRuntime.
enum DebugWord {
  kCookie = 0,
  kVersion = 1,
  kInterpretersHead = 5,
  kThreadsHead = 9,
  kTstateNext = 21,
  kTstateInterp = 22,
  kTstateCurrentFrame = 23,
  kTstateThreadId = 24,
  kFramePrevious = 29,
  kFrameExecutable = 30,
  kFrameInstrPtr = 31,
  kFrameOwner = 33,
  kCodeFilename = 35,
  kCodeName = 36,
  kCodeQualname = 37,
  kCodeLinetable = 38,
  kCodeFirstlineno = 39,
  kCodeAdaptive = 43,
  kTypeName = 47,
  kDebugWords = 48,
};

// Takes 3.13's offsets from the interpreter itself (its _PyRuntime's statically initialized
// debug offsets, in the file): an error when the cookie or the version is not what the
// file's name says.
Result<void> ApplyDebugOffsets(const symbols::ElfFile& elf, InterpreterFile* file) {
  auto bytes = elf.ReadAtAddress(file->runtime_address, kDebugWords * 8);
  if (!bytes || bytes->size() < kDebugWords * 8)
    return MakeError(fmt::format("{}: cannot read _Py_DebugOffsets", file->path));
  uint64_t w[kDebugWords];
  std::memcpy(w, bytes->data(), sizeof(w));
  if (std::memcmp(bytes->data(), "xdebugpy", 8) != 0)
    return MakeError(fmt::format("{}: _PyRuntime does not start with CPython's debug offsets", file->path));
  const int major = static_cast<int>((w[kVersion] >> 24) & 0xff), minor = static_cast<int>((w[kVersion] >> 16) & 0xff);
  if (major != file->major || minor != file->minor)
    return MakeError(
        fmt::format("{} says it is CPython {}.{}, its name {}.{}", file->path, major, minor, file->major, file->minor));
  Layout& l = file->layout;
  auto set = [&](uint16_t* field, DebugWord word) {
    if (w[word] < 0x8000 && *field != w[word]) {
      log::V1("CPython {}.{}: {} says offset {} where the table has {}", major, minor, file->path, w[word], *field);
      *field = static_cast<uint16_t>(w[word]);
    }
  };
  set(&l.runtime_interpreters_head, kInterpretersHead);
  set(&l.interp_tstate_head, kThreadsHead);
  set(&l.tstate_next, kTstateNext);
  set(&l.tstate_interp, kTstateInterp);
  set(&l.tstate_frame, kTstateCurrentFrame);
  set(&l.tstate_thread_id, kTstateThreadId);
  set(&l.frame_back, kFramePrevious);
  set(&l.frame_code, kFrameExecutable);
  set(&l.frame_instr, kFrameInstrPtr);
  set(&l.frame_owner, kFrameOwner);
  set(&l.code_filename, kCodeFilename);
  set(&l.code_name, kCodeName);
  set(&l.code_qualname, kCodeQualname);
  set(&l.code_linetable, kCodeLinetable);
  set(&l.code_firstlineno, kCodeFirstlineno);
  set(&l.code_adaptive, kCodeAdaptive);
  set(&l.type_name, kTypeName);
  file->layout_from_interpreter = true;
  return {};
}

// PY_VERSION_HEX from Py_Version (exported since 3.11), or nothing.
std::optional<uint32_t> VersionHex(const symbols::ElfFile& elf) {
  auto at = elf.FindObject("Py_Version");
  if (!at) return std::nullopt;
  auto bytes = elf.ReadAtAddress(*at, 4);
  if (!bytes || bytes->size() < 4) return std::nullopt;
  uint32_t v = 0;
  std::memcpy(&v, bytes->data(), 4);
  return v;
}

}  // namespace

Result<InterpreterFile> FindInterpreterFile(const TargetBinaries& target) {
  std::vector<std::string> candidates;
  if (auto lib = LibpythonOf(target)) candidates.push_back(*lib);
  candidates.push_back(target.exe_path);
  for (const std::string& path : candidates) {
    auto elf = symbols::ElfFile::Open(path);
    if (!elf) continue;
    auto runtime = elf->FindObject("_PyRuntime");
    if (!runtime) continue;
    InterpreterFile file;
    file.path = path;
    file.runtime_address = *runtime;
    file.code_type_address = elf->FindObject("PyCode_Type").value_or(0);
    file.type_type_address = elf->FindObject("PyType_Type").value_or(0);
    std::optional<int> minor = MinorVersionOf(RealPath(path));
    if (!minor) minor = MinorVersionOf(RealPath(target.exe_path));
    if (auto hex = VersionHex(*elf)) {
      file.major = static_cast<int>((*hex >> 24) & 0xff);
      minor = static_cast<int>((*hex >> 16) & 0xff);
    }
    if (!minor) return MakeError(fmt::format("{}: cannot tell its CPython version", path));
    file.minor = *minor;
    auto layout = LayoutOf(file.major, file.minor);
    if (!layout)
      return MakeError(fmt::format("CPython {}.{} ({}): no Python frames or callback names (looptrace knows {})",
                                   file.major, file.minor, path, SupportedVersions()));
    file.layout = *layout;
    if (!file.code_type_address)
      return MakeError(fmt::format("CPython {}.{} ({}): no PyCode_Type symbol", file.major, file.minor, path));
    if (file.minor >= 13) RETURN_IF_ERROR(ApplyDebugOffsets(*elf, &file));
    return file;
  }
  return MakeError(fmt::format("{}: no _PyRuntime in it or in a libpython it uses", target.exe_path));
}

namespace {

class CPythonProcess : public InterpreterSupport {
 public:
  CPythonProcess(InterpreterFile file, int pid)
      : file_(std::move(file)),
        module_(Basename(file_.path)),
        real_module_(Basename(RealPath(file_.path))),
        pid_(pid),
        namer_(file_.layout, ProcessMemory(pid)),
        memory_(ProcessMemory(pid)) {
    what_ = fmt::format("CPython {}.{} ({})", file_.major, file_.minor, file_.path);
  }

  const std::string& what() const override { return what_; }

  void DescribeLayout(InterpreterBpfConfig* config) const override { config->python_layout = ToBpf(file_.layout); }

  Result<bool> Locate(InterpreterBpfConfig* config) override {
    auto bias = LoadBias();
    if (!bias) return false;  // not mapped yet
    const Layout& l = file_.layout;
    const uint64_t runtime = file_.runtime_address + *bias;
    const uint64_t code_type = file_.code_type_address + *bias;
    uint64_t interp = 0;
    if (!memory_->Read(runtime + l.runtime_interpreters_head, &interp, sizeof(interp))) return false;
    // Not initialized yet: null, or (a target found within milliseconds of its start, before
    // the dynamic linker or Py_Initialize filled it in) no pointer at all.
    if (interp < 0x10000 || interp % 8 != 0) return false;
    auto fail = [&](std::string_view why) {
      return MakeError(
          fmt::format("{}: the layout of CPython {}.{} does not match the running interpreter ({}): "
                      "no Python frames or callback names, messages still work",
                      file_.path, file_.major, file_.minor, why));
    };
    // PyCode_Type is a type ("code"), whose type is PyType_Type.
    uint64_t type_of_code = 0, name_ptr = 0;
    char name[8] = {};
    if (!memory_->Read(code_type + kObType, &type_of_code, 8) ||
        (file_.type_type_address && type_of_code != file_.type_type_address + *bias))
      return fail("PyCode_Type is not a type object");
    if (!memory_->Read(code_type + l.type_name, &name_ptr, 8) || !memory_->Read(name_ptr, name, 5) ||
        std::string_view(name, 5) != std::string_view("code\0", 5))
      return fail("PyCode_Type is not named \"code\"");
    // A thread state points back at its interpreter.
    uint64_t tstate = 0, back = 0;
    if (!memory_->Read(interp + l.interp_tstate_head, &tstate, 8)) return fail("cannot read the interpreter state");
    if (tstate && l.tstate_interp != kNone && (!memory_->Read(tstate + l.tstate_interp, &back, 8) || back != interp))
      return fail("a thread state does not point at its interpreter");
    namer_.set_code_type(code_type);
    interp_head_ = runtime + l.runtime_interpreters_head;
    code_type_ = code_type;
    config->python_addresses.interp_head = runtime + l.runtime_interpreters_head;
    config->python_addresses.code_type = code_type;
    log::V1("{}: _PyRuntime at {:#x}, layout {}", what_, runtime,
            file_.layout_from_interpreter ? "from _Py_DebugOffsets" : "from looptrace's table");
    return true;
  }

  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats) override {
    return namer_.NameFrame(frame, stats);
  }

  bool NamesFramesByCodeAlone() const override { return true; }  // CodeNamer: by address and co_firstlineno

  CallableName NameCallable(std::span<const uint64_t> slots, const TargetTextLookup& texts, Stats* stats) override {
    return namer_.NameCallable(slots, texts, stats);
  }

  bool ReadsThreadStacks() const override { return true; }

  std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats* stats) override {
    std::map<uint32_t, std::vector<InterpreterFrame>> out;
    if (!code_type_) return out;
    const Layout& l = file_.layout;
    uint64_t interp = 0, tstate = 0;
    if (!memory_->Read(interp_head_, &interp, 8) || !interp ||
        !memory_->Read(interp + l.interp_tstate_head, &tstate, 8))
      return out;
    for (int t = 0; t < kMaxThreads && tstate; ++t) {
      if (auto tid = ThreadId(tstate)) out[*tid] = Frames(tstate, stats);
      if (!memory_->Read(tstate + l.tstate_next, &tstate, 8)) break;
    }
    return out;
  }

  bool IsInterpreterModule(std::string_view module) const override {
    return module == module_ || module == real_module_;
  }
  bool IsInterpreterLoop(std::string_view function) const override { return function == "_PyEval_EvalFrameDefault"; }
  bool EndsLoopRun(const lt_interp_frame& frame) const override {
    // Before 3.11 every Python call is its own C call of the loop.
    return file_.minor <= 10 || (frame.offset & LT_INTERP_ENTRY);
  }

 private:
  // Where the file is mapped: its first mapping's start minus the address of that offset.
  std::optional<uint64_t> LoadBias() const {
    auto maps = symbols::ReadProcMaps(pid_);
    if (!maps) return std::nullopt;
    struct stat st;
    if (stat(file_.path.c_str(), &st) != 0) return std::nullopt;
    for (const auto& m : *maps) {
      if (!m.is_file() || m.inode != st.st_ino) continue;
      if (Basename(m.path) != real_module_) continue;
      auto elf = symbols::ModuleCache::Default()->Elf(file_.path);  // read once, not at every look
      if (!elf) return std::nullopt;
      auto vaddr = (*elf)->FileOffsetToAddress(m.offset);
      if (!vaddr) return std::nullopt;
      return m.start - (*vaddr & ~uint64_t{0xfff});
    }
    return std::nullopt;
  }

  static constexpr int kMaxThreads = 256;
  static constexpr int kMaxFrames = 256;
  static constexpr uint64_t kGlibcPthreadTid = 720;  // struct pthread's tid (x86-64 glibc)
  static constexpr uint8_t kOwnedByCStack = 3;       // 3.12+: an entry shim, no code

  // The kernel's id of a thread state's thread: native_thread_id (3.11+), else the tid glibc
  // keeps in the thread's struct pthread (its pthread_t).
  std::optional<uint32_t> ThreadId(uint64_t tstate) {
    const Layout& l = file_.layout;
    uint64_t native = 0, pthread = 0;
    if (l.tstate_native_thread_id != kNone) {
      if (memory_->Read(tstate + l.tstate_native_thread_id, &native, 8) && native) return static_cast<uint32_t>(native);
      return std::nullopt;
    }
    int32_t tid = 0;
    if (!memory_->Read(tstate + l.tstate_thread_id, &pthread, 8) || !pthread ||
        !memory_->Read(pthread + kGlibcPthreadTid, &tid, 4) || tid <= 0)
      return std::nullopt;
    return static_cast<uint32_t>(tid);
  }

  // The thread state's frames, as BPF walks them (bpf/looptrace.bpf.c py_frame_step).
  std::vector<InterpreterFrame> Frames(uint64_t tstate, Stats* stats) {
    const Layout& l = file_.layout;
    std::vector<InterpreterFrame> frames;
    uint64_t frame = 0;
    if (!memory_->Read(tstate + l.tstate_frame, &frame, 8)) return frames;
    if (l.frame_model() == LT_PY_CFRAME && frame && !memory_->Read(frame + l.cframe_current_frame, &frame, 8))
      return frames;
    for (int i = 0; i < kMaxFrames && frame; ++i) {
      uint8_t bytes[LT_PY_FRAME_BYTES];
      if (!memory_->Read(frame, bytes, sizeof(bytes))) break;
      uint64_t code = 0, back = 0;
      std::memcpy(&code, bytes + l.frame_code, 8);
      std::memcpy(&back, bytes + l.frame_back, 8);
      frame = back;
      if (l.frame_owner != kNone && bytes[l.frame_owner] == kOwnedByCStack) continue;
      uint32_t offset = 0;
      if (l.frame_model() == LT_PY_FRAME_OBJECTS) {
        int32_t lasti = 0;
        std::memcpy(&lasti, bytes + l.frame_instr, 4);
        offset = lasti < 0 ? 0 : static_cast<uint32_t>(lasti) << (l.minor == 10 ? 1 : 0);
      } else {
        uint64_t instr = 0;
        std::memcpy(&instr, bytes + l.frame_instr, 8);
        const uint64_t start = code + l.code_adaptive;
        offset = instr > start ? static_cast<uint32_t>((instr - start) / 2) : 0;
      }
      int32_t first_line = 0;
      memory_->Read(code + l.code_firstlineno, &first_line, 4);
      auto named = namer_.NameFrame({code, offset & LT_INTERP_NO_OFFSET, static_cast<uint32_t>(first_line)}, stats);
      frames.push_back(named ? *named : InterpreterFrame::Marker("[unknown Python frame]"));
    }
    return frames;
  }

  InterpreterFile file_;
  // Its file name, as mapped and with links resolved: asked for every frame of every stack
  // (realpath's readlinks took a quarter of the loader's CPU on a busy server).
  std::string module_, real_module_;
  int pid_;
  uint64_t interp_head_ = 0;
  uint64_t code_type_ = 0;
  CodeNamer namer_;
  std::unique_ptr<Memory> memory_;
  std::string what_;
};

}  // namespace

Result<std::unique_ptr<InterpreterSupport>> MakeCPythonSupport(const TargetBinaries& target, int pid) {
  ASSIGN_OR_RETURN(InterpreterFile file, FindInterpreterFile(target));
  return std::make_unique<CPythonProcess>(std::move(file), pid);
}

}  // namespace looptrace::loader::python
