// looptrace-sample-app: a test target that behaves like an Android app's main
// thread (see README.md). It never talks to looptrace; looptrace finds its
// hooks through symbols and USDT notes.

#include <dlfcn.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "hook_table.h"
#include "looper.h"
#include "method_trace.h"
#include "scenario.h"
#include "signal_catcher.h"
#include "sys_util.h"
#include "truth.h"

namespace looptrace::sample {
namespace {

#ifndef LOOPTRACE_SAMPLE_PROGRAM
#define LOOPTRACE_SAMPLE_PROGRAM "looptrace-sample-app"
#endif
constexpr const char* kProgram = LOOPTRACE_SAMPLE_PROGRAM;
constexpr int kExitUsage = 2;
constexpr uint64_t kMaxCount = 100'000'000;
constexpr uint64_t kMaxStartDelayMs = 24ULL * 3600 * 1000;
constexpr uint64_t kMaxRate = 10'000'000'000ULL;
constexpr uint64_t kMaxRefreshHz = 1000;
constexpr uint64_t kMaxStallMs = 24ULL * 3600 * 1000;

struct Options {
  std::string scenario = "messages";
  bool scenario_given = false;
  std::optional<std::string> truth_path;
  uint64_t start_delay_ms = 0;
  uint64_t seed = 1;
  std::optional<uint64_t> count;
  std::optional<uint64_t> rate;
  uint64_t refresh_hz = 60;
  std::optional<uint64_t> stall_ms;
  std::optional<std::string> method_mapping_path;
  bool list_scenarios = false;
  bool print_hooks = false;
  bool help = false;
};

void PrintUsage() {
  std::printf(
      "usage: %s [--scenario NAME] [options]\n"
      "\n"
      "A sample target for looptrace that behaves like an Android main thread:\n"
      "a Looper with a time-ordered MessageQueue, Handlers, sync barriers, async\n"
      "messages, IdleHandlers and an epoll/eventfd idle wait.\n"
      "\n"
      "OPTIONS\n"
      "  --scenario NAME       scenario to run (default: messages)\n"
      "  --list-scenarios      list scenarios (name, description) and exit\n"
      "  --count N             number of messages (or ms for idle and method-storm,\n"
      "                        frames for frames-*; see --list-scenarios);\n"
      "                        default per scenario\n"
      "  --rate N              method-storm: method beats (enter or exit) per second\n"
      "                        (default: 1000000; 0 = as fast as possible);\n"
      "                        storm: messages per second (default: 100000)\n"
      "  --refresh-rate HZ     display refresh rate of the frame and startup\n"
      "                        scenarios (default: 60)\n"
      "  --stall-ms N          length of the stall of the anr-*, idle-*, input-lag\n"
      "                        and barrier-leak scenarios (default per scenario)\n"
      "  --seed N              seed of the deterministic PRNG (default: 1)\n"
      "  --start-delay-ms N    idle in the looper's epoll wait for N ms first (default: 0)\n"
      "  --truth FILE          write ground-truth timings as JSON lines at exit\n"
      "  --print-hooks         print each hook's address (then run the scenario\n"
      "                        only if --scenario is given)\n"
      "  --write-method-mapping FILE\n"
      "                        write the instrumented methods' ids in Matrix's\n"
      "                        methodMapping.txt format and exit\n"
      "  -h, --help            show this help\n"
      "\n"
      "Exit status: 0 success, 1 runtime failure, 2 usage error.\n",
      kProgram);
}

std::optional<uint64_t> ParseUint(std::string_view text, uint64_t min, uint64_t max) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

// Returns an error message, or an empty string on success.
std::string ParseArgs(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    auto flag_without_value = [&]() -> bool { return !inline_value.has_value(); };
    auto value = [&](std::string_view* out) -> bool {
      if (inline_value) {
        *out = *inline_value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto number = [&](uint64_t min, uint64_t max, uint64_t* out) -> std::string {
      std::string_view text;
      if (!value(&text)) return std::string(arg) + " needs a value";
      const std::optional<uint64_t> parsed = ParseUint(text, min, max);
      if (!parsed) {
        return "invalid number '" + std::string(text) + "' for " + std::string(arg) + " (expected " +
               std::to_string(min) + ".." + std::to_string(max) + ")";
      }
      *out = *parsed;
      return "";
    };

    std::string error;
    if (arg == "-h" || arg == "--help") {
      options->help = true;
    } else if (arg == "--list-scenarios" && flag_without_value()) {
      options->list_scenarios = true;
    } else if (arg == "--print-hooks" && flag_without_value()) {
      options->print_hooks = true;
    } else if (arg == "--scenario") {
      std::string_view text;
      if (!value(&text)) return "--scenario needs a value";
      options->scenario = std::string(text);
      options->scenario_given = true;
    } else if (arg == "--truth") {
      std::string_view text;
      if (!value(&text) || text.empty()) return "--truth needs a file name";
      options->truth_path = std::string(text);
    } else if (arg == "--write-method-mapping") {
      std::string_view text;
      if (!value(&text) || text.empty()) {
        return "--write-method-mapping needs a file name";
      }
      options->method_mapping_path = std::string(text);
    } else if (arg == "--rate") {
      uint64_t rate = 0;
      error = number(0, kMaxRate, &rate);
      options->rate = rate;
    } else if (arg == "--refresh-rate") {
      error = number(1, kMaxRefreshHz, &options->refresh_hz);
    } else if (arg == "--stall-ms") {
      uint64_t stall_ms = 0;
      error = number(1, kMaxStallMs, &stall_ms);
      options->stall_ms = stall_ms;
    } else if (arg == "--start-delay-ms") {
      error = number(0, kMaxStartDelayMs, &options->start_delay_ms);
    } else if (arg == "--seed") {
      error = number(0, UINT64_MAX, &options->seed);
    } else if (arg == "--count") {
      uint64_t count = 0;
      error = number(1, kMaxCount, &count);
      options->count = count;
    } else if (arg == "--list-scenarios" || arg == "--print-hooks") {
      error = std::string(arg) + " takes no value";
    } else {
      error = "unknown argument '" + std::string(argv[i]) + "' (see --help)";
    }
    if (!error.empty()) return error;
  }
  return "";
}

void PrintHooks() {
  for (const HookEntry& hook : AllHooks()) {
    Dl_info info{};
    uintptr_t base = 0;
    if (dladdr(hook.address, &info) != 0) {
      base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    }
    const uintptr_t address = reinterpret_cast<uintptr_t>(hook.address);
    // name, runtime address, offset from the executable's load base (the
    // symbol value in the ELF file)
    std::printf("%s 0x%jx 0x%jx\n", hook.name, static_cast<uintmax_t>(address), static_cast<uintmax_t>(address - base));
  }
  std::fflush(stdout);
}

int Main(uint64_t process_start_ns, int argc, char** argv) {
  Options options;
  if (const std::string error = ParseArgs(argc, argv, &options); !error.empty()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, error.c_str());
    return kExitUsage;
  }
  if (options.help) {
    PrintUsage();
    return 0;
  }
  if (options.method_mapping_path) {
    std::FILE* out = std::fopen(options.method_mapping_path->c_str(), "w");
    std::string error;
    if (out == nullptr) {
      error = std::strerror(errno);
    } else if (WriteMethodMapping(out, &error)) {
      return 0;
    }
    std::fprintf(stderr, "%s: cannot write method mapping %s: %s\n", kProgram, options.method_mapping_path->c_str(),
                 error.c_str());
    return 1;
  }
  if (options.list_scenarios) {
    for (const ScenarioInfo* info : ScenarioRegistry::Get().All()) {
      std::printf("%-21.*s %.*s\n", static_cast<int>(info->name.size()), info->name.data(),
                  static_cast<int>(info->description.size()), info->description.data());
    }
    return 0;
  }
  const ScenarioInfo* info = ScenarioRegistry::Get().Find(options.scenario);
  if (info == nullptr) {
    std::fprintf(stderr, "%s: unknown scenario '%s' (see --list-scenarios)\n", kProgram, options.scenario.c_str());
    return kExitUsage;
  }
  if (options.print_hooks) {
    PrintHooks();
    if (!options.scenario_given) return 0;
  }

  // Opened now so that an unwritable path fails before the scenario runs.
  if (options.truth_path) {
    std::FILE* truth_file = std::fopen(options.truth_path->c_str(), "w");
    if (truth_file == nullptr) {
      std::fprintf(stderr, "%s: cannot open truth file %s: %s\n", kProgram, options.truth_path->c_str(),
                   std::strerror(errno));
      return 1;
    }
    TruthRecorder::Global().SetOutput(truth_file, getpid(), process_start_ns);
  }

  // Precise timers: epoll timeouts and sleeps end when asked, not up to 50 us
  // later. Inherited by every thread created from here on.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  // SIGQUIT is blocked in every thread and taken by the "Signal Catcher"
  // thread, as in ART. Before any other thread exists (they inherit the mask).
  StartSignalCatcher();

  Looper* main_looper = Looper::PrepareMainLooper();
  int status = 0;
  {
    Handler main_handler(main_looper);
    ScenarioContext ctx;
    ctx.main_looper = main_looper;
    ctx.main_handler = &main_handler;
    ctx.seed = options.seed;
    ctx.count = options.count.value_or(info->default_count);
    ctx.start_ns = NowNs() + options.start_delay_ms * kNsPerMs;
    ctx.rate = options.rate;
    ctx.refresh_hz = static_cast<uint32_t>(options.refresh_hz);
    ctx.stall_ms = options.stall_ms;
    ctx.process_start_ns = process_start_ns;

    std::unique_ptr<Scenario> scenario = info->factory();
    scenario->Start(ctx);
    main_looper->Loop();
    status = scenario->Finish();
  }

  if (std::string error; !TruthRecorder::Global().Finish(&error)) {
    std::fprintf(stderr, "%s: cannot write truth file %s: %s\n", kProgram, options.truth_path->c_str(), error.c_str());
    return 1;
  }
  return status;
}

}  // namespace
}  // namespace looptrace::sample

int main(int argc, char** argv) {
  // The process.start milestone: the clock is read before anything else.
  const uint64_t process_start_ns = looptrace::sample::NowNs();
  return looptrace::sample::Main(process_start_ns, argc, argv);
}
