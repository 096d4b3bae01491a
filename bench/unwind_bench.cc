// User-space cost of a stack sample: DWARF unwinding of a stack copy (registers + the
// stack bytes BPF copies) and naming its frames, as the loader does for every sample with
// --dwarf-unwind; and naming a frame-pointer sample's ips. The stack is a real one: a
// fixture built without frame pointers, stopped in a 9-frame call chain (plus libc's). Goal:
// at least 20 k DWARF-unwound samples/s per core. The walk alone is measured twice: with
// libdwfl's DWARF interpreter and with the compact rows compiled from .eh_frame (the rows a
// BPF walker can read).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loader/decode/stack_resolver.h"
#include "looptrace/symbols/unwind_table.h"

namespace {

using namespace looptrace;

struct Capture {
  pid_t pid = -1;
  symbols::UnwindRegisters regs;
  std::vector<uint8_t> stack;
};

// Starts `fixture stop` and copies its registers and stack top once.
const Capture& Stopped(const std::string& fixture) {
  static std::map<std::string, std::unique_ptr<Capture>> captures;
  auto& c = captures[fixture];
  if (c) return *c;
  c = std::make_unique<Capture>();
  const std::string path = std::string(LOOPTRACE_FIXTURE_DIR) + "/" + fixture;
  c->pid = fork();
  if (c->pid == 0) {
    execl(path.c_str(), path.c_str(), "stop", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(c->pid, &status, WUNTRACED);
  ptrace(PTRACE_SEIZE, c->pid, nullptr, nullptr);
  ptrace(PTRACE_INTERRUPT, c->pid, nullptr, nullptr);
  waitpid(c->pid, &status, __WALL);
  user_regs_struct u{};
  ptrace(PTRACE_GETREGS, c->pid, nullptr, &u);
  const uint64_t values[17] = {u.rax, u.rdx, u.rcx, u.rbx, u.rsi, u.rdi, u.rbp, u.rsp, u.r8,
                               u.r9,  u.r10, u.r11, u.r12, u.r13, u.r14, u.r15, u.rip};
  for (int i = 0; i < 17; ++i) c->regs.Set(i, values[i]);
  c->stack.resize(8192);
  const int fd = open(("/proc/" + std::to_string(c->pid) + "/mem").c_str(), O_RDONLY);
  ssize_t n = pread(fd, c->stack.data(), c->stack.size(), static_cast<off_t>(u.rsp));
  while (n <= 0 && c->stack.size() > 1024) {
    c->stack.resize(c->stack.size() / 2);
    n = pread(fd, c->stack.data(), c->stack.size(), static_cast<off_t>(u.rsp));
  }
  close(fd);
  c->stack.resize(n > 0 ? static_cast<size_t>(n) : 0);
  std::atexit([] {
    for (auto& [name, capture] : captures) {
      kill(capture->pid, SIGKILL);
      waitpid(capture->pid, nullptr, 0);
    }
  });
  return *c;
}

// One sample record of the stopped fixture as BPF sends it with --dwarf-unwind.
std::vector<uint8_t> CopyRecord(const Capture& c) {
  auto copy = std::make_unique<lt_stack_copy>();
  copy->header.type = LT_RECORD_SAMPLE_COPY;
  copy->size = static_cast<uint32_t>(c.stack.size());
  copy->header.size = static_cast<uint32_t>(offsetof(lt_stack_copy, bytes) + copy->size);
  copy->kind = LT_SAMPLE_CPU;
  for (int i = 0; i < 17; ++i) copy->regs[i] = c.regs.Get(i);
  copy->valid_mask = (1u << 17) - 1;
  std::memcpy(copy->bytes, c.stack.data(), c.stack.size());
  const auto* bytes = reinterpret_cast<const uint8_t*>(copy.get());
  return std::vector<uint8_t>(bytes, bytes + copy->header.size);
}

void BM_DwarfSample(benchmark::State& state) {
  const Capture& c = Stopped("symtest_o2_nofp_pie");
  symbols::ProcessSymbolizer symbolizer(c.pid);
  Stats stats;
  loader::StackResolver resolver(c.pid, &symbolizer, &stats);
  const auto record = CopyRecord(c);
  size_t frames = 0;
  for (auto _ : state) {
    auto sample = resolver.Decode(record);
    frames = sample ? sample->frames.size() : 0;
    benchmark::DoNotOptimize(sample);
  }
  state.counters["frames"] = static_cast<double>(frames);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DwarfSample)->Unit(benchmark::kMicrosecond);

void BM_FramePointerSample(benchmark::State& state) {
  const Capture& c = Stopped("symtest_o2_fp_pie");
  symbols::ProcessSymbolizer symbolizer(c.pid);
  Stats stats;
  loader::StackResolver resolver(c.pid, &symbolizer, &stats);
  symbols::UnwindInput input;
  input.pid = c.pid;
  input.regs = c.regs;
  input.stack_base = c.regs.rsp;
  input.stack = c.stack;
  std::vector<uint64_t> ips;
  if (auto walk = symbols::UnwindFramePointers(input))
    for (const auto& f : *walk) ips.push_back(f.pc);
  lt_sample_record rec{};
  rec.header.type = LT_RECORD_SAMPLE;
  rec.nr_ips = static_cast<uint16_t>(ips.size());
  rec.header.size = static_cast<uint32_t>(offsetof(lt_sample_record, ips) + 8 * ips.size());
  std::copy(ips.begin(), ips.end(), rec.ips);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&rec);
  const std::vector<uint8_t> record(bytes, bytes + rec.header.size);
  for (auto _ : state) benchmark::DoNotOptimize(resolver.Decode(record));
  state.counters["frames"] = static_cast<double>(ips.size());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FramePointerSample)->Unit(benchmark::kMicrosecond);

}  // namespace

namespace {

symbols::UnwindInput InputOf(const Capture& c, const std::vector<symbols::MapEntry>& maps) {
  symbols::UnwindInput input;
  input.pid = c.pid;
  input.regs = c.regs;
  input.stack_base = c.regs.rsp;
  input.stack = c.stack;
  input.maps = maps;
  return input;
}

// The walk alone over one captured stack, by `Walker` (libdwfl's Unwinder or TableUnwinder).
template <typename Walker>
void BM_Walk(benchmark::State& state) {
  const Capture& c = Stopped("symtest_o2_nofp_pie");
  const auto maps = symbols::ReadProcMaps(c.pid).value_or(std::vector<symbols::MapEntry>{});
  const symbols::UnwindInput input = InputOf(c, maps);
  Walker walker;
  size_t frames = 0;
  for (auto _ : state) {
    auto outcome = walker.Unwind(input);
    frames = outcome ? outcome->frames.size() : 0;
    benchmark::DoNotOptimize(outcome);
  }
  state.counters["frames"] = static_cast<double>(frames);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_Walk, symbols::Unwinder)->Name("BM_WalkLibdwfl")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_Walk, symbols::TableUnwinder)->Name("BM_WalkCompiledTables")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
