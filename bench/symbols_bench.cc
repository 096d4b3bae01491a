// Symbolization throughput, printed as plain numbers and ratios measured side by side:
//  - warm lookups per second (addresses already named once: the per-module cache);
//  - uncached lookups per second (the DWARF index and symbol table themselves);
//  - cold load of a large library (symbols of libLLVM-14.so.1 or another path);
//  - the same batch of random .text addresses through eu-addr2line (one process) vs a
//    cold Symbolizer (module load included) -> ratio;
//  - the kernel's symbols (/proc/kallsyms, root), loaded at the first kernel stack a session
//    names: wall and CPU time, best of 5.
// Usage: looptrace_symbols_bench [--library PATH] [--dwarf PATH] [--addresses N]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/kernel_symbols.h"
#include "looptrace/symbols/symbolizer.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using looptrace::symbols::ElfFile;
using looptrace::symbols::ModuleCache;
using looptrace::symbols::Symbolizer;

double Seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// /proc/kallsyms to a sorted table: best wall and CPU time of 5 loads.
void ReportKernelSymbols() {
  double best_wall = 1e9, best_cpu = 1e9, first_cpu = 0;
  size_t symbols = 0;
  for (int round = 0; round < 5; ++round) {
    const double cpu = CpuSeconds();
    auto start = Clock::now();
    auto kernel = looptrace::symbols::KernelSymbols::Load();
    best_wall = std::min(best_wall, Seconds(start));
    best_cpu = std::min(best_cpu, CpuSeconds() - cpu);
    if (round == 0) first_cpu = CpuSeconds() - cpu;  // fresh memory: what a session pays
    if (!kernel) {
      std::printf("kernel symbols: %s\n", kernel.error().message.c_str());
      return;
    }
    symbols = kernel->size();
  }
  std::printf(
      "kernel symbols (/proc/kallsyms): %.1f ms wall, %.1f ms CPU (%zu text symbols, best of 5); the first load "
      "%.1f ms CPU\n",
      best_wall * 1e3, best_cpu * 1e3, symbols, first_cpu * 1e3);
}

// Random addresses inside the executable PT_LOAD segments' symbols (functions), fixed seed.
std::vector<uint64_t> RandomFunctionAddresses(const std::string& path, size_t count) {
  std::vector<uint64_t> out;
  auto elf = ElfFile::Open(path);
  if (!elf || elf->functions().empty()) return out;
  std::mt19937_64 rng(42);
  const auto& functions = elf->functions();
  while (out.size() < count) {
    const auto& f = functions[rng() % functions.size()];
    if (f.size == 0) continue;
    out.push_back(f.address + rng() % f.size);
  }
  return out;
}

// Runs eu-addr2line over the batch once; returns wall seconds (-1 if it cannot run).
double RunEuAddr2line(const std::string& path, const std::vector<uint64_t>& addresses, bool dwarf) {
  std::vector<std::string> args = {"eu-addr2line", "-a", "-f", "-C", "-e", path};
  if (dwarf) args.insert(args.begin() + 3, "-i");
  char buffer[32];
  for (uint64_t address : addresses) {
    std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(address));
    args.emplace_back(buffer);
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const auto start = Clock::now();
  if (posix_spawnp(&pid, "eu-addr2line", &actions, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const double seconds = Seconds(start);
  posix_spawn_file_actions_destroy(&actions);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? seconds : -1;
}

struct BatchResult {
  double cold_seconds = 0;    // fresh cache: load + first lookups
  double uncached_per_s = 0;  // lookups that miss the address cache (index + symbols)
  double warm_per_s = 0;      // repeated lookups (address cache hits)
  size_t named = 0;
  size_t with_line = 0;
};

BatchResult MeasureBatch(const std::string& path, const std::vector<uint64_t>& addresses, bool dwarf) {
  BatchResult result;
  {
    auto start = Clock::now();
    Symbolizer symbolizer({.use_dwarf = dwarf}, std::make_shared<ModuleCache>());
    for (uint64_t address : addresses) {
      auto s = symbolizer.SymbolizeModule(path, address);
      if (!s->function.empty()) ++result.named;
      if (s->degradation == looptrace::symbols::Degradation::kNone && !s->frames.empty() &&
          !s->frames.front().file.empty()) {
        ++result.with_line;
      }
    }
    result.cold_seconds = Seconds(start);
  }
  {
    // Uncached: a cache too small to keep anything, module already loaded.
    looptrace::symbols::ModuleCacheOptions options;
    options.address_cache_entries = 1;
    Symbolizer symbolizer({.use_dwarf = dwarf}, std::make_shared<ModuleCache>(options));
    for (uint64_t address : addresses) symbolizer.SymbolizeModule(path, address);
    size_t lookups = 0;
    auto start = Clock::now();
    while (Seconds(start) < 0.5) {
      for (uint64_t address : addresses) symbolizer.SymbolizeModule(path, address ^ 1);
      lookups += addresses.size();
    }
    result.uncached_per_s = static_cast<double>(lookups) / Seconds(start);
  }
  {
    Symbolizer symbolizer({.use_dwarf = dwarf}, std::make_shared<ModuleCache>());
    for (uint64_t address : addresses) symbolizer.SymbolizeModule(path, address);
    size_t lookups = 0;
    auto start = Clock::now();
    while (Seconds(start) < 0.5) {
      for (uint64_t address : addresses) {
        auto s = symbolizer.SymbolizeModule(path, address);
        lookups += s->function.size() > 0 ? 1 : 1;
      }
    }
    result.warm_per_s = static_cast<double>(lookups) / Seconds(start);
  }
  return result;
}

void Report(const char* label, const std::string& path, size_t count, bool dwarf) {
  const std::vector<uint64_t> addresses = RandomFunctionAddresses(path, count);
  if (addresses.empty()) {
    std::printf("%s: cannot read functions of %s, skipped\n", label, path.c_str());
    return;
  }
  const BatchResult ours = MeasureBatch(path, addresses, dwarf);
  const double eu = RunEuAddr2line(path, addresses, dwarf);
  std::printf("%s (%s, %zu addresses, %s)\n", label, path.c_str(), addresses.size(),
              dwarf ? "DWARF + inline frames" : "symbols only");
  std::printf("  named: %zu, with file:line: %zu\n", ours.named, ours.with_line);
  std::printf("  warm lookups:      %10.2f M/s\n", ours.warm_per_s / 1e6);
  std::printf("  uncached lookups:  %10.2f M/s\n", ours.uncached_per_s / 1e6);
  std::printf("  cold batch (load + lookups): %8.1f ms\n", ours.cold_seconds * 1e3);
  if (eu > 0) {
    std::printf("  eu-addr2line same batch:     %8.1f ms  -> ratio %.1fx (cold), %.0fx (warm)\n", eu * 1e3,
                eu / ours.cold_seconds, eu / (static_cast<double>(addresses.size()) / ours.warm_per_s));
  } else {
    std::printf("  eu-addr2line: not available\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string library = "/usr/lib/llvm-14/lib/libLLVM-14.so.1";
  std::string dwarf_binary = "/proc/self/exe";
  size_t count = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--library") == 0) library = argv[i + 1];
    if (std::strcmp(argv[i], "--dwarf") == 0) dwarf_binary = argv[i + 1];
    if (std::strcmp(argv[i], "--addresses") == 0) count = std::strtoul(argv[i + 1], nullptr, 10);
  }
  if (dwarf_binary == "/proc/self/exe") {
    char buffer[4096];
    const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
    if (n > 0) dwarf_binary.assign(buffer, static_cast<size_t>(n));
  }

  // Cold load of a large library: ElfFile::Open (both symbol tables, demangling).
  if (access(library.c_str(), R_OK) == 0) {
    double best = 1e9;
    size_t functions = 0;
    for (int round = 0; round < 3; ++round) {
      auto start = Clock::now();
      auto elf = ElfFile::Open(library);
      const double seconds = Seconds(start);
      if (!elf) {
        std::printf("cold load: %s\n", elf.error().message.c_str());
        break;
      }
      functions = elf->functions().size();
      best = std::min(best, seconds);
    }
    std::printf("cold load of %s: %.1f ms (%zu functions, best of 3)\n", library.c_str(), best * 1e3, functions);
    Report("library", library, count, /*dwarf=*/false);
  } else {
    std::printf("cold load: %s not present, skipped\n", library.c_str());
  }
  Report("binary with DWARF", dwarf_binary, count, /*dwarf=*/true);
  ReportKernelSymbols();
  return 0;
}
