// Where a profile's BINARY names are looked up: the target's executable, its mapped files
// (a running process) or its libraries (a command not started yet). Runtimes read it to
// tell what a target runs; the attach plan resolves probe points against it.
#pragma once

#include <string>

namespace looptrace::loader {

struct TargetBinaries {
  int pid = 0;                  // live process (record): /proc/PID/maps and /proc/PID/exe
  std::string exe_path;         // run: the resolved command; record: /proc/PID/exe target
  std::string ld_library_path;  // run: the child's LD_LIBRARY_PATH
  // run + profile detection: a library must be one the executable links (DT_NEEDED,
  // transitively), not merely present on disk.
  bool require_linked = false;
  // Auto-detection: `requires-loaded` marks must be present (else only a warning).
  bool detecting = false;
  // --exact-entry: every probe stays on its symbol, even where the kernel single-steps
  // the first instruction (no relocation, probe_placement.h).
  bool exact_entry = false;
};

}  // namespace looptrace::loader
