// Scenarios: what the sample target does on its loopers. Each scenario lives
// in its own .cc file and registers itself with LOOPTRACE_SAMPLE_SCENARIO;
// adding a scenario means adding a file to the executable's sources.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_SCENARIO_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_SCENARIO_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace looptrace::sample {

class Handler;
class Looper;

struct ScenarioContext {
  Looper* main_looper = nullptr;
  Handler* main_handler = nullptr;  // a plain Handler on the main looper
  uint64_t seed = 1;                // --seed
  uint64_t count = 0;               // --count, or the scenario's default
  // When the scenario's first message should be due (CLOCK_MONOTONIC ns):
  // now + --start-delay-ms. Until then the main looper idles in its poll.
  uint64_t start_ns = 0;
  // --rate, if given (method-storm: beats per second, 0 = unpaced).
  std::optional<uint64_t> rate;
  // --refresh-rate: the display refresh rate in Hz (default 60).
  uint32_t refresh_hz = 60;
  // --stall-ms, if given: the length of the stall of the ANR/stall
  // scenarios (default per scenario).
  std::optional<uint64_t> stall_ms;
  // CLOCK_MONOTONIC read first thing in main() (the process.start milestone).
  uint64_t process_start_ns = 0;
};

class Scenario {
 public:
  virtual ~Scenario() = default;
  // Called on the main thread before the main looper runs. Posts the first
  // messages (due at ctx.start_ns or later) and arranges for the main looper
  // to quit when the scenario is over. `ctx` outlives the scenario.
  virtual void Start(const ScenarioContext& ctx) = 0;
  // Called on the main thread after the main looper quit: stop and join
  // helper threads, check results. Returns the process exit status.
  virtual int Finish() { return 0; }
};

struct ScenarioInfo {
  std::string_view name;
  std::string_view description;  // one line, for --list-scenarios
  uint64_t default_count = 0;    // used when --count is not given
  std::unique_ptr<Scenario> (*factory)() = nullptr;
};

class ScenarioRegistry {
 public:
  static ScenarioRegistry& Get();

  // Aborts on a duplicate name (a programming error).
  void Register(const ScenarioInfo& info);
  const ScenarioInfo* Find(std::string_view name) const;
  // Sorted by name.
  std::vector<const ScenarioInfo*> All() const;

 private:
  std::vector<ScenarioInfo> scenarios_;
};

template <typename T>
struct ScenarioRegistrar {
  ScenarioRegistrar(std::string_view name, std::string_view description, uint64_t default_count) {
    ScenarioRegistry::Get().Register(
        {name, description, default_count, []() -> std::unique_ptr<Scenario> { return std::make_unique<T>(); }});
  }
};

#define LOOPTRACE_SAMPLE_CONCAT_INNER(a, b) a##b
#define LOOPTRACE_SAMPLE_CONCAT(a, b) LOOPTRACE_SAMPLE_CONCAT_INNER(a, b)

// Registers scenario class `type` under `name` (a string literal). Use at
// namespace scope in the scenario's .cc file. The file must be compiled into
// the executable itself (not a static library, whose unreferenced objects the
// linker would drop).
#define LOOPTRACE_SAMPLE_SCENARIO(type, name, description, default_count)            \
  static const ::looptrace::sample::ScenarioRegistrar<type> LOOPTRACE_SAMPLE_CONCAT( \
      looptrace_sample_scenario_, __LINE__)(name, description, default_count)

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_SCENARIO_H_
