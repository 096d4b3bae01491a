#include "loader/runtimes/python/code_namer.h"

#include <fmt/format.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "looptrace/util/log.h"

namespace looptrace::loader::python {
namespace {

constexpr uint64_t kObType = 8;             // PyObject.ob_type, every version
constexpr size_t kMaxLineTable = 64 << 10;  // a code object's line table, bytes
constexpr size_t kMaxCodes = 1 << 16;       // code objects kept named
constexpr uint8_t kStrAscii = 0x40;         // PyASCIIObject.state.ascii
constexpr uint8_t kStrCompact = 0x20;       // state.compact

class ProcessMemoryReader : public Memory {
 public:
  explicit ProcessMemoryReader(int pid) : pid_(pid) {}
  bool Read(uint64_t address, void* out, size_t size) override {
    if (address == 0 || size == 0) return false;
    iovec local{out, size};
    iovec remote{reinterpret_cast<void*>(address), size};
    const ssize_t n = process_vm_readv(pid_, &local, 1, &remote, 1, 0);
    if (n != static_cast<ssize_t>(size))
      log::V2("pid {}: {} bytes at {:#x}: read {} ({})", pid_, size, address, n, strerror(errno));
    return n == static_cast<ssize_t>(size);
  }

 private:
  int pid_;
};

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

void AppendUtf8(std::string* out, uint32_t c) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x110000) {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->append("\xef\xbf\xbd");  // U+FFFD
  }
}

// "_asyncio.Future" -> "Future": asyncio's repr names C methods by their type's short name.
std::string ShortTypeName(std::string_view name) {
  if (size_t dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
  return std::string(name);
}

LineTableFormat FormatOf(const Layout& layout) {
  if (layout.minor >= 11) return LineTableFormat::kLocations;
  if (layout.minor == 10) return LineTableFormat::kLinetable;
  return LineTableFormat::kLnotab;
}

}  // namespace

std::unique_ptr<Memory> ProcessMemory(int pid) { return std::make_unique<ProcessMemoryReader>(pid); }

CodeNamer::CodeNamer(const Layout& layout, std::unique_ptr<Memory> memory)
    : layout_(layout), memory_(std::move(memory)) {}

std::optional<uint64_t> CodeNamer::Pointer(uint64_t address) {
  uint64_t value = 0;
  if (!memory_->Read(address, &value, sizeof(value))) return std::nullopt;
  return value;
}

std::optional<std::string> CodeNamer::ReadStr(uint64_t str, size_t max) {
  if (!str) return std::nullopt;
  uint32_t state = 0;
  int64_t length = 0;
  if (!memory_->Read(str + layout_.str_state, &state, sizeof(state)) ||
      !memory_->Read(str + layout_.str_length, &length, sizeof(length)) || length < 0)
    return std::nullopt;
  const size_t n = std::min<size_t>(static_cast<size_t>(length), max);
  if (state & kStrAscii) {
    std::string text(n, '\0');
    if (n && !memory_->Read(str + layout_.str_ascii_data, text.data(), n)) return std::nullopt;
    for (char& c : text)
      if (static_cast<unsigned char>(c) >= 0x80 || c == 0) c = '?';
    return text;
  }
  if (!(state & kStrCompact)) return std::nullopt;  // legacy (3.8-3.11 non-compact): not names
  const unsigned kind = (state >> 2) & 7;           // bytes per character
  if (kind != 1 && kind != 2 && kind != 4) return std::nullopt;
  std::vector<uint8_t> raw(n * kind);
  if (n && !memory_->Read(str + layout_.str_compact_data, raw.data(), raw.size())) return std::nullopt;
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * kind, kind);
    AppendUtf8(&text, c);
  }
  return text;
}

const CodeInfo* CodeNamer::Code(uint64_t code, uint32_t fingerprint, Stats* stats) {
  if (!code) return nullptr;
  if (auto it = codes_.find(code); it != codes_.end()) {
    if (it->second.fingerprint == fingerprint) return &it->second;
    codes_.erase(it);  // freed, and another code object (or something else) took its place
  }
  auto type = Pointer(code + kObType);
  if (type && *type != code_type_) {
    // BPF took it for a code object (it checks the type as it walks): freed since, its
    // memory now another object's. A module's body, run once by its import, goes so.
    log::V2("code object at {:#x}: type {:#x}, not PyCode_Type {:#x}", code, *type, code_type_);
    if (stats) stats->Add(StatId::interp_code_reused);
    return nullptr;
  }
  int32_t first_line = 0;
  if (!type || !memory_->Read(code + layout_.code_firstlineno, &first_line, sizeof(first_line))) {
    log::V2("code object at {:#x}: unreadable", code);
    if (stats) stats->Add(StatId::interp_frames_unnamed);
    return nullptr;
  }
  if (static_cast<uint32_t>(first_line) != fingerprint) {
    // BPF saw another code object at this address: it was freed since the sample.
    if (stats) stats->Add(StatId::interp_code_reused);
    return nullptr;
  }
  CodeInfo info;
  info.fingerprint = fingerprint;
  info.first_line = first_line;
  const uint16_t name_field = layout_.code_qualname != kNone ? layout_.code_qualname : layout_.code_name;
  auto name = Pointer(code + name_field);
  auto file = Pointer(code + layout_.code_filename);
  auto name_text = name ? ReadStr(*name) : std::nullopt;
  auto file_text = file ? ReadStr(*file, 1024) : std::nullopt;
  if (!name_text) {
    log::V2("code object at {:#x}: its name at {:#x} is unreadable", code, name.value_or(0));
    if (stats) stats->Add(StatId::interp_frames_unnamed);
    return nullptr;
  }
  info.name = std::move(*name_text);
  info.file = file_text.value_or("");
  if (auto table = Pointer(code + layout_.code_linetable); table && *table) {
    int64_t size = 0;
    if (memory_->Read(*table + layout_.bytes_size, &size, sizeof(size)) && size > 0 &&
        static_cast<size_t>(size) <= kMaxLineTable) {
      info.line_table.resize(static_cast<size_t>(size));
      if (!memory_->Read(*table + layout_.bytes_data, info.line_table.data(), info.line_table.size()))
        info.line_table.clear();
    }
  }
  if (codes_.size() >= kMaxCodes) codes_.clear();  // bounded: names are read again when needed
  return &codes_.emplace(code, std::move(info)).first->second;
}

int CodeNamer::LineOf(const CodeInfo& info, uint32_t offset) const {
  if (offset == LT_INTERP_NO_OFFSET || info.line_table.empty()) return info.first_line;
  if (auto known = info.lines.find(offset); known != info.lines.end()) return known->second;
  const int line = LineOfOffset(FormatOf(layout_), info.line_table, info.first_line, offset).value_or(info.first_line);
  info.lines.emplace(offset, line);
  return line;
}

std::optional<InterpreterFrame> CodeNamer::NameFrame(const lt_interp_frame& frame, Stats* stats) {
  const CodeInfo* info = Code(frame.code, frame.fingerprint, stats);
  if (!info) return std::nullopt;
  return InterpreterFrame{.function = info->name,
                          .file = info->file,
                          .line = LineOf(*info, frame.offset & LT_INTERP_NO_OFFSET),
                          .user_code = false,
                          .callable = {}};
}

CallableName CodeNamer::NameCallable(std::span<const uint64_t> slots, const TargetTextLookup& texts, Stats* stats) {
  if (slots.size() < LT_PY_CALLABLE_SLOTS) return {};
  const uint64_t code = slots[0];
  const uint32_t offset = static_cast<uint32_t>(slots[1]);
  const uint32_t kind = static_cast<uint32_t>(slots[1] >> 32);
  const uint32_t fingerprint = static_cast<uint32_t>(slots[2]);
  auto text = [&](uint64_t address) -> std::string {
    const std::string* found = address && texts ? texts(address) : nullptr;
    return found ? *found : "";
  };
  if (kind == 0) return {};  // the interpreter was not located yet when the probe hit
  std::string where;
  std::string code_name;
  if (code) {
    if (const CodeInfo* info = Code(code, fingerprint, stats)) {
      code_name = info->name;
      const int line =
          (kind & 0xff) == LT_PY_CALLABLE_TASK && offset != 0xffffffffu ? LineOf(*info, offset) : info->first_line;
      where = fmt::format(" at {}:{}", Basename(info->file), line);
    }
  }
  switch (kind & 0xff) {
    case LT_PY_CALLABLE_FUNCTION: {
      // The function's __qualname__, which BPF sent (asyncio's repr names it so; code objects
      // have none before 3.11, and may be gone when the target exited); else the code's.
      std::string name = text(slots[3]);
      if (name.empty()) name = code_name;
      if (name.empty()) break;
      return {name + "()" + where, ""};
    }
    case LT_PY_CALLABLE_TASK: {
      // asyncio numbers the tasks it names itself: their steps count under the coroutine's.
      const bool numbered = kind & LT_PY_CALLABLE_TASK_NUMBER;
      std::string task = numbered ? fmt::format("Task-{}", slots[3]) : text(slots[3]);
      if (task.empty()) task = "Task";
      if (code_name.empty()) return {task, numbered ? "Task-*" : ""};
      return {fmt::format("{} {}(){}", task, code_name, where),
              numbered ? fmt::format("Task-* {}(){}", code_name, where) : ""};
    }
    case LT_PY_CALLABLE_CFUNC: {
      const std::string type = text(slots[3]);
      const std::string method = text(slots[4]);
      if (method.empty()) break;
      if (type.empty() || type == "module") return {method + "()", ""};
      return {ShortTypeName(type) + "." + method + "()", ""};
    }
    case LT_PY_CALLABLE_OTHER: {
      const std::string type = text(slots[3]);
      if (type.empty()) break;
      return {ShortTypeName(type) + "()", ""};
    }
    default:
      break;
  }
  if (stats) stats->Add(StatId::interp_callables_unnamed);
  return {};
}

}  // namespace looptrace::loader::python
