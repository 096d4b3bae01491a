#include "loader/runtimes/node/v8_namer.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace looptrace::loader::node {
namespace {

constexpr size_t kMaxFunctions = 1 << 16;    // functions kept named
constexpr int64_t kMaxLineEnds = 1 << 20;    // a script's lines
constexpr size_t kMaxScriptFile = 64 << 20;  // a script file read for its lines
constexpr int kScopeInfoSlots = 24;          // slots a ScopeInfo's name and position are looked for in
constexpr int kMaxStringDepth = 8;           // cons strings followed
constexpr uint64_t kSmiShift = 32;

bool IsHeapObject(uint64_t word) { return (word & 3) == 1; }
bool IsSmi(uint64_t word) { return (word & 0xffffffffull) == 0; }
int64_t SmiValue(uint64_t word) { return static_cast<int64_t>(word) >> kSmiShift; }

// A script file's name without its directory; Node's own modules ("node:internal/timers")
// as they are.
std::string ShortName(const std::string& script) {
  if (!script.starts_with('/') && !script.starts_with("file://")) return script;
  return script.substr(script.find_last_of('/') + 1);
}

// A script of the program's own: a file ("/srv/app.js", "file:///srv/app.mjs"), not one of
// Node's modules ("node:internal/timers", "node:events") nor a builtin (no script).
bool IsUserScript(const std::string& script) { return script.starts_with('/') || script.starts_with("file://"); }

// The 0-based line holding character `position`, given each line's end (its '\n').
int LineIndex(const std::vector<int>& line_ends, int position) {
  return static_cast<int>(std::lower_bound(line_ends.begin(), line_ends.end(), position) - line_ends.begin());
}

}  // namespace

std::string FrameName(const std::string& function, const std::string& file, int line) {
  std::string name = function.empty() ? "(anonymous)" : function;
  if (file.empty()) return name;
  if (line <= 0) return fmt::format("{} {}", name, ShortName(file));
  return fmt::format("{} {}:{}", name, ShortName(file), line);
}

V8Namer::V8Namer(const V8Metadata& metadata, std::unique_ptr<Memory> memory, std::string root)
    : m_(metadata), memory_(std::move(memory)), root_(std::move(root)) {}

std::optional<uint64_t> V8Namer::Word(uint64_t address) {
  uint64_t value = 0;
  if (!memory_->Read(address, &value, sizeof(value))) return std::nullopt;
  return value;
}

uint16_t V8Namer::TypeOf(uint64_t tagged) {
  if (!IsHeapObject(tagged)) return 0;
  auto map = Word(tagged - 1);
  if (!map || !IsHeapObject(*map)) return 0;
  uint16_t type = 0;
  if (!memory_->Read(*map - 1 + m_.layout.map_instance_type, &type, sizeof(type))) return 0;
  return type;
}

std::optional<std::string> V8Namer::ReadString(uint64_t tagged, size_t max, int depth) {
  const uint16_t type = TypeOf(tagged);
  if (!IsHeapObject(tagged) || type >= m_.first_nonstring_type || depth > kMaxStringDepth) return std::nullopt;
  const uint64_t object = tagged - 1;
  int32_t length = 0;
  if (!memory_->Read(object + m_.string_length, &length, sizeof(length)) || length < 0) return std::nullopt;
  const size_t n = std::min(static_cast<size_t>(length), max);
  const uint16_t representation = type & m_.string_representation_mask;
  const bool one_byte = (type & m_.string_encoding_mask) == m_.one_byte_string_tag;
  if (representation == m_.seq_string_tag) {
    if (one_byte) {
      std::string text(n, '\0');
      if (n && !memory_->Read(object + m_.seq_chars, text.data(), n)) return std::nullopt;
      return text;
    }
    std::vector<uint16_t> units(n);
    if (n && !memory_->Read(object + m_.seq_chars, units.data(), n * 2)) return std::nullopt;
    std::string text;
    for (uint16_t u : units) text.push_back(u < 0x80 ? static_cast<char>(u) : '?');
    return text;
  }
  if (representation == m_.cons_string_tag) {
    auto first = Word(object + m_.cons_first);
    auto second = Word(object + m_.cons_second);
    if (!first || !second) return std::nullopt;
    auto head = ReadString(*first, max, depth + 1);
    if (!head) return std::nullopt;
    if (head->size() >= max) return head;
    auto tail = ReadString(*second, max - head->size(), depth + 1);
    if (!tail) return std::nullopt;
    return *head + *tail;
  }
  if (representation == m_.thin_string_tag) {
    auto actual = Word(object + m_.thin_actual);
    return actual ? ReadString(*actual, max, depth + 1) : std::nullopt;
  }
  if (representation == m_.sliced_string_tag) {
    auto parent = Word(object + m_.sliced_parent);
    auto offset = Word(object + m_.sliced_offset);
    if (!parent || !offset || !IsSmi(*offset)) return std::nullopt;
    auto whole = ReadString(*parent, SmiValue(*offset) + n, depth + 1);
    if (!whole || whole->size() < static_cast<size_t>(SmiValue(*offset))) return std::nullopt;
    return whole->substr(SmiValue(*offset), n);
  }
  return std::nullopt;  // external strings: their text is outside V8's heap
}

// A ScopeInfo holds, after its context locals' names and infos, the function's name (a
// String, else its inferred name) and then its start and end positions (Smis); the slots
// between depend on flags whose layout changes between V8 versions, so they are found by
// kind: the first string, then the first run of two or more Smis (its last two).
V8Namer::ScopeFacts V8Namer::ReadScopeInfo(uint64_t scope_info) {
  ScopeFacts facts;
  std::vector<uint64_t> slots(kScopeInfoSlots);
  const uint64_t data = scope_info - 1 + 8;  // after the map
  if (!memory_->Read(data, slots.data(), slots.size() * 8)) return facts;
  const uint64_t locals = slots[m_.scope_info_context_locals];
  if (!IsSmi(locals) || SmiValue(locals) < 0) return facts;
  size_t i = m_.scope_info_first_vars + 2 * SmiValue(locals);
  bool named = false;
  for (; i < slots.size(); ++i) {
    if (IsHeapObject(slots[i]) && !named) {
      if (auto name = ReadString(slots[i])) {
        facts.name = *name;
        named = true;
      }
    }
    if (named && IsSmi(slots[i])) break;
  }
  // The first run of two or more Smis after the name: ((context slot index,) start, end);
  // a lone Smi is the function variable's slot when an inferred name follows it.
  while (i < slots.size()) {
    size_t run = i;
    while (run < slots.size() && IsSmi(slots[run])) ++run;
    if (run - i >= 2) {
      const int64_t start = SmiValue(slots[run - 2]);
      const int64_t end = SmiValue(slots[run - 1]);
      if (start >= 0 && start <= end) facts.start_position = static_cast<int>(start);
      break;
    }
    i = run + 1;
  }
  return facts;
}

const std::vector<int>* V8Namer::LineEndsOfFile(const std::string& file) {
  if (file.empty() || file[0] != '/') return nullptr;
  auto it = file_lines_.find(file);
  if (it != file_lines_.end()) return &it->second;
  std::vector<int>& ends = file_lines_[file];
  std::ifstream in(root_ + file, std::ios::binary);
  if (!in) return &ends;
  // Positions count UTF-16 code units: a UTF-8 continuation byte adds none, a 4-byte
  // sequence's lead adds two.
  int position = 0;
  size_t bytes = 0;
  for (std::istreambuf_iterator<char> c(in), end; c != end && bytes < kMaxScriptFile; ++c, ++bytes) {
    const auto byte = static_cast<uint8_t>(*c);
    if (byte == '\n') ends.push_back(position);
    if ((byte & 0xc0) != 0x80) position += byte >= 0xf0 ? 2 : 1;
  }
  return &ends;
}

int V8Namer::LineOf(uint64_t script, const std::string& file, int position) {
  if (position < 0) return 0;
  auto line_ends = Word(script - 1 + m_.script_line_ends);
  if (line_ends && TypeOf(*line_ends) == m_.type_fixed_array) {
    auto length = Word(*line_ends - 1 + m_.fixed_array_length);
    if (length && IsSmi(*length) && SmiValue(*length) > 0 && SmiValue(*length) <= kMaxLineEnds) {
      std::vector<uint64_t> words(SmiValue(*length));
      if (memory_->Read(*line_ends - 1 + m_.fixed_array_data, words.data(), words.size() * 8)) {
        std::vector<int> ends;
        for (uint64_t w : words) ends.push_back(static_cast<int>(SmiValue(w)));
        return LineIndex(ends, position) + 1;
      }
    }
  }
  // V8 computes a script's line ends only when something asks (a stack trace): the file's.
  const std::vector<int>* ends = LineEndsOfFile(file);
  return ends && !ends->empty() ? LineIndex(*ends, position) + 1 : 0;
}

const V8Namer::Function* V8Namer::Lookup(const lt_interp_frame& frame, Stats* stats) {
  const uint64_t sfi = frame.code;
  auto cached = functions_.find(sfi);
  if (cached == functions_.end() || cached->second.fingerprint != frame.fingerprint) {
    // Read now: the function is alive if the fingerprint BPF read still matches.
    uint32_t fingerprint = 0;
    if (TypeOf(sfi) != m_.layout.type_sfi ||
        !memory_->Read(sfi - 1 + m_.layout.sfi_fingerprint, &fingerprint, sizeof(fingerprint))) {
      if (stats) stats->Add(StatId::interp_frames_unnamed);
      return nullptr;
    }
    if (fingerprint != frame.fingerprint) {
      if (stats) stats->Add(StatId::interp_code_reused);
      return nullptr;
    }
    Function f;
    f.fingerprint = fingerprint;
    int start = -1;
    if (auto name_or_scope = Word(sfi - 1 + m_.sfi_name_or_scope_info)) {
      if (TypeOf(*name_or_scope) == m_.type_scope_info) {
        ScopeFacts facts = ReadScopeInfo(*name_or_scope);
        f.name = facts.name;
        start = facts.start_position;
      } else if (auto name = ReadString(*name_or_scope)) {
        f.name = *name;
      }
    }
    auto script = Word(sfi - 1 + m_.sfi_script_or_debug_info);
    if (script && TypeOf(*script) == m_.type_script) {
      if (auto name = Word(*script - 1 + m_.script_name))
        if (auto text = ReadString(*name, 4096)) f.file = *text;
      f.line = LineOf(*script, f.file, start);
    }
    if (functions_.size() >= kMaxFunctions) functions_.clear();
    cached = functions_.insert_or_assign(sfi, std::move(f)).first;
  }
  return &cached->second;
}

std::optional<InterpreterFrame> V8Namer::NameFrame(const lt_interp_frame& frame, Stats* stats) {
  const Function* f = Lookup(frame, stats);
  if (!f) return std::nullopt;
  InterpreterFrame named;
  // The whole name in `function`: Node's form ("renderReport app.js:9"), not py-spy's.
  named.function = FrameName(f->name, f->file, f->line);
  named.user_code = IsUserScript(f->file);
  return named;
}

std::optional<InterpreterFrame> V8Namer::FrameParts(const lt_interp_frame& frame, Stats* stats) {
  const Function* f = Lookup(frame, stats);
  if (!f) return std::nullopt;
  return InterpreterFrame{.function = f->name.empty() ? "(anonymous)" : f->name,
                          .file = f->file.empty() ? "" : ShortName(f->file),
                          .line = f->line,
                          .user_code = IsUserScript(f->file),
                          .callable = {}};
}

}  // namespace looptrace::loader::node
