#include "looptrace/tracers/options.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace looptrace {
namespace {

std::string FormatNumber(double value) {
  if (value == std::floor(value) && std::abs(value) < 1e15) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{}", value);
}

Result<double> ParseNumber(std::string_view name, std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value))
    return MakeError(fmt::format("--{}: '{}' is not a number", name, text), ExitCode::kUsage);
  return value;
}

}  // namespace

void OptionSet::Milliseconds(std::string name, uint64_t* ns, std::string help) {
  OptionDeclaration d;
  d.name = name;
  d.value_name = "MS";
  d.help = std::move(help);
  d.default_text = FormatNumber(static_cast<double>(*ns) / 1e6);
  d.set = [name, ns](std::string_view text) -> Result<void> {
    ASSIGN_OR_RETURN(double ms, ParseNumber(name, text));
    if (ms <= 0 || ms > 1e12)
      return MakeError(fmt::format("--{}: {} must be a positive number of milliseconds", name, text), ExitCode::kUsage);
    *ns = static_cast<uint64_t>(std::llround(ms * 1e6));
    return {};
  };
  declarations_.push_back(std::move(d));
}

void OptionSet::Hertz(std::string name, double* hz, std::string help) {
  OptionDeclaration d;
  d.name = name;
  d.value_name = "HZ";
  d.help = std::move(help);
  if (*hz > 0) d.default_text = FormatNumber(*hz);
  d.set = [name, hz](std::string_view text) -> Result<void> {
    ASSIGN_OR_RETURN(double value, ParseNumber(name, text));
    if (value <= 0 || value > 100000)
      return MakeError(fmt::format("--{}: {} must be a rate in Hz above 0", name, text), ExitCode::kUsage);
    *hz = value;
    return {};
  };
  declarations_.push_back(std::move(d));
}

void OptionSet::Count(std::string name, size_t* value, size_t min, size_t max, std::string help) {
  OptionDeclaration d;
  d.name = name;
  d.value_name = "N";
  d.help = std::move(help);
  d.default_text = std::to_string(*value);
  d.set = [name, value, min, max](std::string_view text) -> Result<void> {
    size_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || ptr != text.data() + text.size() || n < min || n > max)
      return MakeError(fmt::format("--{}: '{}' must be a whole number from {} to {}", name, text, min, max),
                       ExitCode::kUsage);
    *value = n;
    return {};
  };
  declarations_.push_back(std::move(d));
}

void OptionSet::Flag(std::string name, bool* value, std::string help) {
  OptionDeclaration d;
  d.name = std::move(name);
  d.help = std::move(help);
  d.is_flag = true;
  d.set = [value](std::string_view text) -> Result<void> {
    *value = text != "false" && text != "0";
    return {};
  };
  declarations_.push_back(std::move(d));
}

void OptionSet::List(std::string name, std::vector<std::string>* values, std::string value_name, std::string help) {
  OptionDeclaration d;
  d.name = std::move(name);
  d.value_name = std::move(value_name);
  d.help = std::move(help);
  d.is_list = true;
  d.set = [values](std::string_view text) -> Result<void> {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string_view::npos) comma = text.size();
      if (comma > start) values->emplace_back(text.substr(start, comma - start));
      start = comma + 1;
    }
    return {};
  };
  declarations_.push_back(std::move(d));
}

void OptionSet::Custom(OptionDeclaration declaration) { declarations_.push_back(std::move(declaration)); }

const OptionDeclaration* OptionSet::Find(std::string_view name) const {
  for (const auto& d : declarations_)
    if (d.name == name) return &d;
  return nullptr;
}

Result<void> OptionSet::Set(std::string_view name, std::string_view value) const {
  const OptionDeclaration* d = Find(name);
  if (!d) return MakeError(fmt::format("unknown option --{}", name), ExitCode::kUsage);
  return d->set(value);
}

void CommonOptions::Declare(OptionSet& options) {
  options.Count("top", &top_n, 1, 100000, "rows in the slowest-message and by-name tables");
  options.Count("max-nodes", &max_nodes, 1, 1000000, "call-tree node limit (Matrix's trim rule)");
  options.Count("sampled-max-nodes", &sampled_max_nodes, 1, 100000,
                "node limit of sampled call trees (Matrix's trim rule; they are deeper than method trees)");
  options.Milliseconds("evil-threshold", &evil_threshold_ns,
                       "report messages costing at least MS with their call tree (EvilMethod)");
  OptionDeclaration anr;
  anr.name = "anr-threshold";
  anr.value_name = "MS|PRESET";
  anr.help =
      "ANR snapshot when a message runs this long: MS or input|broadcast|broadcast-bg|service|"
      "service-bg|bind-application|job";
  anr.default_text = std::to_string(anr_threshold_ns / 1'000'000);
  anr.set = [this](std::string_view text) -> Result<void> {
    ASSIGN_OR_RETURN(anr_threshold_ns, ParseAnrThreshold(text));
    return {};
  };
  options.Custom(std::move(anr));
  options.Milliseconds("lag-threshold", &lag_threshold_ns,
                       "LAG snapshot of a message running this long (Matrix's 2 s)");
  options.Milliseconds("idle-lag-threshold", &idle_lag_threshold_ns, "slow IdleHandler");
  options.Milliseconds("input-lag-threshold", &input_lag_threshold_ns, "input event received -> finished");
  options.Milliseconds("barrier-threshold", &barrier_threshold_ns, "sync barrier standing while sync messages wait");
  options.Hertz("refresh-rate", &refresh_hz, "display refresh rate in Hz (default: measured from vsync)");
}

Result<uint64_t> ParseAnrThreshold(std::string_view text) {
  static const std::pair<const char*, uint64_t> kPresets[] = {
      {"input", 5000},    {"broadcast", 10000},   {"broadcast-bg", 60000},
      {"service", 20000}, {"service-bg", 200000}, {"bind-application", 15000},
      {"job", 8000}};
  for (auto [name, ms] : kPresets)
    if (text == name) return ms * 1'000'000;
  double ms = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec == std::errc() && ptr == text.data() + text.size() && ms > 0 && ms < 1e12)
    return static_cast<uint64_t>(ms * 1e6);
  return MakeError(fmt::format("invalid --anr-threshold '{}'", text), ExitCode::kUsage,
                   "milliseconds, or one of input (5 s), broadcast (10 s), broadcast-bg (60 s), "
                   "service (20 s), service-bg (200 s), bind-application (15 s), job (8 s)");
}

namespace {

// A value of `allowed`, stored in `out`.
OptionDeclaration OneOf(std::string name, std::string value_name, std::string help,
                        std::vector<std::string_view> allowed, std::string* out) {
  OptionDeclaration d;
  d.name = name;
  d.value_name = std::move(value_name);
  d.help = std::move(help);
  d.default_text = *out;
  d.set = [name, allowed, out](std::string_view value) -> Result<void> {
    for (auto a : allowed)
      if (value == a) {
        *out = std::string(value);
        return {};
      }
    std::string names;
    for (auto a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
    return MakeError(fmt::format("invalid --{} '{}'", name, value), ExitCode::kUsage, "one of " + names);
  };
  return d;
}

}  // namespace

void DeclareRenderOptions(RenderOptions& render, OptionSet& options) {
  options.Custom(OneOf("folded-scope", "slow|session",
                       "-f folded: the stacks of each slow message, frame and startup (slow), or every sample of the "
                       "session (session)",
                       {"slow", "session"}, &render.folded_scope));
  options.Custom(OneOf("folded-source", "sampled|instrumented",
                       "-f folded: stacks from stack samples, or from method-beat call trees (self time per node)",
                       {"sampled", "instrumented"}, &render.folded_source));
}

}  // namespace looptrace
