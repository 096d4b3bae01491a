// looptrace report RECORDING: re-analyse a saved event stream (no BPF, no root).
// looptrace report -p PID: the report so far of a background session (it goes on).
#include "loader/cli/cli.h"
#include "loader/decode/mapping_namer.h"
#include "loader/live/control_client.h"
#include "loader/session/output_file.h"
#include "loader/session/recording.h"
#include "looptrace/report/render.h"
#include "looptrace/util/log.h"

namespace looptrace::cli {
namespace {

class ReportCommand : public Command {
 public:
  std::string_view name() const override { return "report"; }

  void Setup(CLI::App* cmd) override {
    auto* recording = cmd->add_option("recording", recording_, "recording file (from --save)");
    cmd->add_option("-p,--pid", pid_, "instead: the report so far of the background session of PID")
        ->check(CLI::PositiveNumber)
        ->excludes(recording);
    AddReportOutputOptions(cmd, output_);
    AddAnalysisOptions(cmd, analysis_);
    cmd->footer(Footer(R"(  looptrace report rec.jsonl.gz --top 20       re-analyse a recording, no BPF needed
  looptrace report rec.jsonl.gz -f chrome -o trace.json
  looptrace report rec.jsonl.gz --anr-threshold 3000 --lag-threshold 1000
  looptrace report -p 1234                     a background session's report so far (it goes on)
  looptrace report -p 1234 -f html -o now.html
)") + R"(
  With -p the session's own options (thresholds, --top, mapping) apply: analysis options
  given here are ignored. The file is written by this command, not by the daemon.
)");
  }

  int Run(std::vector<std::string>) override {
    if (auto ok = CheckFormat(output_.format); !ok) return Fail(ok.error());
    if (pid_ > 0) return FromSession();
    if (recording_.empty())
      return Fail(Error{"report needs a RECORDING or -p PID",
                        "looptrace report rec.jsonl.gz, or looptrace report -p 1234", ExitCode::kUsage});
    if (auto ok = CheckNotSameFile(output_.path, recording_, "the recording"); !ok) return Fail(ok.error());
    auto namer = LoadMethodMapping(output_, analysis_);
    if (!namer) return Fail(namer.error());
    auto out = loader::OutputFile::Create(output_.path);
    if (!out) return Fail(out.error());
    Pipeline pipeline(analysis_);
    Stats replay_stats;
    if (auto ok = loader::ReplayRecording(recording_, pipeline, &replay_stats); !ok) return Fail(ok.error());
    if (replay_stats.AnyNonZero()) pipeline.OnEvent(LossCounters{replay_stats});
    RenderOptions render = analysis_.Rendering();
    render.verbose = log::Enabled(log::Level::kV1);
    MakeRenderer(output_.format, render)->Render(pipeline.TakeReport(), (*out)->stream());
    if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
    return 0;
  }

 private:
  int FromSession() {
    auto response = loader::CallSession(pid_, loader::ControlRequest{"report", output_.format});
    if (!response) return Fail(response.error());
    if (!response->ok) return Fail(Error{response->error, response->hint, static_cast<ExitCode>(response->code)});
    auto out = loader::OutputFile::Create(output_.path);
    if (!out) return Fail(out.error());
    (*out)->stream() << response->body;
    if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
    return 0;
  }

  pid_t pid_ = 0;
  std::string recording_;
  ReportOutput output_;
  AnalysisOptions analysis_;
};

}  // namespace

std::unique_ptr<Command> MakeReportCommand() { return std::make_unique<ReportCommand>(); }

}  // namespace looptrace::cli
