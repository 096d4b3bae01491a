// looptrace record -p PID / looptrace run [options] COMMAND [ARGS...]: trace, then report.
#include <fmt/format.h>

#include "cli.h"
#include "looptrace/loader/mapping_namer.h"
#include "looptrace/loader/output_file.h"
#include "looptrace/loader/recording.h"
#include "looptrace/loader/trace.h"
#include "looptrace/tracers/render.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

constexpr size_t kMaxRingbufBytes = size_t{1} << 30;  // the kernel takes up to ~4 GiB; memory says less
constexpr size_t kMaxBeatRecords = size_t{1} << 25;   // 1 GiB of 32-byte beats
constexpr size_t kMaxRecords = size_t{1} << 23;       // 832 MiB of 104-byte records

constexpr const char* kRecordExamples = R"(  looptrace record -p 1234                    trace pid 1234 until Ctrl-C, text report
  looptrace record -p 1234 -d 10 -f json -o msgs.json.gz
  looptrace record -p 1234 --save rec.jsonl.gz   also keep the event stream
  looptrace record -p 1234 --evil-threshold 300 --method-mapping methodMapping.txt
)";
constexpr const char* kRunExamples = R"(  looptrace run ./build/looptrace-sample-app --scenario messages
  looptrace run -f json -o out.json -- ./app --flag     "--" is optional
  looptrace run --profile glib -d 5 gnome-calculator
)";

class TraceCommand : public Command {
 public:
  explicit TraceCommand(bool run) : run_(run) {}
  std::string_view name() const override { return run_ ? "run" : "record"; }
  bool TakesCommand() const override { return run_; }

  void Setup(CLI::App* cmd) override {
    if (!run_)
      cmd->add_option("-p,--pid", pid_, "process to trace")->required()->check(CLI::PositiveNumber);
    cmd->add_option("--profile", session_.profile, "built-in profile name or profile file (default: detect)");
    cmd->add_option("-d,--duration", session_.duration_s, "stop after S seconds")->check(CLI::PositiveNumber);
    cmd->add_option("--threads", threads_,
                    "main: only the main thread; all: every thread; loop: the thread that runs the loop "
                    "(hits dispatch.begin first); loop:NAME or loop:PREFIX*: that thread by name "
                    "(default: the profile's choice, else main)")
        ->type_name("main|all|loop|loop:NAME");
    cmd->add_option("--save", save_, "also save the decoded event stream (JSON lines, .gz ok)");
    cmd->add_option("--record-ring", record_ring_,
                    "record ring size in records (power of two; 104 bytes each): messages, frames, switches")
        ->capture_default_str();
    cmd->add_option("--ringbuf-size", ringbuf_size_, "BPF ring buffer size for strings and names (power of two, 4K..1G)")
        ->capture_default_str();
    cmd->add_option("--beat-buffer", beat_buffer_, "method-beat ring size in records (power of two; 32 bytes each)")
        ->capture_default_str();
    cmd->add_option("--btf", session_.btf_path, "kernel BTF file when /sys/kernel/btf/vmlinux is missing");
    cmd->add_flag("--no-thread-tracking", no_thread_tracking_,
                  "no sched_switch/waking/SIGQUIT programs or cpu-clock samples (no ANR causes)");
    cmd->add_flag("--dwarf-unwind", session_.dwarf_unwind,
                  "unwind user stacks with DWARF CFI (targets without frame pointers): copies the watched "
                  "thread's stack top at each sample and switch-out, and reads the stacks of the threads a "
                  "stalled one waits for");
    cmd->add_flag("--exact-entry", session_.exact_entry,
                  "probe every symbol at its first instruction, even where the kernel single-steps it "
                  "(no move to the entry block, call sites or after calls)");
    cmd->add_option("--sample-rate", session_.sample_hz,
                    "stack samples of the main thread per second of its CPU time, for sampled call trees "
                    "of slow messages, frames and startups (0: none)")
        ->check(CLI::Range(0, 20000))
        ->capture_default_str();
    cmd->add_option("--sample-ring", sample_ring_, "BPF ring buffer size for stack samples (power of two)")
        ->capture_default_str();
    AddReportOutputOptions(cmd, output_);
    AddAnalysisOptions(cmd, analysis_);
    cmd->footer(Footer(run_ ? kRunExamples : kRecordExamples));
  }

  int Run(std::vector<std::string> command) override {
    if (run_ && command.empty()) return Fail(Error{"run needs a command", "looptrace run ./app --flag", ExitCode::kUsage});
    if (auto ok = CheckFormat(output_.format); !ok) return Fail(ok.error());
    auto ring = ParseSize("--ringbuf-size", ringbuf_size_, 4096, kMaxRingbufBytes);
    if (!ring) return Fail(ring.error());
    session_.ringbuf_bytes = *ring;
    auto records = ParseSize("--record-ring", record_ring_, 1024, kMaxRecords);
    if (!records) return Fail(records.error());
    session_.record_capacity = *records;
    auto beats = ParseSize("--beat-buffer", beat_buffer_, 1024, kMaxBeatRecords);
    if (!beats) return Fail(beats.error());
    session_.beat_capacity = *beats;
    if (!threads_.empty()) {
      auto threads = loader::ParseThreadChoice(threads_);
      if (!threads) return Fail(Error{"--threads: " + threads.error().message, threads.error().hint, ExitCode::kUsage});
      session_.threads = *threads;
    }
    auto sample_ring = ParseSize("--sample-ring", sample_ring_, 4096, kMaxRingbufBytes);
    if (!sample_ring) return Fail(sample_ring.error());
    session_.sample_ring_bytes = *sample_ring;
    session_.thread_tracking = !no_thread_tracking_;

    // Inputs are read and outputs opened before anything is attached: a bad path fails
    // before the target is touched.
    std::unique_ptr<loader::MappingNamer> namer;
    if (!output_.method_mapping.empty()) {
      auto loaded = loader::MappingNamer::Load(output_.method_mapping);
      if (!loaded) return Fail(loaded.error());
      namer = std::move(*loaded);
      analysis_.namer = namer.get();
    }
    auto out = loader::OutputFile::Create(output_.path);
    if (!out) return Fail(out.error());
    std::unique_ptr<loader::RecordingWriter> recording;
    if (!save_.empty()) {
      auto writer = loader::RecordingWriter::Create(save_);
      if (!writer) return Fail(writer.error());
      recording = std::move(*writer);
    }
    auto signal_fd = loader::BlockTerminationSignals();
    if (!signal_fd) return Fail(signal_fd.error());

    Pipeline pipeline(analysis_);
    if (recording) pipeline.AddObserver(recording.get());
    Result<void> traced;
    if (run_) {
      auto result = loader::RunCommand(command, session_, signal_fd->get(), pipeline);
      traced = result ? Result<void>{} : std::unexpected(result.error());
    } else {
      traced = loader::RecordProcess(pid_, session_, signal_fd->get(), pipeline);
    }
    if (!traced) return Fail(traced.error());

    // Each output is written even when the other fails.
    int status = 0;
    if (recording) {
      if (auto ok = recording->Commit(); !ok) status = Fail(ok.error());
    }
    RenderOptions render;
    render.top_n = analysis_.common.top_n;
    render.verbose = log::Enabled(log::Level::kV1);
    Report report = pipeline.TakeReport();
    MakeRenderer(output_.format, render)->Render(report, (*out)->stream());
    if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
    if (!output_.path.empty()) log::Info("report written to {}", output_.path);
    return status;
  }

 private:
  bool run_;
  pid_t pid_ = 0;
  loader::SessionOptions session_;
  std::string threads_;  // "" = the profile's choice
  std::string ringbuf_size_ = "4M";
  std::string record_ring_ = "65536";
  std::string beat_buffer_ = "1048576";
  std::string sample_ring_ = "8M";
  bool no_thread_tracking_ = false;
  std::string save_;
  ReportOutput output_;
  AnalysisOptions analysis_;
};

}  // namespace

std::unique_ptr<Command> MakeRecordCommand() { return std::make_unique<TraceCommand>(false); }
std::unique_ptr<Command> MakeRunCommand() { return std::make_unique<TraceCommand>(true); }

}  // namespace looptrace::cli
