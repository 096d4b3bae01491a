#include <fmt/format.h>

#include <charconv>

#include "cli.h"
#include "looptrace/tracers/render.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {

int Fail(const Error& error) {
  log::Error("{}", error.message);
  log::Hint(error.hint);
  return static_cast<int>(error.code);
}

void AddAnalysisOptions(CLI::App* command, AnalysisOptions& options) {
  // The declarations bind to `options`, which outlives parsing.
  const OptionSet declarations = options.Declarations();
  for (const OptionDeclaration& d : declarations.declarations()) {
    const std::string flag = "--" + d.name;
    auto set = d.set;
    if (d.is_flag) {
      command->add_flag_callback(flag, [set] { (void)set("true"); }, d.help);
      continue;
    }
    CLI::Option* option = nullptr;
    if (d.is_list) {
      option = command->add_option_function<std::vector<std::string>>(
          flag,
          [set, flag](const std::vector<std::string>& values) {
            for (const auto& v : values)
              if (auto ok = set(v); !ok) throw CLI::ValidationError(flag, ok.error().message);
          },
          d.help);
    } else {
      option = command->add_option_function<std::string>(
          flag,
          [set, flag](const std::string& value) {
            if (auto ok = set(value); !ok) throw CLI::ValidationError(flag, ok.error().message);
          },
          d.help);
    }
    option->type_name(d.value_name);
    if (!d.default_text.empty()) option->default_str(d.default_text);
  }
}

void AddReportOutputOptions(CLI::App* command, ReportOutput& output) {
  command->add_option("-o,--output", output.path, "write the report to FILE (.gz compresses), atomically");
  command->add_option("-f,--format", output.format, "report format: " + RendererNames())->capture_default_str();
  command->add_option("--method-mapping", output.method_mapping, "Matrix methodMapping.txt naming method ids");
}

Result<void> CheckFormat(const std::string& format) {
  for (const auto& entry : RendererRegistry())
    if (entry.name == format) return {};
  return MakeError(fmt::format("unknown format '{}'", format), ExitCode::kUsage, "formats: " + RendererNames());
}

Result<size_t> ParseSize(std::string_view flag, std::string_view text, size_t min, size_t max) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view suffix(ptr, text.data() + text.size() - ptr);
  int shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (!suffix.empty()) ec = std::errc::invalid_argument;
  if (ec != std::errc() || ptr == text.data())
    return MakeError(fmt::format("{}: invalid size '{}'", flag, text), ExitCode::kUsage, "example: 16M");
  if (value > (max >> shift))
    return MakeError(fmt::format("{} {} is larger than the maximum of {}", flag, text, max), ExitCode::kUsage);
  value <<= shift;
  if (value < min || (value & (value - 1)))
    return MakeError(fmt::format("{} {} must be a power of two of at least {}", flag, text, min), ExitCode::kUsage,
                     fmt::format("example: {} 16M", flag));
  return static_cast<size_t>(value);
}

std::string Footer(std::string_view examples) {
  return fmt::format(R"(
EXAMPLES:
{}
TROUBLESHOOTING:
  "permission denied"    run as root (needs CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN)
  "symbol ... not found" check the profile's POINT with `looptrace probes`, or nm -D
  lost events            raise --ringbuf-size (see "data quality" in the report)
  -v / -vv               show what looptrace and libbpf are doing

EXIT CODES:
  0 ok, 1 runtime failure, 2 usage, 3 target (no such pid, exec failed),
  4 permission, 5 kernel lacks BPF/BTF/uprobes, 6 profile or symbol, 7 output, 130 interrupted
)",
                     examples);
}

}  // namespace looptrace::cli
