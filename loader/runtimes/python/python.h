// CPython: detected by its interpreter executable or the libpython3.X.so it maps or links;
// checked for its USDT probes (builds configured --with-dtrace) and for CPython 3.11-3.14's
// function__entry, which fires only while a profiler is active; resolves "TYPE.METHOD" points
// through a type's method table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loader/runtimes/runtime.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::loader::python {

// The registered runtime (registry.cc).
const Runtime& CPython();

// A C method of a CPython type, by the type's method table: POINT "PyContext_Type.run" is the
// C function behind contextvars.Context.run (the exported PyTypeObject's tp_methods). Nothing
// when `point` is not TYPE.METHOD, or the binary has no such type or method.
std::optional<uint64_t> ResolveTypeMethod(const symbols::ElfFile& elf, std::string_view point);

// 11 for ".../python3.11" or "libpython3.11.so.1.0", else nothing.
std::optional<int> MinorVersionOf(const std::string& path);
// The libpython3.X.so the target maps (live) or links (run), if any.
std::optional<std::string> LibpythonOf(const TargetBinaries& target);

}  // namespace looptrace::loader::python
