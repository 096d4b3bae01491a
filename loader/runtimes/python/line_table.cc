#include "loader/runtimes/python/line_table.h"

namespace looptrace::loader::python {
namespace {

std::optional<int> FromLnotab(std::span<const uint8_t> table, int line, uint32_t offset) {
  uint64_t address = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    address += table[i];
    if (address > offset) break;
    line += static_cast<int8_t>(table[i + 1]);
  }
  return line;
}

std::optional<int> FromLinetable(std::span<const uint8_t> table, int line, uint32_t offset) {
  uint64_t start = 0;
  for (size_t i = 0; i + 1 < table.size(); i += 2) {
    const uint64_t end = start + table[i];
    const int8_t delta = static_cast<int8_t>(table[i + 1]);
    const bool no_line = delta == -128;
    if (!no_line) line += delta;
    if (offset >= start && offset < end) return no_line ? std::nullopt : std::optional<int>(line);
    start = end;
  }
  return std::nullopt;
}

// Location entries: a first byte 1CCCCLLL (code, length - 1 in code units), then data.
class LocationReader {
 public:
  explicit LocationReader(std::span<const uint8_t> table) : table_(table) {}
  bool done() const { return at_ >= table_.size(); }
  std::optional<uint8_t> Byte() {
    if (at_ >= table_.size()) return std::nullopt;
    return table_[at_++];
  }
  std::optional<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 6) {
      auto b = Byte();
      if (!b) return std::nullopt;
      value |= static_cast<uint64_t>(*b & 63) << shift;
      if (!(*b & 64)) return value;
    }
    return std::nullopt;
  }
  std::optional<int64_t> SignedVarint() {
    auto v = Varint();
    if (!v) return std::nullopt;
    return (*v & 1) ? -static_cast<int64_t>(*v >> 1) : static_cast<int64_t>(*v >> 1);
  }
  bool Skip(size_t n) {
    if (at_ + n > table_.size()) return false;
    at_ += n;
    return true;
  }
  // Entries start with the high bit set; anything else is a malformed table.
  bool AtEntry() const { return at_ < table_.size() && (table_[at_] & 0x80); }

 private:
  std::span<const uint8_t> table_;
  size_t at_ = 0;
};

std::optional<int> FromLocations(std::span<const uint8_t> table, int line, uint32_t offset) {
  LocationReader reader(table);
  uint64_t start = 0;
  while (!reader.done()) {
    if (!reader.AtEntry()) return std::nullopt;
    const uint8_t first = *reader.Byte();
    const int code = (first >> 3) & 15;
    const uint64_t end = start + (first & 7) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;
    } else if (code == 14) {
      auto delta = reader.SignedVarint();
      if (!delta || !reader.Varint() || !reader.Varint() || !reader.Varint()) return std::nullopt;
      line += static_cast<int>(*delta);
    } else if (code == 13) {
      auto delta = reader.SignedVarint();
      if (!delta) return std::nullopt;
      line += static_cast<int>(*delta);
    } else if (code >= 10) {
      line += code - 10;
      if (!reader.Skip(2)) return std::nullopt;
    } else {
      if (!reader.Skip(1)) return std::nullopt;
    }
    if (offset >= start && offset < end) return has_line ? std::optional<int>(line) : std::nullopt;
    start = end;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> LineOfOffset(LineTableFormat format, std::span<const uint8_t> table, int first_line,
                                uint32_t offset) {
  switch (format) {
    case LineTableFormat::kLnotab:
      return FromLnotab(table, first_line, offset);
    case LineTableFormat::kLinetable:
      return FromLinetable(table, first_line, offset);
    case LineTableFormat::kLocations:
      return FromLocations(table, first_line, offset);
  }
  return std::nullopt;
}

}  // namespace looptrace::loader::python
