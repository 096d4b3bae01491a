// A thread dump (`looptrace snapshot`) in every format of the renderer registry: each says
// the same threads, states and stacks its own way, and a name from the target cannot break
// out of any of them.
#include "looptrace/report/thread_dump.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "looptrace/report/render.h"

namespace looptrace {
namespace {

using nlohmann::json;

ThreadDump TwoThreads() {
  ThreadDump d;
  d.pid = 100;
  d.command = "app --serve";
  d.wall_time_ns = 1'700'000'000'000'000'000ull;
  d.snapshot.ts_ns = 5'000'000'000;
  d.snapshot.tid = 100;
  d.snapshot.message_begin_ns = 2'000'000'000;
  ThreadSnapshot main;
  main.tid = 100;
  main.name = "main";
  main.state = 'S';
  main.futex_address = 0x1000;
  main.futex_owner_tid = 101;
  main.kernel_stack = {"futex_wait", "do_futex"};
  main.user_stack = {"lock_wait", "handle;request", "main"};  // innermost first
  ThreadSnapshot worker;
  worker.tid = 101;
  worker.name = "worker</script>";
  worker.state = 'R';
  worker.user_stack = {"spin"};
  d.snapshot.threads = {main, worker};
  LiveMessage m;
  m.tid = 100;
  m.begin_ns = 2'000'000'000;
  m.name = "handle";
  d.current = m;
  d.running_ns = 3'000'000'000;
  d.main_state = "lock wait";
  return d;
}

std::string Render(const std::string& format, const ThreadDump& dump) {
  auto renderer = MakeRenderer(format);
  EXPECT_TRUE(renderer) << format;
  std::ostringstream out;
  if (renderer) renderer->RenderDump(dump, out);
  return out.str();
}

TEST(ThreadDumpRender, EveryRegisteredFormatRendersADump) {
  for (const RendererEntry& entry : RendererRegistry())
    EXPECT_FALSE(Render(std::string(entry.name), TwoThreads()).empty()) << entry.name;
}

// The whole command line when the session knows it, escaped; the name alone otherwise.
TEST(ThreadDumpRender, CmdLineIsTheWholeCommandLine) {
  ThreadDump d = TwoThreads();
  d.command = "java";
  EXPECT_NE(RenderThreadDumpText(d).find("Cmd line: java\n"), std::string::npos);
  d.command_line = "/usr/bin/java -Xmx2g -cp app.jar Main '\x1b[31m'";
  const std::string text = RenderThreadDumpText(d);
  EXPECT_NE(text.find("Cmd line: /usr/bin/java -Xmx2g -cp app.jar Main '\\x1b[31m'\n"), std::string::npos) << text;
  EXPECT_EQ(json::parse(Render("json", d))["command_line"], d.command_line);
}

TEST(ThreadDumpRender, TextAndJsonAreTheDumpsOwn) {
  const ThreadDump d = TwoThreads();
  EXPECT_EQ(Render("text", d), RenderThreadDumpText(d));
  EXPECT_EQ(Render("json", d), RenderThreadDumpJson(d));
  json record = json::parse(Render("json", d));
  EXPECT_EQ(record["type"], "thread_dump");
  EXPECT_EQ(record["threads"].size(), 2u);
}

TEST(ThreadDumpRender, ChromeHasTheMessageSliceAndAStateEventPerThread) {
  json trace = json::parse(Render("chrome", TwoThreads()));
  int states = 0;
  bool message = false;
  for (const json& e : trace["traceEvents"]) {
    if (e["cat"] == "thread") {
      ++states;
      if (e["tid"] == 100) {
        EXPECT_EQ(e["name"], "state S");
        EXPECT_EQ(e["args"]["futex_owner_tid"], 101);
        EXPECT_EQ(e["args"]["kernel_stack"][0], "futex_wait");
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 3'000'000.0);  // µs after the message began
      }
    }
    if (e["cat"] == "message") {
      message = true;
      EXPECT_EQ(e["name"], "handle");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 3'000'000.0);
    }
  }
  EXPECT_EQ(states, 2);
  EXPECT_TRUE(message);
}

TEST(ThreadDumpRender, FoldedIsOneLinePerThreadOutermostFirst) {
  EXPECT_EQ(Render("folded", TwoThreads()),
            "main (tid 100);main;handle:request;lock_wait;do_futex_[k];futex_wait_[k] 1\n"
            "worker</script> (tid 101);spin 1\n");
}

TEST(ThreadDumpRender, HtmlIsAPageWhoseNamesCannotCloseItsTags) {
  const std::string page = Render("html", TwoThreads());
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(page.find("worker&lt;/script&gt;"), std::string::npos);
  // The embedded record: one </script>, its own.
  const size_t data = page.find("id=\"looptrace-thread-dump\">");
  ASSERT_NE(data, std::string::npos);
  EXPECT_EQ(page.find("</script>", data), page.rfind("</script>"));
}

}  // namespace
}  // namespace looptrace
