// The stack resolver on real stacks: a fixture stopped deep in a call chain (built with and
// without frame pointers) and this test process itself. Frame-pointer ips and DWARF
// unwinding, return addresses replaced by a uretprobe trampoline put back, bogus frames
// ending the walk with the reason, sample records (good, malformed, faulted), perf maps for
// JIT code, a library replaced on disk, a process that exited.
#include "loader/decode/stack_resolver.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace looptrace::loader {
namespace {

std::string Fixture(const std::string& name) { return std::string(LOOPTRACE_FIXTURE_DIR) + "/" + name; }

// A fixture stopped in st_leaf (main -> st_stop_chain -> st_level_a -> st_level_b x3 -> st_level_c -> st_leaf),
// with its registers and stack read through ptrace and /proc/PID/mem: what BPF would copy.
class Stopped {
 public:
  explicit Stopped(const std::string& path) {
    pid_ = fork();
    if (pid_ == 0) {
      execl(path.c_str(), path.c_str(), "stop", static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    if (waitpid(pid_, &status, WUNTRACED) != pid_ || !WIFSTOPPED(status)) return;
    if (ptrace(PTRACE_SEIZE, pid_, nullptr, nullptr) != 0) return;
    ptrace(PTRACE_INTERRUPT, pid_, nullptr, nullptr);
    waitpid(pid_, &status, __WALL);
    user_regs_struct u{};
    if (ptrace(PTRACE_GETREGS, pid_, nullptr, &u) != 0) return;
    const uint64_t values[17] = {u.rax, u.rdx, u.rcx, u.rbx, u.rsi, u.rdi, u.rbp, u.rsp, u.r8,
                                 u.r9,  u.r10, u.r11, u.r12, u.r13, u.r14, u.r15, u.rip};
    for (int i = 0; i < 17; ++i) regs.Set(i, values[i]);
    stack.resize(16384);
    const int fd = open(("/proc/" + std::to_string(pid_) + "/mem").c_str(), O_RDONLY);
    ssize_t n = pread(fd, stack.data(), stack.size(), static_cast<off_t>(u.rsp));
    for (size_t size = 8192; n <= 0 && size >= 1024; size /= 2) {
      stack.resize(size);
      n = pread(fd, stack.data(), stack.size(), static_cast<off_t>(u.rsp));
    }
    close(fd);
    if (n > 0) {
      stack.resize(static_cast<size_t>(n));
      ok_ = true;
    }
  }
  ~Stopped() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  bool ok() const { return ok_; }
  void Kill() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  symbols::UnwindRegisters regs;
  std::vector<uint8_t> stack;

 private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

std::vector<std::string> Functions(const ResolvedStack& stack) {
  std::vector<std::string> out;
  for (const auto& f : stack.frames) out.push_back(f.function);
  return out;
}

bool Has(const ResolvedStack& stack, const std::string& function) {
  for (const auto& f : stack.frames)
    if (f.function == function) return true;
  return false;
}

std::string Dump(const ResolvedStack& stack) {
  std::string out = "stop: '" + stack.stop + "'\n";
  for (const auto& f : stack.frames) out += "  " + f.Describe() + "\n";
  return out;
}

const std::vector<std::string> kChain = {"st_leaf", "st_level_c", "st_level_b", "st_level_a", "st_stop_chain", "main"};

TEST(StackResolver, UnwindsAStackCopyWithoutFramePointersDownToMain) {
  Stopped fixture(Fixture("symtest_o2_nofp_pie"));
  ASSERT_TRUE(fixture.ok());
  symbols::ProcessSymbolizer symbolizer(fixture.pid());
  Stats stats;
  StackResolver resolver(fixture.pid(), &symbolizer, &stats);
  ResolvedStack stack = resolver.FromCopy(fixture.regs, fixture.regs.rsp, fixture.stack, {});
  for (const auto& f : kChain) EXPECT_TRUE(Has(stack, f)) << f << "\n" << Dump(stack);
  EXPECT_EQ(stack.stop, "") << Dump(stack);
  EXPECT_NE(stack.frames[0].location.find("symtest_util.c:"), std::string::npos) << Dump(stack);
  // Only sp and pc, as /proc/PID/task/TID/syscall gives them for a blocked thread: the CFI
  // needs no more without frame pointers.
  auto blocked = resolver.FromBlockedThread(static_cast<uint32_t>(fixture.pid()), {});
  ASSERT_TRUE(blocked);
  for (const auto& f : kChain) EXPECT_TRUE(Has(*blocked, f)) << f << "\n" << Dump(*blocked);
}

// A pending uretprobe replaced a return address with the kernel's trampoline ([uprobes]):
// the walk ends at it, named as such; with the shadow stack's entry it goes on to main.
TEST(StackResolver, PutsBackReturnAddressesAUretprobeReplaced) {
  Stopped fixture(Fixture("symtest_o2_nofp_pie"));
  ASSERT_TRUE(fixture.ok());
  symbols::ProcessSymbolizer symbolizer(fixture.pid());
  Stats stats;
  // The target's mappings and the kernel's uretprobe trampoline page ([uprobes]).
  constexpr uint64_t kTrampoline = 0x7fffffffe000;
  auto maps_with_trampoline = [pid = fixture.pid()]() -> Result<std::vector<symbols::MapEntry>> {
    ASSIGN_OR_RETURN(auto maps, symbols::ReadProcMaps(pid));
    maps.push_back({kTrampoline, kTrampoline + 0x1000, 0, "r-xp", 0, 0, 0, "[uprobes]", false});
    return maps;
  };
  StackResolver resolver(fixture.pid(), &symbolizer, &stats, maps_with_trampoline);
  ResolvedStack truth = resolver.FromCopy(fixture.regs, fixture.regs.rsp, fixture.stack, {});
  ASSERT_GE(truth.frames.size(), 4u);
  // The slot holding st_level_b's return address into st_level_a.
  uint64_t ret = 0;
  for (size_t i = 1; i < truth.frames.size(); ++i)
    if (truth.frames[i].function == "st_level_a") ret = truth.frames[i].pc;
  ASSERT_NE(ret, 0u);
  size_t offset = 0;
  for (size_t o = 0; o + 8 <= fixture.stack.size(); o += 8) {
    uint64_t v;
    std::memcpy(&v, fixture.stack.data() + o, 8);
    if (v == ret) offset = o;
  }
  ASSERT_NE(offset, 0u);
  std::vector<uint8_t> hijacked = fixture.stack;
  std::memcpy(hijacked.data() + offset, &kTrampoline, 8);

  ResolvedStack broken = resolver.FromCopy(fixture.regs, fixture.regs.rsp, hijacked, {});
  ASSERT_FALSE(broken.frames.empty());
  EXPECT_EQ(broken.frames.back().function, "[uretprobe trampoline]") << Dump(broken);
  EXPECT_NE(broken.stop.find("uretprobe trampoline"), std::string::npos) << Dump(broken);
  EXPECT_FALSE(Has(broken, "main"));

  const lt_shadow_frame shadow{fixture.regs.rsp + offset, ret};
  ResolvedStack fixed = resolver.FromCopy(fixture.regs, fixture.regs.rsp, hijacked, {&shadow, 1});
  EXPECT_EQ(Functions(fixed), Functions(truth)) << Dump(fixed);
  EXPECT_EQ(stats.Get(StatId::uretprobe_frames_restored), 1u);

  // The same for a frame-pointer walk's ips.
  std::vector<uint64_t> ips;
  for (const auto& f : truth.frames)
    if (!f.inlined) ips.push_back(f.pc);
  std::vector<uint64_t> hijacked_ips = ips;
  for (auto& ip : hijacked_ips)
    if (ip == ret) ip = kTrampoline;
  EXPECT_EQ(Functions(resolver.FromIps(hijacked_ips, {&shadow, 1})), Functions(resolver.FromIps(ips, {})));
}

TEST(StackResolver, AFramePointerWalkEndsAtTheFirstBogusFrameAndSaysWhy) {
  Stopped fixture(Fixture("symtest_o2_fp_pie"));
  ASSERT_TRUE(fixture.ok());
  symbols::ProcessSymbolizer symbolizer(fixture.pid());
  Stats stats;
  StackResolver resolver(fixture.pid(), &symbolizer, &stats);
  symbols::UnwindInput input;
  input.pid = fixture.pid();
  input.regs = fixture.regs;
  input.stack_base = fixture.regs.rsp;
  input.stack = fixture.stack;
  auto walk = symbols::UnwindFramePointers(input);
  ASSERT_TRUE(walk);
  std::vector<uint64_t> ips;
  for (const auto& f : *walk) ips.push_back(f.pc);
  ResolvedStack good = resolver.FromIps(ips, {});
  for (const auto& f : kChain) EXPECT_TRUE(Has(good, f)) << f << "\n" << Dump(good);
  // Garbage after main, as a walk through code without frame pointers reads it.
  ips.resize(4);
  ips.push_back(0xffffef2d8d485500);
  ips.push_back(ips[1]);
  ResolvedStack cut = resolver.FromIps(ips, {});
  ASSERT_GE(cut.frames.size(), 4u);
  ASSERT_LT(cut.frames.size(), good.frames.size());
  for (size_t i = 0; i < cut.frames.size(); ++i) EXPECT_EQ(cut.frames[i].function, good.frames[i].function);
  for (const auto& f : cut.frames) EXPECT_EQ(f.Describe().find("0xffffef2d8d485500"), std::string::npos);
  EXPECT_TRUE(cut.stop.starts_with("frame pointer invalid after ")) << Dump(cut);
  EXPECT_EQ(stats.Get(StatId::bogus_frames_dropped), 1u);
}

TEST(StackResolver, BlamesAModuleWithoutFramePointers) {
  Stopped fixture(Fixture("symtest_o2_nofp_pie"));
  ASSERT_TRUE(fixture.ok());
  symbols::ProcessSymbolizer symbolizer(fixture.pid());
  Stats stats;
  StackResolver resolver(fixture.pid(), &symbolizer, &stats);
  const uint64_t ips[] = {fixture.regs.rip, 0x1234};
  ResolvedStack stack = resolver.FromIps(ips, {});
  ASSERT_EQ(stack.frames.size(), 1u);
  EXPECT_EQ(stack.frames[0].function, "st_leaf");
  EXPECT_EQ(stack.stop, "symtest_o2_nofp_pie keeps no frame pointers (--dwarf-unwind unwinds it)");
}

std::vector<uint8_t> SampleRecord(uint64_t ts, uint32_t tid, uint16_t kind, const std::vector<uint64_t>& ips) {
  lt_sample_record rec{};
  rec.header.type = LT_RECORD_SAMPLE;
  rec.header.size = static_cast<uint32_t>(offsetof(lt_sample_record, ips) + 8 * ips.size());
  rec.ts_ns = ts;
  rec.tid = tid;
  rec.kind = kind;
  rec.nr_ips = static_cast<uint16_t>(ips.size());
  std::copy(ips.begin(), ips.end(), rec.ips);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&rec);
  return std::vector<uint8_t>(bytes, bytes + rec.header.size);
}

// A BPF walk stopped on purpose at the interpreter's code: said as such, not blamed on frame
// pointers (the interpreter's frames replace it when they are spliced in).
TEST(StackResolver, SaysAWalkCutAtTheInterpreterWasCutOnPurpose) {
  Stopped fixture(Fixture("symtest_o2_nofp_pie"));
  ASSERT_TRUE(fixture.ok());
  symbols::ProcessSymbolizer symbolizer(fixture.pid());
  Stats stats;
  StackResolver resolver(fixture.pid(), &symbolizer, &stats);
  auto raw = SampleRecord(42, 7, LT_SAMPLE_CPU, {fixture.regs.rip});
  auto whole = resolver.Decode(raw);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->stop, "symtest_o2_nofp_pie keeps no frame pointers (--dwarf-unwind unwinds it)");
  reinterpret_cast<lt_sample_record*>(raw.data())->walk_end = LT_WALK_AT_INTERPRETER;
  auto cut = resolver.Decode(raw);
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->frames, std::vector<std::string>{"st_leaf"});
  EXPECT_EQ(cut->stop, kCutAtInterpreter);
}

TEST(StackResolver, DecodesSampleRecordsAndRejectsMalformedOnes) {
  Stopped fixture(Fixture("symtest_o2_fp_pie"));
  ASSERT_TRUE(fixture.ok());
  symbols::ProcessSymbolizer symbolizer(fixture.pid());
  Stats stats;
  StackResolver resolver(fixture.pid(), &symbolizer, &stats);
  auto raw = SampleRecord(42, 7, LT_SAMPLE_SWITCH, {fixture.regs.rip});
  auto sample = resolver.Decode(raw);
  ASSERT_TRUE(sample);
  EXPECT_EQ(sample->ts_ns, 42u);
  EXPECT_EQ(sample->tid, 7u);
  EXPECT_FALSE(sample->on_cpu);
  EXPECT_EQ(sample->frames, std::vector<std::string>{"st_leaf"});

  auto short_raw = raw;
  short_raw.resize(20);
  EXPECT_FALSE(resolver.Decode(short_raw));
  auto lying = raw;
  reinterpret_cast<lt_sample_record*>(lying.data())->nr_ips = 3;  // the size says 1
  EXPECT_FALSE(resolver.Decode(lying));
  auto too_many = raw;
  reinterpret_cast<lt_sample_record*>(too_many.data())->nr_shadow = LT_MAX_SHADOW + 1;
  EXPECT_FALSE(resolver.Decode(too_many));

  // A stack copy that faulted: where the thread was, nothing more, counted.
  auto copy = std::make_unique<lt_stack_copy>();
  copy->header.type = LT_RECORD_SAMPLE_COPY;
  copy->header.size = offsetof(lt_stack_copy, bytes);
  copy->ts_ns = 43;
  copy->kind = LT_SAMPLE_CPU;
  copy->regs[16] = fixture.regs.rip;
  copy->regs[7] = fixture.regs.rsp;
  copy->valid_mask = (1u << 16) | (1u << 7);
  const auto* bytes = reinterpret_cast<const uint8_t*>(copy.get());
  auto faulted = resolver.Decode(std::span<const uint8_t>(bytes, offsetof(lt_stack_copy, bytes)));
  ASSERT_TRUE(faulted);
  EXPECT_TRUE(faulted->on_cpu);
  EXPECT_EQ(faulted->frames, std::vector<std::string>{"st_leaf"});
  EXPECT_EQ(faulted->stop, "stack copy faulted");
  EXPECT_EQ(stats.Get(StatId::stack_copy_failed), 1u);

  // Unwound after the process exited: still named (from its files), counted. The resolver
  // looks for the process every 10 ms (unless the session tells it first).
  fixture.Kill();
  std::this_thread::sleep_for(std::chrono::milliseconds(15));
  auto late = resolver.Decode(raw);
  ASSERT_TRUE(late);
  EXPECT_EQ(late->frames, std::vector<std::string>{"st_leaf"});
  EXPECT_EQ(stats.Get(StatId::samples_after_exit), 1u);
}

// JIT code: an anonymous executable mapping named through /tmp/perf-PID.map, which is read
// again when it grows; malformed lines are counted.
TEST(StackResolver, NamesJitCodeFromThePerfMap) {
  void* code = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(code, MAP_FAILED);
  const uint64_t base = reinterpret_cast<uint64_t>(code);
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  {
    std::ofstream out(path, std::ios::trunc);
    out << std::hex << base << " 40 LazyCompile:*handler app.js:10\n"
        << "bogus\n";
  }
  symbols::ProcessSymbolizer symbolizer(getpid());
  Stats stats;
  StackResolver resolver(getpid(), &symbolizer, &stats);
  const uint64_t first[] = {base + 0x10};
  auto stack = resolver.FromIps(first, {});
  ASSERT_EQ(stack.frames.size(), 1u);
  EXPECT_EQ(stack.frames[0].Name(), "LazyCompile:*handler app.js:10");
  const uint64_t later[] = {base + 0x100};
  EXPECT_EQ(resolver.FromIps(later, {}).frames[0].Name(), "[jit]+" + fmt::format("{:#x}", base + 0x100));
  {
    std::ofstream out(path, std::ios::app);
    out << std::hex << base + 0x100 << " 40 LazyCompile:*later app.js:20\n";
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the map is re-read at most every 200 ms
  EXPECT_EQ(resolver.FromIps(later, {}).frames[0].Name(), "LazyCompile:*later app.js:20");
  {
    // The JIT frees both and compiles a method over them: the newest line names the code
    // at once, although older lines cover the same addresses.
    std::ofstream out(path, std::ios::app);
    out << std::hex << base << " 200 LazyCompile:*route app.js:30\n";
  }
  EXPECT_EQ(resolver.FromIps(first, {}).frames[0].Name(), "LazyCompile:*route app.js:30");
  EXPECT_EQ(resolver.FromIps(later, {}).frames[0].Name(), "LazyCompile:*route app.js:30");
  resolver.Finish();
  EXPECT_EQ(stats.Get(StatId::perf_map_bad_lines), 1u);
  std::filesystem::remove(path);
  munmap(code, 4096);
}

// A library replaced on disk after it was mapped (the old file kept by a hard link, so the
// mapping is not "(deleted)"): frames are named from the mapped file, never from the new
// one, and the replacement is counted.
TEST(StackResolver, ALibraryReplacedOnDiskKeepsItsNames) {
  const std::string dir = std::filesystem::temp_directory_path() / ("lt-replaced-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string lib = dir + "/libltfixture.so.1";
  std::filesystem::copy_file(Fixture("libltfixture.so.1.2.3"), lib, std::filesystem::copy_options::overwrite_existing);
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto function = reinterpret_cast<uint64_t>(dlsym(handle, "lt_lib_new_api"));
  ASSERT_NE(function, 0u);
  std::filesystem::create_hard_link(lib, dir + "/kept");
  std::filesystem::copy_file("/proc/self/exe", dir + "/other");  // another program entirely
  std::filesystem::rename(dir + "/other", lib);

  symbols::ProcessSymbolizer symbolizer(getpid(), std::make_shared<symbols::ModuleCache>());
  Stats stats;
  StackResolver resolver(getpid(), &symbolizer, &stats);
  const uint64_t ips[] = {function};
  auto stack = resolver.FromIps(ips, {});
  ASSERT_EQ(stack.frames.size(), 1u);
  EXPECT_EQ(stack.frames[0].function, "lt_lib_new_api");
  resolver.Finish();
  EXPECT_EQ(stats.Get(StatId::module_replaced), 1u);
  dlclose(handle);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace looptrace::loader
