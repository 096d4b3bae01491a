// Node.js: detected by its executable's name (node, nodejs, node20, ...); the node profile
// probes libuv's functions in that executable, which needs libuv's symbol table (the
// builds of nodejs.org and NodeSource keep it). V8 frame naming will plug in here through
// Runtime::Interpreter (interpreter.h).
#pragma once

#include "loader/runtimes/runtime.h"

namespace looptrace::loader::node {

// The registered runtime (registry.cc).
const Runtime& NodeJs();

}  // namespace looptrace::loader::node
