#include <fmt/format.h>

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <filesystem>

#include "loader/cli/cli.h"
#include "looptrace/report/render.h"
#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"
#include "looptrace/util/text_safety.h"

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
      command->add_flag_callback(
          flag, [set] { (void)set("true"); }, d.help);
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
  command->add_flag("--full", output.full,
                    "the whole text report (also -v): every evil method, tree node, thread dump and counter");
}

std::unique_ptr<Renderer> ReportRenderer(const AnalysisOptions& analysis, const ReportOutput& output) {
  RenderOptions render = analysis.Rendering();
  render.verbose = log::Enabled(log::Level::kV1);
  render.full = output.full || render.verbose;
  return MakeRenderer(output.format, render);
}

Result<void> CheckFormat(const std::string& format) {
  for (const auto& entry : RendererRegistry())
    if (entry.name == format) return {};
  return MakeError(fmt::format("unknown format '{}'", format), ExitCode::kUsage, "formats: " + RendererNames());
}

Result<std::unique_ptr<loader::MappingNamer>> LoadMethodMapping(const ReportOutput& output, AnalysisOptions& analysis) {
  if (output.method_mapping.empty()) return nullptr;
  ASSIGN_OR_RETURN(std::unique_ptr<loader::MappingNamer> namer, loader::MappingNamer::Load(output.method_mapping));
  analysis.namer = namer.get();
  return namer;
}

CLI::Validator FiniteNumber(double min, double max, std::string unit) {
  const std::string name = unit == "seconds" ? "SECONDS" : "NUMBER";
  return CLI::Validator(
      [min, max, unit](std::string& text) -> std::string {
        double value = 0;
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool number = ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(value);
        if (number && value >= min && value <= max) return {};
        return fmt::format("'{}' is {}: give {} from {} to {}", EscapeForTerminal(text, 40),
                           number ? "out of range" : "not a number", unit, min, max);
      },
      name);
}

Result<void> CheckNotSameFile(const std::string& report_path, const std::string& other, std::string_view other_flag) {
  if (report_path.empty() || other.empty() || report_path == "-" || other == "-") return {};
  std::error_code ec;
  const auto a = std::filesystem::absolute(report_path, ec).lexically_normal();
  const auto b = std::filesystem::absolute(other, ec).lexically_normal();
  struct stat sa {
  }, sb{};
  const bool same_file = stat(report_path.c_str(), &sa) == 0 && stat(other.c_str(), &sb) == 0 &&
                         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (a != b && !same_file) return {};
  return MakeError(fmt::format("-o {} and {} {} are the same file: the report would overwrite it",
                               EscapeForTerminal(report_path, kMaxQuotedBytes), other_flag,
                               EscapeForTerminal(other, kMaxQuotedBytes)),
                   ExitCode::kUsage, "give the report another name");
}

Result<size_t> ParseSize(std::string_view flag, std::string_view text, size_t min, size_t max) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view suffix(ptr, text.data() + text.size() - ptr);
  int shift = 0;
  if (suffix == "K" || suffix == "k")
    shift = 10;
  else if (suffix == "M" || suffix == "m")
    shift = 20;
  else if (suffix == "G" || suffix == "g")
    shift = 30;
  else if (!suffix.empty())
    ec = std::errc::invalid_argument;
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

namespace {

constexpr size_t kMaxRingbufBytes = size_t{1} << 30;  // the kernel takes up to ~4 GiB; memory says less
constexpr size_t kMaxBeatRecords = size_t{1} << 25;   // 1 GiB of 32-byte beats
constexpr size_t kMaxRecords = size_t{1} << 23;       // 832 MiB of 104-byte records
constexpr uint64_t kRingMemoryWarningBytes = uint64_t{1} << 30;

}  // namespace

void SessionFlags::WarnAboutRingMemory() const {
  // A BPF ring buffer's data is mapped twice into looptrace (so records never wrap) on top
  // of the kernel's locked pages: 1G rings are gigabytes of memory, said before they are made.
  const uint64_t rings = 2 * (uint64_t{session.ringbuf_bytes} + session.sample_ring_bytes);
  const uint64_t arrays = uint64_t{session.record_capacity} * 104 + uint64_t{session.beat_capacity} * 32;
  if (rings + arrays < kRingMemoryWarningBytes) return;
  log::Warning(
      "the BPF buffers will take about {} of memory (--ringbuf-size {} and --sample-ring {}, each mapped twice, "
      "--record-ring {}, --beat-buffer {}); lower them unless the host has it to spare",
      FormatBytes(rings + arrays), ringbuf_size, sample_ring, record_ring, beat_buffer);
}

void AddSessionOptions(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--profile", f.session.profile, "built-in profile name or profile file (default: detect)");
  cmd->add_option("--threads", f.threads,
                  "main: only the main thread; all: every thread; loop: the thread that runs the loop "
                  "(hits dispatch.begin first); loop:NAME or loop:PREFIX*: that thread by name "
                  "(default: the profile's choice, else main)")
      ->type_name("main|all|loop|loop:NAME");
  cmd->add_option("--record-ring", f.record_ring,
                  "record ring size in records (power of two; 104 bytes each): messages, frames, switches")
      ->capture_default_str();
  cmd->add_option("--ringbuf-size", f.ringbuf_size, "BPF ring buffer size for strings and names (power of two, 4K..1G)")
      ->capture_default_str();
  cmd->add_option("--beat-buffer", f.beat_buffer, "method-beat ring size in records (power of two; 32 bytes each)")
      ->capture_default_str();
  cmd->add_option("--btf", f.session.btf_path, "kernel BTF file when /sys/kernel/btf/vmlinux is missing");
  cmd->add_flag("--no-thread-tracking", f.no_thread_tracking,
                "no sched_switch/waking/SIGQUIT programs or cpu-clock samples (no ANR causes)");
  cmd->add_flag("--dwarf-unwind", f.session.dwarf_unwind,
                "unwind user stacks with DWARF CFI (targets without frame pointers): copies the watched "
                "thread's stack top at each sample and switch-out, and reads the stacks of the threads a "
                "stalled one waits for");
  cmd->add_flag("--fp-unwind", f.session.fp_unwind,
                "walk sampled user stacks by frame pointers only (the kernel's walk), not with the rows "
                "compiled from each module's .eh_frame (the default: whole stacks without frame pointers)");
  cmd->add_flag("--native-frames", f.session.native_frames,
                "interpreted frames (Python) inside the native stack, in place of the interpreter loop's "
                "frames, instead of alone over the C code the time is in");
  cmd->add_flag("--exact-entry", f.session.exact_entry,
                "probe every symbol at its first instruction, even where the kernel single-steps it "
                "(no move to the entry block, call sites or after calls)");
  cmd->add_option("--sample-rate", f.session.sample_hz,
                  "stack samples of each watched thread per second of its CPU time, for sampled call trees "
                  "of slow messages, frames and startups (0: none)")
      ->check(CLI::Range(0, 20000))
      ->capture_default_str();
  cmd->add_option("--cpu-budget", f.session.cpu_budget_percent,
                  "keep what the session costs as it runs (loader, BPF, probe traps) within PERCENT of one CPU "
                  "by lowering the sample rate while it is over; the report's cost block says for how long "
                  "(0: no budget)")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PERCENT")
      ->capture_default_str();
  cmd->add_option("--sample-ring", f.sample_ring, "BPF ring buffer size for stack samples (power of two)")
      ->capture_default_str();
  cmd->add_flag("--idle-stacks", f.session.idle_stacks,
                "take stacks at every switch-out and cpu-clock sample of the loop thread, also while no "
                "message is open (idle, or in its poll wait): only the session's folded stacks show those");
}

Result<void> SessionFlags::Resolve() {
  ASSIGN_OR_RETURN(session.ringbuf_bytes, ParseSize("--ringbuf-size", ringbuf_size, 4096, kMaxRingbufBytes));
  ASSIGN_OR_RETURN(session.record_capacity, ParseSize("--record-ring", record_ring, 1024, kMaxRecords));
  ASSIGN_OR_RETURN(session.beat_capacity, ParseSize("--beat-buffer", beat_buffer, 1024, kMaxBeatRecords));
  ASSIGN_OR_RETURN(session.sample_ring_bytes, ParseSize("--sample-ring", sample_ring, 4096, kMaxRingbufBytes));
  WarnAboutRingMemory();
  if (!threads.empty()) {
    auto choice = loader::ParseThreadChoice(threads);
    if (!choice) return MakeError("--threads: " + choice.error().message, ExitCode::kUsage, choice.error().hint);
    session.threads = *choice;
  }
  session.thread_tracking = !no_thread_tracking;
  return {};
}

namespace {

// Stars over the password parts of one --clickhouse URL; whether there was one.
bool HidePasswordsInUrl(char* url) {
  bool hid = false;
  std::string_view text(url);
  if (const size_t scheme = text.find("://"); scheme != std::string_view::npos) {
    const size_t start = scheme + 3;
    const size_t authority_end = std::min(text.find_first_of("/?", start), text.size());
    const std::string_view authority = text.substr(start, authority_end - start);
    if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
      if (const size_t colon = authority.find(':'); colon != std::string_view::npos && colon < at) {
        for (size_t i = start + colon + 1; i < start + at; ++i) url[i] = '*';
        hid = hid || at > colon + 1;
      }
    }
  }
  for (size_t key = text.find("password="); key != std::string_view::npos; key = text.find("password=", key + 1)) {
    if (key > 0 && text[key - 1] != '?' && text[key - 1] != '&') continue;
    const size_t end = std::min(text.find('&', key), text.size());
    for (size_t i = key + 9; i < end; ++i) url[i] = '*';
    hid = hid || end > key + 9;
  }
  return hid;
}

}  // namespace

bool HideSecretsInArguments(int argc, char** argv) {
  bool hid = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--clickhouse" && i + 1 < argc)
      hid = HidePasswordsInUrl(argv[++i]) || hid;
    else if (arg.starts_with("--clickhouse="))
      hid = HidePasswordsInUrl(argv[i] + 13) || hid;
  }
  return hid;
}

std::string Footer(std::string_view examples) {
  return fmt::format(R"(
EXAMPLES:
{}
TROUBLESHOOTING:
  "permission denied"    run as root (needs CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN); as root,
                         the target is in another container or namespace, or caps were dropped
  "symbol ... not found" check the profile's POINT with `looptrace probes`, or nm -D
  lost events            "data quality" in the report names the buffer to raise
                         (--record-ring, --ringbuf-size, --sample-ring, --beat-buffer)
  -v / -vv               show what looptrace and libbpf are doing

EXIT CODES:
  0 ok, 1 runtime failure, 2 usage, 3 target (no such pid, exec failed),
  4 permission, 5 kernel lacks BPF/BTF/uprobes, 6 profile or symbol, 7 output,
  8 background session (none for that pid, or one already), 9 endpoint (port in use), 130 interrupted
)",
                     examples);
}

}  // namespace looptrace::cli
