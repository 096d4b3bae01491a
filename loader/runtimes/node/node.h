// Node.js: detected by its executable's name (node, nodejs, node20, ...); the node profile
// probes libuv's functions in that executable, which needs libuv's symbol table (the
// builds of nodejs.org and NodeSource keep it). JavaScript frames come from V8's own
// metadata through Runtime::Interpreter (v8_support.h).
#pragma once

#include "loader/runtimes/runtime.h"

namespace looptrace::loader::node {

// The registered runtime (registry.cc).
const Runtime& NodeJs();

}  // namespace looptrace::loader::node
