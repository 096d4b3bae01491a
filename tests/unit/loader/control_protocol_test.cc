// The control protocol of background sessions (control_protocol.h): what a request and an
// answer may look like, and that garbage is refused with a reason instead of acted on.
#include <gtest/gtest.h>

#include "loader/live/control_policy.h"
#include "loader/live/control_protocol.h"

namespace looptrace::loader {
namespace {

TEST(ControlProtocol, RequestsRoundTrip) {
  for (const char* cmd : {"info", "status", "snapshot", "report", "detach"}) {
    ControlRequest r{cmd, std::string(cmd) == "report" ? "json" : ""};
    std::string line = FormatControlRequest(r);
    ASSERT_EQ(line.back(), '\n');
    line.pop_back();
    auto parsed = ParseControlRequest(line);
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->command, r.command);
    EXPECT_EQ(parsed->format, r.format);
  }
}

TEST(ControlProtocol, RefusesGarbageWithAReason) {
  struct Case {
    const char* line;
    const char* says;
  } cases[] = {
      {"", "not a JSON object"},
      {"hello", "not a JSON object"},
      {"[1,2]", "not a JSON object"},
      {R"({"cmd":"status"})", "protocol version"},
      {R"({"v":2,"cmd":"status"})", "protocol version"},
      {R"({"v":"1","cmd":"status"})", "protocol version"},
      {R"({"v":1})", "no command"},
      {R"({"v":1,"cmd":7})", "no command"},
      {R"({"v":1,"cmd":"rm -rf /"})", "unknown command"},
      {R"({"v":1,"cmd":"report","format":123})", "bad format"},
      {R"({"v":1,"cmd":"report","format":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})", "bad format"},
  };
  for (const auto& c : cases) {
    auto r = ParseControlRequest(c.line);
    ASSERT_FALSE(r) << c.line;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << c.line << ": " << r.error().message;
    EXPECT_EQ(r.error().code, ExitCode::kUsage);
  }
}

TEST(ControlProtocol, AnswersCarryABodyOrAnError) {
  ControlResponse ok;
  ok.body = "line 1\nline 2\n";
  auto parsed = ParseControlResponse(FormatControlResponse(ok));
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->ok);
  EXPECT_EQ(parsed->body, ok.body);

  ControlResponse fail = ControlResponse::Fail(Error{"no such thing", "try that", ExitCode::kSession});
  parsed = ParseControlResponse(FormatControlResponse(fail));
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->ok);
  EXPECT_EQ(parsed->error, "no such thing");
  EXPECT_EQ(parsed->hint, "try that");
  EXPECT_EQ(parsed->code, static_cast<int>(ExitCode::kSession));
  EXPECT_TRUE(parsed->body.empty());

  EXPECT_FALSE(ParseControlResponse(""));
  EXPECT_FALSE(ParseControlResponse("no newline"));
  EXPECT_FALSE(ParseControlResponse("garbage\n"));
  EXPECT_FALSE(ParseControlResponse(R"({"v":9,"ok":true})"
                                    "\n"));
}

TEST(ControlProtocol, PathsFollowTheRunDirectory) {
  setenv("LOOPTRACE_RUN_DIR", "/tmp/lt-run-test", 1);
  EXPECT_EQ(ControlSocketPath(42), "/tmp/lt-run-test/42.sock");
  EXPECT_EQ(TombstonePath(42), "/tmp/lt-run-test/42.ended");
  unsetenv("LOOPTRACE_RUN_DIR");
  EXPECT_EQ(ControlSocketPath(42), "/run/looptrace/42.sock");
}

}  // namespace
}  // namespace looptrace::loader
