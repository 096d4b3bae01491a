// looptrace report RECORDING: re-analyse a saved event stream (no BPF, no root).
// looptrace report ISSUES...: issues the Matrix SDK reported on phones, named and grouped.
// looptrace report -p PID: the report so far of a background session (it goes on).
#include "loader/cli/cli.h"
#include "loader/decode/mapping_namer.h"
#include "loader/export/matrix_ingest.h"
#include "loader/live/control_client.h"
#include "loader/session/matrix_input.h"
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
    auto* recording = cmd->add_option(
        "inputs", inputs_,
        "a recording (from --save), or Matrix issues: JSON (one a line or an array), logcat, - for stdin");
    cmd->add_option("-p,--pid", pid_, "instead: the report so far of the background session of PID")
        ->check(CLI::PositiveNumber)
        ->excludes(recording);
    AddReportOutputOptions(cmd, output_);
    cmd->add_option("--proguard-mapping", proguard_mapping_,
                    "ProGuard/R8 mapping.txt de-obfuscating Matrix issues' thread stacks");
    cmd->add_option("--keep-issues", keep_issues_, "Matrix issues listed one by one (all are grouped)")
        ->capture_default_str();
    cmd->add_option("--clickhouse", clickhouse_,
                    "also write the Matrix issues into looptrace's ClickHouse tables at URL (idempotent; "
                    "password: CLICKHOUSE_PASSWORD)");
    AddAnalysisOptions(cmd, analysis_);
    cmd->footer(Footer(R"(  looptrace report rec.jsonl.gz --top 20       re-analyse a recording, no BPF needed
  looptrace report rec.jsonl.gz -f chrome -o trace.json
  looptrace report rec.jsonl.gz --anr-threshold 3000 --lag-threshold 1000
  looptrace report -p 1234                     a background session's report so far (it goes on)
  looptrace report -p 1234 -f html -o now.html
  looptrace report issues.jsonl logcat.txt --method-mapping methodMapping.txt
                                               Matrix issues from phones, named and grouped
  adb logcat -d | looptrace report - --method-mapping methodMapping.txt -f json
)") + R"(
  With -p the session's own options (thresholds, --top, mapping) apply: analysis options
  given here are ignored. The file is written by this command, not by the daemon.
)");
  }

  int Run(std::vector<std::string>) override {
    if (auto ok = CheckFormat(output_.format); !ok) return Fail(ok.error());
    if (pid_ > 0) return FromSession();
    if (inputs_.empty())
      return Fail(Error{"report needs a RECORDING, Matrix ISSUES or -p PID",
                        "looptrace report rec.jsonl.gz, looptrace report issues.jsonl, or looptrace report -p 1234",
                        ExitCode::kUsage});
    for (const std::string& input : inputs_)
      if (auto ok = CheckNotSameFile(output_.path, input, "the recording or issues file"); !ok) return Fail(ok.error());
    auto namer = LoadMethodMapping(output_, analysis_);
    if (!namer) return Fail(namer.error());
    MatrixFleetBuilder fleet(keep_issues_);
    std::unique_ptr<symbols::ProguardMapping> proguard;
    if (!proguard_mapping_.empty()) {
      std::vector<std::string> warnings;
      auto loaded = symbols::ProguardMapping::Load(proguard_mapping_, &warnings);
      if (!loaded) return Fail(loaded.error());
      for (size_t i = 0; i < warnings.size() && i < 5; ++i) log::Warning("{}", warnings[i]);
      proguard = std::make_unique<symbols::ProguardMapping>(std::move(*loaded));
    }
    const loader::MatrixNaming naming{namer->get(), proguard.get()};
    std::unique_ptr<loader::MatrixClickHouseWriter> clickhouse;
    std::optional<Error> clickhouse_error;
    if (!clickhouse_.empty()) {
      auto options = loader::ParseClickHouseUrl(clickhouse_);
      if (!options) return Fail(options.error());
      if (const char* password = std::getenv("CLICKHOUSE_PASSWORD"); password && options->password.empty())
        options->password = password;
      clickhouse = std::make_unique<loader::MatrixClickHouseWriter>(*options);
      fleet.set_on_issue([&](const MatrixIssue& issue) {
        if (auto added = clickhouse->Add(issue); !added && !clickhouse_error) clickhouse_error = added.error();
      });
    }
    for (const std::string& input : inputs_) {
      auto read = loader::ReadMatrixInput(input, naming, fleet);
      if (!read) return Fail(read.error());
      if (read->kind == loader::InputKind::kRecording) {
        if (inputs_.size() > 1 || input == "-")
          return Fail(Error{fmt::format("{}: a looptrace recording is reported alone, from its file", input),
                            "looptrace report rec.jsonl.gz", ExitCode::kUsage});
        return FromRecording(input);
      }
      if (read->items == 0 && read->kind != loader::InputKind::kMatrixJson)
        return Fail(Error{fmt::format("{}: not a looptrace recording, nor Matrix issues (JSON) or Matrix logcat lines",
                                      input == "-" ? "<stdin>" : input),
                          "a recording from record --save, the JSON of PluginListener.onReportIssue, or adb logcat",
                          ExitCode::kUsage});
    }
    if (clickhouse) {
      if (auto flushed = clickhouse->Flush(); !flushed && !clickhouse_error) clickhouse_error = flushed.error();
      if (clickhouse_error) return Fail(*clickhouse_error);
      const auto& counts = clickhouse->counts();
      log::Info("clickhouse: {} rows written, {} issues already there, {} FPS windows not stored (no table holds them)",
                counts.inserted, counts.already_present, counts.no_table);
    }
    Report report;
    report.matrix = fleet.Finish();
    auto out = loader::OutputFile::Create(output_.path);
    if (!out) return Fail(out.error());
    const auto renderer = ReportRenderer(analysis_, output_);
    renderer->Render(report, (*out)->stream());
    if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
    return 0;
  }

 private:
  int FromRecording(const std::string& recording) {
    auto out = loader::OutputFile::Create(output_.path);
    if (!out) return Fail(out.error());
    Pipeline pipeline(analysis_);
    Stats replay_stats;
    if (auto ok = loader::ReplayRecording(recording, pipeline, &replay_stats); !ok) return Fail(ok.error());
    if (replay_stats.AnyNonZero()) pipeline.OnEvent(LossCounters{replay_stats});
    const auto renderer = ReportRenderer(analysis_, output_);
    renderer->Render(pipeline.TakeReport(), (*out)->stream());
    if (auto ok = (*out)->Commit(); !ok) return Fail(ok.error());
    return 0;
  }

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
  std::vector<std::string> inputs_;
  std::string proguard_mapping_;
  size_t keep_issues_ = 200;
  std::string clickhouse_;
  ReportOutput output_;
  AnalysisOptions analysis_;
};

}  // namespace

std::unique_ptr<Command> MakeReportCommand() { return std::make_unique<ReportCommand>(); }

}  // namespace looptrace::cli
