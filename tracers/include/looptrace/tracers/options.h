// Analysis options, declared once next to the tracer that uses them (with their defaults in
// the member initializers) and surfaced to the command line from here: the CLI turns every
// declaration into a flag, golden tests set them by the same names.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/report/render.h"
#include "looptrace/util/result.h"

namespace looptrace {

struct OptionDeclaration {
  std::string name;        // without dashes: "evil-threshold"
  std::string value_name;  // "MS", "N", "" for a flag
  std::string help;
  std::string default_text;  // shown in --help ("" = none)
  bool is_flag = false;
  bool is_list = false;  // comma-separated, may repeat
  // Parses and stores one value (a flag receives "true"); errors name the value.
  std::function<Result<void>(std::string_view)> set;
};

class OptionSet {
 public:
  // Milliseconds on the command line, nanoseconds in the program; must be > 0.
  void Milliseconds(std::string name, uint64_t* ns, std::string help);
  // A positive number of Hz (0 = unset is allowed as the default).
  void Hertz(std::string name, double* hz, std::string help);
  void Count(std::string name, size_t* value, size_t min, size_t max, std::string help);
  void Flag(std::string name, bool* value, std::string help);
  void List(std::string name, std::vector<std::string>* values, std::string value_name, std::string help);
  // Anything else: the caller parses.
  void Custom(OptionDeclaration declaration);

  const std::vector<OptionDeclaration>& declarations() const { return declarations_; }
  const OptionDeclaration* Find(std::string_view name) const;
  // Sets an option by name (golden-test args files, configuration).
  Result<void> Set(std::string_view name, std::string_view value) const;

 private:
  std::vector<OptionDeclaration> declarations_;
};

// Options every tracer shares, and the thresholds more than one reads: a report's tracer
// and the live figures (LiveStatsTracer) count the same ANRs, lags and evil methods.
struct CommonOptions {
  size_t top_n = 10;                                // rows in the "slowest" and "by name" tables, worst frames
  size_t max_nodes = 30;                            // call-tree node limit, Matrix's TARGET_EVIL_METHOD_STACK
  size_t sampled_max_nodes = 60;                    // sampled trees (sample_store.h) are deeper than method trees
  uint64_t evil_threshold_ns = 700'000'000;         // Matrix DEFAULT_EVIL_METHOD_THRESHOLD_MS
  uint64_t anr_threshold_ns = 5'000'000'000;        // Matrix DEFAULT_ANR; Android input timeout
  uint64_t lag_threshold_ns = 2'000'000'000;        // Matrix DEFAULT_NORMAL_LAG
  uint64_t idle_lag_threshold_ns = 2'000'000'000;   // Matrix's idle handler lag
  uint64_t input_lag_threshold_ns = 2'000'000'000;  // Matrix's touch event lag
  uint64_t barrier_threshold_ns = 2'000'000'000;
  double refresh_hz = 0;  // 0 = detect from vsync timestamps; else forced
  void Declare(OptionSet& options);
};

// Android's ANR timeouts by name (AOSP defaults: input 5 s, broadcast 10 s, ...), or
// milliseconds.
Result<uint64_t> ParseAnrThreshold(std::string_view text);

// The render options a user may set with the analysis ones: -f folded's scope and source.
void DeclareRenderOptions(RenderOptions& render, OptionSet& options);

// The options object of one tracer (registry.h creates one per tracer and run).
class TracerOptions {
 public:
  virtual ~TracerOptions() = default;
  virtual void Declare(OptionSet& options) = 0;
};

}  // namespace looptrace
