// One CPython process as looptrace reads it from outside: which interpreter it runs (the
// executable, or the libpython3.X.so of a shared build), its version and layout (3.13
// describes its own in _Py_DebugOffsets; older versions use layouts.h's tables), where
// _PyRuntime and PyCode_Type lie once the process mapped them, checked against its memory;
// its threads' frames for stall snapshots; names from code_namer.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loader/runtimes/interpreter.h"
#include "loader/runtimes/python/code_namer.h"
#include "loader/runtimes/python/layouts.h"
#include "loader/target/target_binaries.h"

namespace looptrace::loader::python {

// The interpreter a target runs: the file with _PyRuntime, its version and layout.
struct InterpreterFile {
  std::string path;  // the executable, or libpython3.X.so
  int major = 3;
  int minor = 0;
  Layout layout;
  uint64_t runtime_address = 0;          // _PyRuntime in the file
  uint64_t code_type_address = 0;        // PyCode_Type in the file
  uint64_t type_type_address = 0;        // PyType_Type in the file
  bool layout_from_interpreter = false;  // 3.13: read from _Py_DebugOffsets
};

// Finds and checks the interpreter file of `target`; an error naming the version when
// looptrace has no layout for it.
Result<InterpreterFile> FindInterpreterFile(const TargetBinaries& target);

// The process side (InterpreterSupport) of a CPython target.
Result<std::unique_ptr<InterpreterSupport>> MakeCPythonSupport(const TargetBinaries& target, int pid);

}  // namespace looptrace::loader::python
