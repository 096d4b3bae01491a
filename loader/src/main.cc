// looptrace: external main-thread profiler. Commands dispatch from the table below;
// errors become exit codes here and nowhere else.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/live_session.h"
#include "looptrace/loader/mapping_namer.h"
#include "looptrace/loader/output_file.h"
#include "looptrace/loader/profile.h"
#include "looptrace/loader/recording.h"
#include "looptrace/symbols/method_mapping.h"
#include "looptrace/symbols/probe_cost.h"
#include "looptrace/tracers/analyzer.h"
#include "looptrace/tracers/render.h"
#include "looptrace/util/log.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

using loader::SessionOptions;

struct ReportOptions {
  std::string output;  // -o FILE, "" = stdout
  std::string format = "text";
  size_t top_n = 10;
  double evil_threshold_ms = 700;  // Matrix's DEFAULT_EVIL_METHOD_THRESHOLD_MS
  size_t max_nodes = 30;           // Matrix's TARGET_EVIL_METHOD_STACK
  bool matrix_compat = false;
  std::string method_mapping;
  std::string anr_threshold = "5000";  // MS or a preset: input, broadcast, service
  double lag_threshold_ms = 2000;      // Matrix DEFAULT_NORMAL_LAG
  double idle_lag_threshold_ms = 2000;
  double input_lag_threshold_ms = 2000;
  double barrier_threshold_ms = 2000;
  double startup_threshold_ms = 10000;       // Matrix cold threshold
  double warm_startup_threshold_ms = 4000;   // Matrix warm threshold
  std::vector<std::string> splash;           // Matrix splashActivities
  double jank_tree_threshold_ms = 700;       // janky frames this long keep their call tree
  double refresh_rate = 0;                   // 0 = measure from vsync
};

// Android's ANR timeouts by name (AOSP defaults), or a number of milliseconds.
Result<uint64_t> ParseAnrThreshold(const std::string& text) {
  static const std::pair<const char*, uint64_t> kPresets[] = {
      {"input", 5000}, {"broadcast", 10000}, {"broadcast-bg", 60000}, {"service", 20000},
      {"service-bg", 200000}, {"bind-application", 15000}, {"job", 8000}};
  for (auto [name, ms] : kPresets)
    if (text == name) return ms * 1'000'000;
  try {
    size_t used = 0;
    double ms = std::stod(text, &used);
    if (used == text.size() && ms > 0) return static_cast<uint64_t>(ms * 1e6);
  } catch (...) {
  }
  return MakeError(fmt::format("invalid --anr-threshold '{}'", text), ExitCode::kUsage,
                   "milliseconds, or one of input (5 s), broadcast (10 s), broadcast-bg (60 s), "
                   "service (20 s), service-bg (200 s), bind-application (15 s), job (8 s)");
}

// Analysis options shared by record, run and report; loads the method mapping.
Result<AnalysisOptions> MakeAnalysisOptions(const ReportOptions& options,
                                            std::unique_ptr<MethodNamer>* namer) {
  AnalysisOptions analysis;
  analysis.looper.top_n = options.top_n;
  analysis.evil.threshold_ns = static_cast<uint64_t>(options.evil_threshold_ms * 1e6);
  analysis.evil.max_nodes = options.max_nodes;
  analysis.evil.matrix_compat = options.matrix_compat;
  ASSIGN_OR_RETURN(analysis.anr.anr_threshold_ns, ParseAnrThreshold(options.anr_threshold));
  analysis.anr.lag_threshold_ns = static_cast<uint64_t>(options.lag_threshold_ms * 1e6);
  analysis.anr.idle_lag_threshold_ns = static_cast<uint64_t>(options.idle_lag_threshold_ms * 1e6);
  analysis.anr.input_lag_threshold_ns = static_cast<uint64_t>(options.input_lag_threshold_ms * 1e6);
  analysis.anr.barrier_threshold_ns = static_cast<uint64_t>(options.barrier_threshold_ms * 1e6);
  analysis.anr.max_nodes = options.max_nodes;
  analysis.startup.cold_threshold_ns = static_cast<uint64_t>(options.startup_threshold_ms * 1e6);
  analysis.startup.warm_threshold_ns = static_cast<uint64_t>(options.warm_startup_threshold_ms * 1e6);
  analysis.startup.splash = options.splash;
  analysis.startup.max_nodes = options.max_nodes;
  analysis.frames.jank_tree_threshold_ns = static_cast<uint64_t>(options.jank_tree_threshold_ms * 1e6);
  analysis.frames.refresh_hz = options.refresh_rate;
  analysis.frames.max_nodes = options.max_nodes;
  analysis.frames.worst_n = options.top_n;
  if (!options.method_mapping.empty()) {
    ASSIGN_OR_RETURN(*namer, loader::MappingNamer::Load(options.method_mapping));
    analysis.namer = namer->get();
  }
  return analysis;
}

struct Options {
  int verbose = 0;
  bool quiet = false;
  pid_t pid = 0;
  SessionOptions session;
  std::string threads = "main";
  std::string ringbuf_size = "8M";
  size_t beat_buffer = 1u << 20;
  bool no_thread_tracking = false;
  bool dwarf_unwind = false;
  std::string save;
  std::vector<std::string> command;
  std::string recording;
  ReportOptions report;
};

// Fans one event stream out to several sinks (tracers, recording writer).
class TeeSink : public EventSink {
 public:
  void Add(EventSink* sink) { sinks_.push_back(sink); }
  void OnEvent(const Event& event) override {
    for (auto* sink : sinks_) sink->OnEvent(event);
  }

 private:
  std::vector<EventSink*> sinks_;
};

int Fail(const Error& error) {
  log::Error("{}", error.message);
  log::Hint(error.hint);
  return static_cast<int>(error.code);
}

Result<size_t> ParseSize(const std::string& text) {
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (...) {
    return MakeError(fmt::format("invalid size '{}'", text), ExitCode::kUsage, "example: 16M");
  }
  std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k") value <<= 10;
  else if (suffix == "M" || suffix == "m") value <<= 20;
  else if (suffix == "G" || suffix == "g") value <<= 30;
  else if (!suffix.empty())
    return MakeError(fmt::format("invalid size '{}'", text), ExitCode::kUsage, "example: 16M");
  if (value < 4096 || (value & (value - 1)))
    return MakeError(fmt::format("ring buffer size {} must be a power of two of at least 4K", text),
                     ExitCode::kUsage, "example: --ringbuf-size 16M");
  return static_cast<size_t>(value);
}

Result<OutputFormat> ParseFormat(const std::string& name) {
  auto format = OutputFormatFromName(name);
  if (!format)
    return MakeError(fmt::format("unknown format '{}'", name), ExitCode::kUsage,
                     "formats: text, json, chrome");
  return *format;
}

Result<void> RenderReport(Report report, OutputFormat format, const ReportOptions& options,
                          loader::OutputFile& out) {
  RenderOptions render;
  render.top_n = options.top_n;
  MakeRenderer(format, render)->Render(report, out.stream());
  return out.Commit();
}

// record and run share everything but how the target comes to life.
int TraceCommand(Options& opt, bool run) {
  auto format = ParseFormat(opt.report.format);
  if (!format) return Fail(format.error());
  auto ring = ParseSize(opt.ringbuf_size);
  if (!ring) return Fail(ring.error());
  opt.session.ringbuf_bytes = *ring;
  opt.session.all_threads = opt.threads == "all";
  if (opt.beat_buffer < 1024 || (opt.beat_buffer & (opt.beat_buffer - 1)))
    return Fail(Error{fmt::format("--beat-buffer {} must be a power of two of at least 1024",
                                  opt.beat_buffer),
                      "example: --beat-buffer 4194304", ExitCode::kUsage});
  opt.session.beat_capacity = opt.beat_buffer;
  // Beats are copied for messages an EvilMethod or janky-frame report may need.
  opt.session.beat_min_cost_ns =
      static_cast<uint64_t>(std::min(opt.report.evil_threshold_ms, opt.report.jank_tree_threshold_ms) * 1e6);
  std::unique_ptr<MethodNamer> namer;
  auto analysis = MakeAnalysisOptions(opt.report, &namer);
  if (!analysis) return Fail(analysis.error());
  opt.session.anr_threshold_ns = analysis->anr.anr_threshold_ns;
  opt.session.lag_threshold_ns = analysis->anr.lag_threshold_ns;
  opt.session.thread_tracking = !opt.no_thread_tracking;
  opt.session.dwarf_unwind = opt.dwarf_unwind;
  opt.session.cold_startup_beats_ns = analysis->startup.cold_threshold_ns;
  opt.session.warm_startup_beats_ns = analysis->startup.warm_threshold_ns;

  // Outputs are opened first: an unwritable path fails before anything is attached.
  auto out = loader::OutputFile::Create(opt.report.output);
  if (!out) return Fail(out.error());
  std::unique_ptr<loader::RecordingWriter> recording;
  if (!opt.save.empty()) {
    auto writer = loader::RecordingWriter::Create(opt.save);
    if (!writer) return Fail(writer.error());
    recording = std::move(*writer);
  }
  auto signal_fd = loader::BlockTerminationSignals();
  if (!signal_fd) return Fail(signal_fd.error());

  Analyzer analyzer(*analysis);
  TeeSink tee;
  tee.Add(&analyzer);
  if (recording) tee.Add(recording.get());

  Result<void> traced;
  if (run) {
    auto result = loader::RunCommand(opt.command, opt.session, *signal_fd, tee);
    traced = result ? Result<void>{} : std::unexpected(result.error());
  } else {
    traced = loader::RecordProcess(opt.pid, opt.session, *signal_fd, tee);
  }
  if (!traced) return Fail(traced.error());
  if (recording) {
    if (auto ok = recording->Commit(); !ok) return Fail(ok.error());
  }
  if (auto ok = RenderReport(analyzer.TakeReport(), *format, opt.report, **out); !ok)
    return Fail(ok.error());
  if (!opt.report.output.empty()) log::Info("report written to {}", opt.report.output);
  return 0;
}

int ReportCommand(Options& opt) {
  auto format = ParseFormat(opt.report.format);
  if (!format) return Fail(format.error());
  std::unique_ptr<MethodNamer> namer;
  auto analysis = MakeAnalysisOptions(opt.report, &namer);
  if (!analysis) return Fail(analysis.error());
  auto out = loader::OutputFile::Create(opt.report.output);
  if (!out) return Fail(out.error());
  Analyzer analyzer(*analysis);
  Stats replay_stats;
  if (auto ok = loader::ReplayRecording(opt.recording, analyzer, &replay_stats); !ok)
    return Fail(ok.error());
  if (replay_stats.AnyNonZero()) analyzer.OnEvent(LossCounters{replay_stats});
  if (auto ok = RenderReport(analyzer.TakeReport(), *format, opt.report, **out); !ok)
    return Fail(ok.error());
  return 0;
}

int ProbesCommand(Options& opt) {
  loader::TargetBinaries target;
  if (opt.pid > 0) {
    target.pid = opt.pid;
    std::string link = fmt::format("/proc/{}/exe", opt.pid);
    char buf[4096];
    ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
    if (n < 0)
      return Fail(Error{fmt::format("no process with pid {}", opt.pid), "", ExitCode::kTarget});
    target.exe_path = std::string(buf, n);
    if (target.exe_path.ends_with(" (deleted)")) target.exe_path = link;
  } else if (!opt.command.empty()) {
    target.exe_path = opt.command.front();
  } else {
    return Fail(Error{"probes needs -p PID or --exe PATH", "example: looptrace probes -p 1234",
                      ExitCode::kUsage});
  }
  auto chosen = loader::ChooseProfile(opt.session.profile, target);
  if (!chosen) return Fail(chosen.error());
  const auto& [profile, plan] = *chosen;
  std::cout << fmt::format("profile {} ({})\n", EscapeForTerminal(profile.name), EscapeForTerminal(profile.source));
  std::cout << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>10}  {:<12} {}\n", "id", "role", "kind",
                           "point", "offset", "cost", "binary");
  size_t slow = 0;
  for (const auto& p : plan.probes) {
    std::string cost = std::string(symbols::ProbeCostName(p.instruction.cost));
    if (!p.instruction.mnemonic.empty()) cost += " (" + p.instruction.mnemonic + ")";
    if (p.instruction.cost == symbols::ProbeCost::kSingleStep) ++slow;
    std::string point = p.symbol;
    if (p.usdt_sites > 1) point += fmt::format(" [{} sites]", p.usdt_sites);
    // Symbols and paths come from the target's files: escaped for the terminal.
    std::cout << fmt::format("{:>3}  {:<15} {:<9} {:<40} {:>#10x}  {:<12} {}\n", p.probe_id,
                             RoleName(p.spec.role), loader::ProbeKindName(p.spec.kind), EscapeForTerminal(point),
                             p.file_offset, EscapeForTerminal(cost), EscapeForTerminal(p.binary_path));
  }
  if (slow)
    log::Warning("{} probe point{} start with an instruction the kernel single-steps (~15x slower "
                 "per hit than an emulated nop/push); prefer a nop5-padded or frame-pointer entry",
                 slow, slow == 1 ? "" : "s");
  return 0;
}

int ProfilesCommand() {
  for (const auto& builtin : loader::BuiltinProfiles()) {
    auto profile = loader::ParseProfile(builtin.text, builtin.name);
    std::cout << fmt::format("{:<14} {}\n", builtin.name,
                             profile ? profile->description : "(invalid: " + profile.error().message + ")");
  }
  return 0;
}

constexpr const char* kExamples = R"(
EXAMPLES:
  looptrace record -p 1234                    trace pid 1234 until Ctrl-C, text report
  looptrace record -p 1234 -d 10 -f json -o msgs.json.gz
  looptrace record -p 1234 --save rec.jsonl.gz   also keep the event stream
  looptrace record -p 1234 --evil-threshold 300 --method-mapping methodMapping.txt
  looptrace run -- ./build/looptrace-sample-app --scenario messages
  looptrace report rec.jsonl.gz --top 20       re-analyse a recording, no BPF needed
  looptrace probes -p 1234 --profile my.profile   resolve probe points, attach nothing
  looptrace profiles                           list built-in profiles

TROUBLESHOOTING:
  "permission denied"    run as root (needs CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN)
  "symbol ... not found" check the profile's POINT with `looptrace probes`, or nm -D
  lost events            raise --ringbuf-size (see "data quality" in the report)
  -v / -vv               show what looptrace and libbpf are doing

EXIT CODES:
  0 ok, 1 runtime failure, 2 usage, 3 target (no such pid, exec failed),
  4 permission, 5 kernel lacks BPF/BTF/uprobes, 6 profile or symbol, 7 output, 130 interrupted
)";

void AddReportOptions(CLI::App* cmd, Options& opt) {
  cmd->add_option("-o,--output", opt.report.output, "write the report to FILE (.gz compresses)");
  cmd->add_option("-f,--format", opt.report.format,
                  "text, json (JSON lines) or chrome (trace for Perfetto UI / chrome://tracing)")
      ->capture_default_str();
  cmd->add_option("--top", opt.report.top_n, "rows in the slowest-message tables")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--evil-threshold", opt.report.evil_threshold_ms,
                  "report messages costing at least MS with their call tree (EvilMethod)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-nodes", opt.report.max_nodes, "call-tree node limit (Matrix's trim rule)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_flag("--matrix-compat", opt.report.matrix_compat,
                "reproduce Matrix's stack algorithm exactly (ms clock, its quirks)");
  cmd->add_option("--method-mapping", opt.report.method_mapping,
                  "Matrix methodMapping.txt naming method ids");
  cmd->add_option("--anr-threshold", opt.report.anr_threshold,
                  "ANR snapshot when a message runs this long: MS or input|broadcast|service")
      ->capture_default_str();
  cmd->add_option("--lag-threshold", opt.report.lag_threshold_ms, "LAG snapshot (Matrix's 2 s)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--idle-lag-threshold", opt.report.idle_lag_threshold_ms, "slow IdleHandler (MS)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--input-lag-threshold", opt.report.input_lag_threshold_ms,
                  "input event received -> finished (MS)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--startup-threshold", opt.report.startup_threshold_ms,
                  "cold startups this long get a call tree (Matrix: 10000)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warm-startup-threshold", opt.report.warm_startup_threshold_ms,
                  "warm startups this long get a call tree (Matrix: 4000)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--jank-tree-threshold", opt.report.jank_tree_threshold_ms,
                  "janky frames at least MS long keep their message's call tree")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--refresh-rate", opt.report.refresh_rate, "display refresh rate in Hz (default: measured from vsync)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--splash", opt.report.splash, "splash activities: the cold start ends at the next one")
      ->delimiter(',');
  cmd->add_option("--barrier-threshold", opt.report.barrier_threshold_ms,
                  "sync barrier standing while sync messages wait (MS)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void AddSessionOptions(CLI::App* cmd, Options& opt) {
  cmd->add_option("--profile", opt.session.profile,
                  "built-in profile name or profile file (default: detect)");
  cmd->add_option("-d,--duration", opt.session.duration_s, "stop after S seconds")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", opt.threads, "main: only the main thread; all: every thread")
      ->check(CLI::IsMember({"main", "all"}))
      ->capture_default_str();
  cmd->add_option("--save", opt.save, "also save the decoded event stream (JSON lines, .gz ok)");
  cmd->add_option("--ringbuf-size", opt.ringbuf_size, "BPF ring buffer size (power of two)")
      ->capture_default_str();
  cmd->add_option("--btf", opt.session.btf_path, "kernel BTF file when /sys/kernel/btf/vmlinux is missing");
  cmd->add_flag("--no-thread-tracking", opt.no_thread_tracking,
                "no sched_switch/wakeup/SIGQUIT programs or cpu-clock samples (no ANR causes)");
  cmd->add_flag("--dwarf-unwind", opt.dwarf_unwind,
                "unwind the main thread's user stack with DWARF CFI (targets without frame pointers); "
                "copies 16 KiB of stack at each of its switch-outs");
  cmd->add_option("--beat-buffer", opt.beat_buffer,
                  "method-beat ring size in records (power of two; 32 bytes each)")
      ->capture_default_str();
  AddReportOptions(cmd, opt);
}

}  // namespace
}  // namespace looptrace

int main(int argc, char** argv) {
  using namespace looptrace;
  Options opt;
  CLI::App app{"looptrace: external main-thread profiler (eBPF uprobes/USDT) for event loops"};
  app.set_version_flag("--version", LOOPTRACE_VERSION);
  app.footer(kExamples);
  app.require_subcommand(1);
  app.add_flag("-v,--verbose", opt.verbose, "more diagnostics on stderr (-vv: libbpf debug)");
  app.add_flag("-q,--quiet", opt.quiet, "only errors and warnings on stderr");

  auto* record = app.add_subcommand("record", "attach to a running process and report its messages");
  record->add_option("-p,--pid", opt.pid, "process to trace")->required()->check(CLI::PositiveNumber);
  AddSessionOptions(record, opt);
  record->footer(kExamples);

  auto* run = app.add_subcommand("run", "start COMMAND with probes attached before it runs");
  AddSessionOptions(run, opt);
  run->add_option("command", opt.command, "command and arguments (after --)");
  run->prefix_command();
  run->footer(kExamples);

  auto* report = app.add_subcommand("report", "re-analyse a recording saved with --save");
  report->add_option("recording", opt.recording, "recording file")->required();
  AddReportOptions(report, opt);

  auto* probes = app.add_subcommand("probes", "resolve and list probe points without attaching");
  auto* pid_opt = probes->add_option("-p,--pid", opt.pid, "process whose binaries to resolve")
                      ->check(CLI::PositiveNumber);
  probes->add_option("--exe", opt.command, "resolve against this executable instead of a pid")
      ->excludes(pid_opt);
  probes->add_option("--profile", opt.session.profile, "built-in profile name or profile file");

  app.add_subcommand("profiles", "list built-in profiles");

  // `run [options] -- CMD ARGS`: everything after the first "--" is the command, verbatim.
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> after_dashes;
  if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
    after_dashes.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  if (!args.empty() && !args.front().starts_with("-")) {
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known |= sub->check_name(args.front());
    if (!known) {
      fmt::print(stderr, "looptrace: usage: unknown command '{}'\n", args.front());
      fmt::print(stderr, "hint: commands are record, run, report, probes, profiles\n");
      return static_cast<int>(ExitCode::kUsage);
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    fmt::print(stderr, "looptrace: usage: {}\n", message);
    fmt::print(stderr, "hint: looptrace --help, or looptrace COMMAND --help\n");
    return static_cast<int>(ExitCode::kUsage);
  }
  if (opt.quiet) log::Verbosity() = log::Level::kWarning;
  if (opt.verbose == 1) log::Verbosity() = log::Level::kV1;
  if (opt.verbose >= 2) log::Verbosity() = log::Level::kV2;

  if (run->parsed()) {
    // Without "--", everything after the command's first word belongs to the command.
    for (auto& extra : run->remaining()) opt.command.push_back(extra);
    for (auto& arg : after_dashes) opt.command.push_back(arg);
    if (opt.command.empty()) {
      fmt::print(stderr, "looptrace: usage: run needs a command\nhint: looptrace run -- ./app --flag\n");
      return static_cast<int>(ExitCode::kUsage);
    }
    return TraceCommand(opt, /*run=*/true);
  }
  if (!after_dashes.empty()) {
    fmt::print(stderr, "looptrace: usage: unexpected arguments after --\n");
    return static_cast<int>(ExitCode::kUsage);
  }
  if (record->parsed()) return TraceCommand(opt, /*run=*/false);
  if (report->parsed()) return ReportCommand(opt);
  if (probes->parsed()) return ProbesCommand(opt);
  return ProfilesCommand();
}
