#include <fmt/format.h>

#include <charconv>

#include "loader/cli/cli.h"
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

}  // namespace

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
  cmd->add_flag("--native-frames", f.session.native_frames,
                "interpreted frames (Python) inside the native stack, in place of the interpreter loop's "
                "frames, instead of alone over the C code the time is in");
  cmd->add_flag("--exact-entry", f.session.exact_entry,
                "probe every symbol at its first instruction, even where the kernel single-steps it "
                "(no move to the entry block, call sites or after calls)");
  cmd->add_option("--sample-rate", f.session.sample_hz,
                  "stack samples of the main thread per second of its CPU time, for sampled call trees "
                  "of slow messages, frames and startups (0: none)")
      ->check(CLI::Range(0, 20000))
      ->capture_default_str();
  cmd->add_option("--sample-ring", f.sample_ring, "BPF ring buffer size for stack samples (power of two)")
      ->capture_default_str();
}

Result<void> SessionFlags::Resolve() {
  ASSIGN_OR_RETURN(session.ringbuf_bytes, ParseSize("--ringbuf-size", ringbuf_size, 4096, kMaxRingbufBytes));
  ASSIGN_OR_RETURN(session.record_capacity, ParseSize("--record-ring", record_ring, 1024, kMaxRecords));
  ASSIGN_OR_RETURN(session.beat_capacity, ParseSize("--beat-buffer", beat_buffer, 1024, kMaxBeatRecords));
  ASSIGN_OR_RETURN(session.sample_ring_bytes, ParseSize("--sample-ring", sample_ring, 4096, kMaxRingbufBytes));
  if (!threads.empty()) {
    auto choice = loader::ParseThreadChoice(threads);
    if (!choice) return MakeError("--threads: " + choice.error().message, ExitCode::kUsage, choice.error().hint);
    session.threads = *choice;
  }
  session.thread_tracking = !no_thread_tracking;
  return {};
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
