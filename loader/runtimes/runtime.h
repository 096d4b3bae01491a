// A runtime whose event loop lives in interpreted or JIT-compiled code (CPython, HotSpot):
// what looptrace needs to know about it beyond a profile's probe points. Each runtime is one
// folder (runtimes/python/, runtimes/jvm/) implementing `Runtime`, registered by one line in
// runtimes/registry.cc; profiles name it with `runtime NAME`. The code that chooses a profile
// and runs these checks is above, in plan/ (runtime_checks.h): a runtime sees the plan only
// as the plain data of `RuntimeCheck`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loader/runtimes/interpreter.h"
#include "loader/target/target_binaries.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// What a target runs, as far as runtime profiles care.
struct RuntimeInfo {
  std::string name;    // "python", "jvm", or "" (none looptrace knows)
  std::string binary;  // the file its probes are in (python's executable, libjvm.so), if found
  std::string what;    // for messages: "CPython (/usr/bin/python3.11)", "HotSpot JVM (.../libjvm.so)"
};

// The target's command line and environment (run: the command and looptrace's environment;
// record: /proc/PID/cmdline and /proc/PID/environ), for runtime options given there.
struct TargetCommand {
  std::vector<std::string> argv;
  std::vector<std::string> environ;  // "NAME=value"
  bool known = false;                // false when /proc could not be read
};

// What a runtime's check sees of the chosen profile and its resolved plan.
struct RuntimeCheck {
  std::string profile_name;
  std::vector<std::string> points;  // every resolved point: "python:function__entry", a symbol
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // The name profiles declare (`runtime python`), and the one RuntimeInfo carries.
  virtual std::string_view name() const = 0;
  // For messages: "CPython", "a HotSpot JVM".
  virtual std::string_view title() const = 0;

  // Detect: whether the target runs this runtime (its executable, the libraries it maps,
  // links or, for a launcher, loads), and where its probes are.
  virtual std::optional<RuntimeInfo> Detect(const TargetBinaries& target) const = 0;

  // Before a profile of this runtime is resolved against a target that runs it (`info` from
  // Detect): an error naming the cause and the fix when the target lacks what every profile
  // of the runtime reads (a CPython built without USDT probes).
  // `usdt_points`: the profile's USDT points ("python:function__entry"; optional ones left out).
  virtual Result<void> CheckPresent(const RuntimeInfo& info, const TargetBinaries& target,
                                    const std::vector<std::string>& usdt_points) const {
    (void)info;
    (void)target;
    (void)usdt_points;
    return {};
  }

  // Check, before attaching: what the chosen profile's points need is on (HotSpot's probe
  // flags). What makes the profile useless is an error naming the cause and the fix; what
  // only degrades the report is a warning (logged).
  virtual Result<void> Check(const RuntimeCheck& check, const TargetBinaries& target,
                             const TargetCommand& command) const = 0;

  // The built-in profile to use instead of the detected `profile` for this target, when that
  // one cannot work as the target runs (HotSpot without method probes: jvm-edt, not jvm), and
  // the line that tells the user; nothing to keep it.
  struct OtherProfile {
    std::string profile;
    std::string why;
  };
  virtual std::optional<OtherProfile> ProfileInstead(std::string_view profile, const TargetBinaries& target,
                                                     const TargetCommand& command) const {
    (void)profile;
    (void)target;
    (void)command;
    return std::nullopt;
  }

  // Diagnose: the hint for "no built-in profile matches" (or a warning next to a generic
  // profile): what looptrace sees of this runtime in the target and what is missing (a
  // CPython without USDT probes, a shim script), or "".
  virtual std::string Diagnose(const TargetBinaries& target, const TargetCommand& command) const = 0;

  // Resolve points: the address of a probe point in this runtime's own syntax (CPython's
  // "PyContext_Type.run": a C method found through its type's method table), or nothing when
  // `point` is not such a point of `elf`.
  virtual std::optional<uint64_t> ResolvePoint(const symbols::ElfFile& elf, std::string_view point) const {
    (void)elf;
    (void)point;
    return std::nullopt;
  }

  // A library the runtime's launcher loads with dlopen instead of linking it (the java
  // launcher's JAVA_HOME/lib/server/libjvm.so), when `library` is such a library of
  // `exe_path`.
  virtual std::optional<std::string> DlopenedLibrary(const std::string& library, const std::string& exe_path) const {
    (void)library;
    (void)exe_path;
    return std::nullopt;
  }

  // The file the runtime's interpreter lives in, for the profile BINARY `interpreter`: the
  // executable, or the library it links (CPython's libpython3.X.so in a shared build).
  virtual std::optional<std::string> InterpreterBinary(const TargetBinaries& target) const {
    (void)target;
    return std::nullopt;
  }

  // Interpreter frames and callables (interpreter.h), per process `pid`: the runtime's
  // layout for BPF and the namer of what BPF records. Null when the runtime has none; an
  // error (one line naming the version) when the target's interpreter is one looptrace
  // cannot read.
  virtual Result<std::unique_ptr<InterpreterSupport>> Interpreter(const TargetBinaries& target, int pid) const {
    (void)target;
    (void)pid;
    return std::unique_ptr<InterpreterSupport>();
  }
};

}  // namespace looptrace::loader
