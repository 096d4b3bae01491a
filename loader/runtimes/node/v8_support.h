// The InterpreterSupport of a Node.js target (interpreter.h): V8's layout for the BPF frame
// walker from the executable's post-mortem metadata (v8_metadata.h), and the namer of the
// frames it records (v8_namer.h). JavaScript frames are spliced where V8's code is in the
// native stack: the node executable's own frames (its builtins, the interpreter) and JIT code.
#pragma once

#include <memory>
#include <string>

#include "loader/runtimes/interpreter.h"
#include "loader/target/target_binaries.h"

namespace looptrace::loader::node {

// The support for the node executable `target` runs as process `pid`; an error (one line
// naming what is missing) when its V8 metadata is absent or not what looptrace reads.
Result<std::unique_ptr<InterpreterSupport>> MakeV8Support(const TargetBinaries& target, int pid);

}  // namespace looptrace::loader::node
