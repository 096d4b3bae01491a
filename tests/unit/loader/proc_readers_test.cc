// A target's command line as snapshots and stall reports show it: whole, shell-quoted,
// capped with a visible mark.
#include "loader/target/proc_readers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

TEST(CommandLineText, QuotesWordsAShellWouldSplitAndKeepsTheRest) {
  EXPECT_EQ(CommandLineText({"/usr/bin/java", "-Xmx2g", "-cp", "/srv/app.jar:lib/*", "com.example.Main"}),
            "/usr/bin/java -Xmx2g -cp '/srv/app.jar:lib/*' com.example.Main");
  EXPECT_EQ(CommandLineText({"python3.11", "-c", "print('hi there')", ""}),
            "python3.11 -c 'print('\\''hi there'\\'')' ''");
  EXPECT_EQ(CommandLineText({"app", "--name=a\nb"}), "app '--name=a\nb'");  // escaped where it is shown
  EXPECT_EQ(CommandLineText({}), "");
}

TEST(CommandLineText, ALongCommandLineIsCutAndMarked) {
  const std::string classpath(5000, 'x');
  const std::string text = CommandLineText({"java", "-cp", classpath, "Main"});
  EXPECT_EQ(text.size(), kMaxCommandLineBytes + kTruncatedMark.size());
  EXPECT_TRUE(text.starts_with("java -cp xxx"));
  EXPECT_TRUE(text.ends_with(std::string(kTruncatedMark)));
  // Never in the middle of a character: "app '" and 1018 letters put an é across the cap.
  const std::string wide = CommandLineText({"app", std::string(kMaxCommandLineBytes - 6, 'a') + "\xc3\xa9\xc3\xa9"});
  EXPECT_EQ(wide.size(), kMaxCommandLineBytes - 1 + kTruncatedMark.size());
  EXPECT_TRUE(IsValidUtf8(wide)) << wide;
}

TEST(CommandLineText, ReadsThisProcesssOwn) {
  const std::string text = ReadCommandLine(getpid());
  EXPECT_FALSE(text.empty());
  EXPECT_NE(text.find("test"), std::string::npos) << text;  // the test binary's path
  EXPECT_EQ(ReadCommandLine(0x3fffffff), "");
}

}  // namespace
}  // namespace looptrace::loader
