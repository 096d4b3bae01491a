// HotSpot: its USDT probes (provider "hotspot") are in libjvm.so, which the java launcher
// loads with dlopen (JAVA_HOME/lib/<vm>/libjvm.so, <vm> from lib/jvm.cfg) instead of linking
// it. GC probes always fire; method probes fire only with -XX:+DTraceMethodProbes, monitor
// probes only with -XX:+DTraceMonitorProbes (-XX:+ExtendedDTraceProbes turns on both). The
// flags are global bools in libjvm.so's symbol table, so a running JVM's values are read from
// its memory; for a JVM not started yet they come from its command line and environment.
#include "loader/runtimes/jvm/jvm.h"

#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "loader/runtimes/jvm/hotspot_process.h"
#include "loader/target/proc_readers.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/log.h"

namespace looptrace::loader::jvm {
namespace {

std::string Basename(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }
std::string Dirname(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

}  // namespace

std::optional<std::string> LauncherLibjvm(const std::string& library, const std::string& exe_path) {
  if (!library.starts_with("libjvm") || exe_path.empty()) return std::nullopt;
  const std::string real = RealPath(exe_path);
  const std::string bin = Dirname(real);
  if (Basename(bin) != "bin") return std::nullopt;
  const std::string home = Dirname(bin);
  std::vector<std::string> vms;
  // lib/jvm.cfg lists the VMs; the launcher takes the first KNOWN one unless -client/-server.
  std::ifstream cfg(home + "/lib/jvm.cfg");
  for (std::string line; std::getline(cfg, line);) {
    std::istringstream words(line);
    std::string vm, state;
    if (words >> vm >> state && vm.starts_with("-") && state == "KNOWN") vms.push_back(vm.substr(1));
  }
  vms.push_back("server");
  for (const auto& vm : vms) {
    std::string candidate = fmt::format("{}/lib/{}/libjvm.so", home, vm);
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return std::nullopt;
}

namespace {

// libjvm.so the target maps (live) or will load (run).
std::optional<std::string> Libjvm(const TargetBinaries& target) {
  if (target.pid > 0) {
    auto maps = symbols::ReadProcMaps(target.pid);
    if (!maps) return std::nullopt;
    for (const auto& m : *maps)
      if (m.is_file() && Basename(m.path) == "libjvm.so") return m.path;
    return std::nullopt;
  }
  if (auto path = LauncherLibjvm("libjvm.so", target.exe_path)) return path;
  if (auto info = symbols::ReadDynamicInfo(target.exe_path))
    for (const auto& needed : info->needed)
      if (needed == "libjvm.so") return symbols::SearchLibrary(needed, target.ld_library_path, target.exe_path);
  return std::nullopt;
}

// Threads named as Executors' default thread factory names a pool's workers (pool-N-thread-M;
// the kernel keeps 15 bytes) and none named as AWT's event dispatch thread.
bool ServesFromAThreadPool(pid_t pid) {
  bool pool = false;
  for (const std::string& name : ThreadComms(pid)) {
    if (name.starts_with("AWT-EventQueue-")) return false;
    pool |= name.starts_with("pool-");
  }
  return pool;
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string EnvValue(const TargetCommand& command, std::string_view name) {
  for (const auto& e : command.environ)
    if (e.size() > name.size() && e.starts_with(name) && e[name.size()] == '=') return e.substr(name.size() + 1);
  return "";
}

// The live values of the flags in the JVM's memory (libjvm.so's .symtab names them).
std::optional<ProbeFlags> LiveFlags(int pid, const std::string& libjvm) {
  auto elf = symbols::ElfFile::Open(libjvm);
  auto maps = symbols::ReadProcMaps(pid);
  if (!elf || !maps) return std::nullopt;
  std::optional<uint64_t> bias;
  for (const auto& m : *maps) {
    if (m.path != libjvm) continue;
    auto vaddr = elf->FileOffsetToAddress(m.offset);
    if (vaddr) {
      bias = m.start - *vaddr;
      break;
    }
  }
  if (!bias) return std::nullopt;
  auto read = [&](std::string_view name) -> std::optional<bool> {
    auto address = elf->FindObject(name);
    if (!address) return std::nullopt;
    uint8_t value = 0;
    iovec local{&value, 1};
    iovec remote{reinterpret_cast<void*>(*bias + *address), 1};
    if (process_vm_readv(pid, &local, 1, &remote, 1, 0) != 1) return std::nullopt;
    return value != 0;
  };
  auto method = read("DTraceMethodProbes");
  auto monitor = read("DTraceMonitorProbes");
  auto extended = read("ExtendedDTraceProbes");
  if (!method || !monitor) return std::nullopt;
  ProbeFlags flags;
  flags.method = *method || extended.value_or(false);
  flags.monitor = *monitor || extended.value_or(false);
  return flags;
}

}  // namespace

ProbeFlags ParseProbeFlags(const TargetCommand& command) {
  std::optional<bool> method, monitor, extended;
  ProbeFlags flags;
  flags.certain = command.known;
  auto apply = [&](const std::string& word) {
    if (word.starts_with("@") || word.starts_with("-XX:Flags=") || word.starts_with("-XX:VMOptionsFile="))
      flags.certain = false;
    for (auto [name, flag] : {std::pair{"DTraceMethodProbes", &method}, std::pair{"DTraceMonitorProbes", &monitor},
                              std::pair{"ExtendedDTraceProbes", &extended}}) {
      if (word == fmt::format("-XX:+{}", name)) *flag = true;
      if (word == fmt::format("-XX:-{}", name)) *flag = false;
    }
  };
  // The order HotSpot applies them in: JAVA_TOOL_OPTIONS, the command line, _JAVA_OPTIONS.
  for (const auto& w : Words(EnvValue(command, "JAVA_TOOL_OPTIONS"))) apply(w);
  if (!command.argv.empty() && Basename(command.argv[0]) == "java")
    for (const auto& w : Words(EnvValue(command, "JDK_JAVA_OPTIONS"))) apply(w);
  // JVM options end at the main class, -jar FILE or -m MODULE (what follows is the program's).
  static const char* const kWithValue[] = {"-cp",           "-classpath",
                                           "--class-path",  "-p",
                                           "--module-path", "--upgrade-module-path",
                                           "--add-modules", "--limit-modules",
                                           "--add-reads",   "--add-exports",
                                           "--add-opens",   "--patch-module"};
  for (size_t i = 1; i < command.argv.size(); ++i) {
    const std::string& w = command.argv[i];
    if (w.starts_with("@")) {  // the launcher's argument files
      apply(w);
      continue;
    }
    if (w == "-jar" || w == "-m" || w == "--module" || !w.starts_with("-")) break;
    if (std::find(std::begin(kWithValue), std::end(kWithValue), w) != std::end(kWithValue)) {
      ++i;
      continue;
    }
    apply(w);
  }
  for (const auto& w : Words(EnvValue(command, "_JAVA_OPTIONS"))) apply(w);
  flags.method = method.value_or(false) || extended.value_or(false);
  flags.monitor = monitor.value_or(false) || extended.value_or(false);
  return flags;
}

namespace {

class HotSpotRuntime : public Runtime {
 public:
  std::string_view name() const override { return "jvm"; }
  std::string_view title() const override { return "a HotSpot JVM"; }

  std::optional<RuntimeInfo> Detect(const TargetBinaries& target) const override {
    auto lib = Libjvm(target);
    if (!lib) return std::nullopt;
    RuntimeInfo info;
    info.name = "jvm";
    info.what = fmt::format("a HotSpot JVM ({})", *lib);
    auto elf = symbols::ElfFile::Open(*lib);
    if (elf && !elf->FindUsdt("hotspot", "gc__begin").empty()) info.binary = *lib;
    return info;
  }

  // Without method probes no probe bounds the event dispatch thread's messages: jvm-edt
  // bounds them by where that thread waits, from the Java frames BPF walks. A running JVM
  // with a thread pool's worker and no event dispatch thread is a service: jvm-executor, its
  // worker's tasks bounded the same way.
  std::optional<OtherProfile> ProfileInstead(std::string_view profile, const TargetBinaries& target,
                                             const TargetCommand& command) const override {
    if (profile != "jvm") return std::nullopt;
    auto [flags, source] = Flags(target, command);
    if (flags.method) return std::nullopt;
    const std::string who = target.pid > 0 ? fmt::format("pid {}", target.pid) : "the JVM";
    if (target.pid > 0 && ServesFromAThreadPool(target.pid))
      return OtherProfile{
          "jvm-executor",
          fmt::format("{} runs HotSpot with its method probes off (as {} tells), a thread pool and no AWT event "
                      "dispatch thread: profile jvm-executor, each task a pool worker (pool-*) runs a message bounded "
                      "by its waits for the next task and named by the code it runs, Java frames in samples, "
                      "switch-outs and thread dumps, monitor contention with its holder (--threads loop:NAME "
                      "watches another worker)",
                      who, source)};
    return OtherProfile{
        "jvm-edt",
        fmt::format("{} runs HotSpot with its method probes off (as {} tells): profile jvm-edt, event-dispatch "
                    "messages bounded by the thread's waits for its next event and named by the code they run, "
                    "Java frames in samples, switch-outs and thread dumps, monitor contention with its holder "
                    "from libjvm.so's lock code (the monitor's class needs -XX:+DTraceMonitorProbes); for exact "
                    "messages and Java method beats start java with -XX:+DTraceMethodProbes",
                    who, source)};
  }

  Result<void> Check(const RuntimeCheck& check, const TargetBinaries& target,
                     const TargetCommand& command) const override {
    bool need_method = false, need_monitor = false;
    for (const std::string& point : check.points) {
      need_method |= point.starts_with("hotspot:method__");
      need_monitor |= point.starts_with("hotspot:monitor__");
    }
    if (!need_method && !need_monitor) return {};
    auto [flags, source] = Flags(target, command);
    const std::string who = target.pid > 0 ? fmt::format("pid {}", target.pid) : "the JVM";
    log::V1("{}: HotSpot method probes {}, monitor probes {} (from {})", who, flags.method ? "on" : "off",
            flags.monitor ? "on" : "off", source);
    if (need_method && !flags.method) {
      // Not an error: HotSpot exports its own layouts (VMStructs), so the session still
      // shows Java frames; only what the method probes bound (messages, beats) is missing.
      log::Warning(
          "{} runs HotSpot with its method probes off (as far as {} tells): profile {} records CPU samples of "
          "its Java threads (the report says where each ran), switch-outs and thread dumps with Java frames, but "
          "no event-dispatch messages or Java method beats; for those start java with -XX:+DTraceMethodProbes (or "
          "JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes)",
          who, source, check.profile_name);
      return {};
    }
    if (need_monitor && !flags.monitor && flags.method)
      log::Warning(
          "{}: monitor contention will not show: HotSpot's monitor probes are off (start java with "
          "-XX:+DTraceMonitorProbes)",
          who);
    return {};
  }

  // The probe flags, from a running JVM's memory, else from its command line; and where from.
  static std::pair<ProbeFlags, std::string> Flags(const TargetBinaries& target, const TargetCommand& command) {
    if (target.pid > 0)
      if (auto lib = Libjvm(target))
        if (auto flags = LiveFlags(target.pid, *lib)) return {*flags, "its memory"};
    return {ParseProbeFlags(command), "its command line"};
  }

  std::string Diagnose(const TargetBinaries& target, const TargetCommand& command) const override {
    (void)command;
    auto info = Detect(target);
    if (!info || !info->binary.empty()) return "";
    return fmt::format("{} {}, whose libjvm.so has no hotspot USDT probes (a build without DTrace support)",
                       target.pid > 0 ? fmt::format("pid {} runs", target.pid) : "the command runs", info->what);
  }

  Result<std::unique_ptr<InterpreterSupport>> Interpreter(const TargetBinaries& target, int pid) const override {
    return MakeHotSpotSupport(target, pid);
  }

  std::optional<std::string> DlopenedLibrary(const std::string& library, const std::string& exe_path) const override {
    return LauncherLibjvm(library, exe_path);
  }
};

}  // namespace

const Runtime& HotSpot() {
  static const HotSpotRuntime runtime;
  return runtime;
}

}  // namespace looptrace::loader::jvm
