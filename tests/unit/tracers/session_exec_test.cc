// An exec into another program during a session is said in the report (before, it was not:
// the old program's probes went quiet and the report read as if the program had idled).
#include <gtest/gtest.h>

#include <sstream>

#include "looptrace/report/render.h"
#include "looptrace/tracers/pipeline.h"

namespace looptrace {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

Report ReportOf(const std::vector<std::string>& exec_comms) {
  AnalysisOptions options;
  Pipeline pipeline(options);
  SessionStart start;
  start.pid = 42;
  start.command = "python3.11-long-name";  // a comm is its first 15 bytes
  start.ts_ns = 10 * kSecond;
  pipeline.OnEvent(start);
  uint64_t ts = 11 * kSecond;
  for (const std::string& comm : exec_comms) {
    ProcessExec exec;
    exec.ts_ns = ts;
    exec.pid = 42;
    exec.comm = comm;
    pipeline.OnEvent(exec);
    ts += kSecond;
  }
  SessionEnd end;
  end.ts_ns = 20 * kSecond;
  end.reason = "duration";
  pipeline.OnEvent(end);
  return pipeline.TakeReport();
}

std::string Render(std::string_view format, const Report& report) {
  std::ostringstream out;
  MakeRenderer(format)->Render(report, out);
  return out.str();
}

TEST(SessionExec, AnExecIntoAnotherProgramIsNoted) {
  Report report = ReportOf({"python3.11-long", "sh", "sh"});
  ASSERT_EQ(report.session.execs.size(), 1u);  // the same name again is the same program
  EXPECT_EQ(report.session.execs[0].comm, "sh");
  const std::string text = Render("text", report);
  EXPECT_NE(text.find("exec: at +2.000 s the process became sh: the old program's probes no longer fire"),
            std::string::npos)
      << text;
  const std::string json = Render("json", report);
  EXPECT_NE(json.find(R"({"comm":"sh","ts_ns":12000000000,"type":"session_exec"})"), std::string::npos) << json;

  Report quiet = ReportOf({});
  EXPECT_TRUE(quiet.session.execs.empty());
  EXPECT_EQ(Render("text", quiet).find("exec:"), std::string::npos);
  EXPECT_EQ(Render("json", quiet).find("session_exec"), std::string::npos);
}

}  // namespace
}  // namespace looptrace
