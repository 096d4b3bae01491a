// Line numbers of CPython bytecode offsets, from a code object's line table in each of the
// three formats CPython has used since 3.8. CPython describes them in its own source tree,
// not in this repository: Objects/lnotab_notes.txt of its 3.10 branch (3.8-3.10, and 3.10's
// co_linetable) and Objects/locations.md of its 3.11 branch (the location table, 3.11+):
// https://github.com/python/cpython/blob/3.10/Objects/lnotab_notes.txt
// https://github.com/python/cpython/blob/3.11/Objects/locations.md
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace looptrace::loader::python {

enum class LineTableFormat {
  kLnotab,     // 3.8-3.9: co_lnotab, (byte delta, signed line delta) pairs; offsets in bytes
  kLinetable,  // 3.10: co_linetable, (byte delta, signed line delta or -128) pairs; offsets in bytes
  kLocations,  // 3.11+: co_linetable location entries; offsets in code units (2 bytes)
};

// The line of the instruction at `offset` (bytes for kLnotab/kLinetable, code units for
// kLocations), or nothing when the table says it has none or is malformed.
std::optional<int> LineOfOffset(LineTableFormat format, std::span<const uint8_t> table, int first_line,
                                uint32_t offset);

}  // namespace looptrace::loader::python
