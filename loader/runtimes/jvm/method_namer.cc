#include "loader/runtimes/jvm/method_namer.h"

#include <algorithm>

#include "loader/runtimes/jvm/compressed_ints.h"

namespace looptrace::loader::jvm {
namespace {

constexpr uint16_t kMaxSymbol = 1024;
constexpr size_t kMaxLineTable = 16384;
constexpr size_t kMaxCache = 1 << 16;

}  // namespace

std::vector<std::pair<int, int>> DecodeLineTable(const std::vector<uint8_t>& bytes, bool exclude_zero) {
  std::vector<std::pair<int, int>> table;
  CompressedReader in(bytes, exclude_zero);
  int bci = 0, line = 0;
  while (in.ok() && table.size() < kMaxLineTable) {
    const uint8_t next = in.Byte();
    if (!in.ok() || next == 0) break;
    if (next == 0xff) {
      bci += in.Signed();
      line += in.Signed();
    } else {
      bci += next >> 3;
      line += next & 7;
    }
    if (!in.ok()) break;
    table.emplace_back(bci, line);
  }
  return table;
}

int LineOf(const std::vector<std::pair<int, int>>& table, int bci) {
  int line = 0, best_bci = -1;
  for (const auto& [start, l] : table)
    if (start <= bci && start >= best_bci) {
      best_bci = start;
      line = l;
    }
  return line;
}

std::optional<uint64_t> MethodNamer::Pointer(uint64_t address) {
  uint64_t value = 0;
  if (!address || !memory_.Read(address, &value, sizeof(value))) return std::nullopt;
  return value;
}

bool IsProgramClass(std::string_view class_name) {
  // The JDK's own packages (java.awt, javax.swing, jdk.internal, sun.awt, com.sun.*).
  for (std::string_view jdk : {"java.", "javax.", "jdk.", "sun.", "com.sun."})
    if (class_name.starts_with(jdk)) return false;
  // A lambda's hidden proxy class ("EdtApp$$Lambda$14/0x..."): the lambda's own method,
  // the next frame in, is the program's code.
  return class_name.find("$$Lambda") == std::string_view::npos;
}

std::optional<uint16_t> MethodNamer::U16(uint64_t address) {
  uint16_t value = 0;
  if (!address || !memory_.Read(address, &value, sizeof(value))) return std::nullopt;
  return value;
}

std::optional<std::string> MethodNamer::Symbol(uint64_t symbol) {
  auto length = U16(symbol + layout_.symbol_length);
  if (!symbol || !length || *length == 0 || *length > kMaxSymbol) return std::nullopt;
  std::string text(*length, '\0');
  if (!memory_.Read(symbol + layout_.symbol_body, text.data(), text.size())) return std::nullopt;
  for (char c : text)
    if (c == 0 || c == '\n') return std::nullopt;
  return text;
}

std::optional<MethodNamer::Named> MethodNamer::Read(uint64_t method) {
  const HotSpotLayout& l = layout_;
  auto const_method = Pointer(method + l.method_const);
  if (!const_method || !*const_method) return std::nullopt;
  auto pool = Pointer(*const_method + l.const_constants);
  auto name_index = U16(*const_method + l.const_name_index);
  if (!pool || !name_index) return std::nullopt;
  auto holder = Pointer(*pool + l.pool_holder);
  // A constant pool's entries follow it; a Symbol* for a name index.
  auto name_symbol = Pointer(*pool + l.pool_size + uint64_t{*name_index} * 8);
  if (!holder || !name_symbol) return std::nullopt;
  auto class_symbol = Pointer(*holder + l.klass_name);
  if (!class_symbol) return std::nullopt;
  auto class_name = Symbol(*class_symbol);
  auto method_name = Symbol(*name_symbol);
  if (!class_name || !method_name) return std::nullopt;
  Named named;
  named.const_method = *const_method;
  std::replace(class_name->begin(), class_name->end(), '/', '.');
  // A hidden class (a lambda proxy) is "Outer$$Lambda$1+0x...": jstack shows "/0x...".
  if (size_t plus = class_name->rfind("+0x"); plus != std::string::npos) (*class_name)[plus] = '/';
  named.function = *class_name + "." + *method_name;
  named.user_code = IsProgramClass(*class_name);
  if (auto index = U16(*pool + l.pool_source_file_index); index && *index)
    if (auto file = Pointer(*pool + l.pool_size + uint64_t{*index} * 8)) named.file = Symbol(*file).value_or("");
  auto flags = U16(*const_method + l.const_flags);
  auto code_size = U16(*const_method + l.const_code_size);
  if (flags && code_size && (*flags & l.has_line_table)) {
    std::vector<uint8_t> table(512);
    const uint64_t start = *const_method + l.const_method_size + *code_size;
    if (memory_.Read(start, table.data(), table.size()) || memory_.Read(start, table.data(), table.size() / 8)) {
      named.lines = DecodeLineTable(table, l.ints_exclude_zero);
    }
  }
  return named;
}

int MethodNamer::BciOf(uint64_t method, uint64_t bcp) {
  auto const_method = Pointer(method + layout_.method_const);
  if (!const_method) return -1;
  auto code_size = U16(*const_method + layout_.const_code_size);
  const uint64_t codes = *const_method + layout_.const_method_size;
  if (!code_size || bcp < codes || bcp >= codes + *code_size) return -1;
  return static_cast<int>(bcp - codes);
}

std::optional<InterpreterFrame> MethodNamer::Name(uint64_t method, int bci, uint32_t fingerprint) {
  if (!method) return std::nullopt;
  auto it = cache_.find(method);
  // BPF read the frame's ConstMethod with it: a cached name of that same ConstMethod is the
  // method that ran, with no read of the target (one syscall a frame at each sample).
  const bool cached =
      it != cache_.end() && fingerprint && static_cast<uint32_t>(it->second.const_method) == fingerprint;
  if (!cached) {
    auto const_method = Pointer(method + layout_.method_const);
    if (!const_method) return std::nullopt;
    if (fingerprint && static_cast<uint32_t>(*const_method) != fingerprint) return std::nullopt;
    if (it != cache_.end() && it->second.const_method == *const_method) return Frame(it->second, bci);
    auto named = Read(method);
    if (!named) return std::nullopt;
    if (cache_.size() >= kMaxCache) cache_.clear();
    it = cache_.insert_or_assign(method, std::move(*named)).first;
  }
  return Frame(it->second, bci);
}

InterpreterFrame MethodNamer::Frame(const Named& n, int bci) {
  InterpreterFrame frame;
  frame.function = n.function;
  frame.file = n.file;
  frame.line = bci >= 0 ? LineOf(n.lines, bci) : 0;
  frame.user_code = n.user_code;
  if (n.user_code) frame.callable = n.function;
  return frame;
}

}  // namespace looptrace::loader::jvm
