// The HTML report opened in a real browser: headless Chromium (Debian's `chromium`) loads
// the page, runs its script, and the test reads the DOM it built. The live test profiles
// the sample target's `report-tour` scenario (frames, a slow message, an ANR on a lock) and
// saves a screenshot to build/artifacts/html-report.png; the others replay small
// recordings (bad input, hostile names) and need neither root nor BPF.
#include <gtest/gtest.h>

#include <regex>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string Mapping() { return std::string(LOOPTRACE_BINARY_DIR) + "/looptrace-sample-app.methodMapping.txt"; }
std::string Golden(const std::string& dir) { return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/golden/" + dir; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string FindChromium() {
  const char* path_env = std::getenv("PATH");
  std::string paths = path_env ? path_env : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::istringstream in(paths);
    std::string dir;
    while (std::getline(in, dir, ':')) {
      fs::path candidate = fs::path(dir) / name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return "";
}

// Runs headless Chromium on a local file with no network and a fresh profile.
class Browser {
 public:
  Browser() : binary_(FindChromium()) {}
  bool found() const { return !binary_.empty(); }

  // The DOM after the page's scripts ran.
  std::string DumpDom(const std::string& html_path) {
    auto r = Run({"--dump-dom", "file://" + html_path});
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
    return r.out;
  }

  void Screenshot(const std::string& html_path, const std::string& png, int width, int height) {
    auto r = Run({"--screenshot=" + png, "--window-size=" + std::to_string(width) + "," + std::to_string(height),
                  "--hide-scrollbars", "file://" + html_path});
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  }

 private:
  CommandResult Run(const std::vector<std::string>& extra) {
    TempDir profile;
    std::vector<std::string> argv = {binary_,
                                     "--headless",
                                     "--no-sandbox",
                                     "--disable-gpu",
                                     "--disable-quic",
                                     "--no-first-run",
                                     "--disable-background-networking",
                                     "--disable-component-update",
                                     "--disable-sync",
                                     "--disable-extensions",
                                     "--user-data-dir=" + profile.path(),
                                     "--virtual-time-budget=10000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, 90);
  }

  std::string binary_;
};

size_t CountMatches(const std::string& text, const std::regex& re) {
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// The DOM of one section (id="NAME") up to the next section. A missing section fails the
// test: checks that a section holds no chart must not pass on a page without it.
std::string Section(const std::string& dom, const std::string& id) {
  size_t begin = dom.find("<section class=\"report-section\" id=\"" + id + "\"");
  if (begin == std::string::npos) {
    ADD_FAILURE() << "the page has no section \"" << id << "\"";
    return "";
  }
  size_t end = dom.find("<section ", begin + 1);
  return dom.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// The line of the "Not in this report" list that stands for section `id` (drawn only with
// data); "" (a failure) when the section is drawn or not listed.
std::string Absent(const std::string& dom, const std::string& id) {
  EXPECT_EQ(dom.find("<section class=\"report-section\" id=\"" + id + "\""), std::string::npos)
      << "section \"" << id << "\" is drawn, with no data";
  size_t begin = dom.find("<li id=\"" + id + "\" data-section=");
  if (begin == std::string::npos || dom.find("id=\"absent\"") > begin) {
    ADD_FAILURE() << "\"" << id << "\" is not in the list of what the report lacks";
    return "";
  }
  return dom.substr(begin, dom.find("</li>", begin) - begin);
}

// The page's data block, parsed back into the JSON report's records.
std::vector<json> EmbeddedRecords(const std::string& html) {
  const std::string open = "id=\"looptrace-data\">";
  size_t begin = html.find(open);
  if (begin == std::string::npos) return {};
  begin += open.size();
  return ParseJsonLines(html.substr(begin, html.find("</script>", begin) - begin));
}

void ExpectRenderedCleanly(const std::string& dom) {
  EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << "the page script did not finish";
  EXPECT_EQ(dom.find("class=\"render-error\""), std::string::npos)
      << dom.substr(dom.find("render-error") == std::string::npos ? 0 : dom.find("render-error"), 1500);
}

class HtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(browser_.found()) << "chromium not found: the HTML report's browser tests need it "
                                     "(apt-get install chromium; scripts/setup.sh installs it)";
  }

  // `looptrace report RECORDING -f html`, then the DOM Chromium built from it.
  std::string ReplayToDom(const std::string& recording, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {Looptrace(), "report", recording, "-f", "html", "-o", dir_ / "report.html"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return browser_.DumpDom(dir_ / "report.html");
  }

  Browser browser_;
  TempDir dir_;
};

class HtmlReportLiveTest : public BpfTest {
 protected:
  Browser browser_;
  TempDir dir_;
};

TEST_F(HtmlReportLiveTest, ReportTourInChromium) {
  ASSERT_TRUE(browser_.found()) << "chromium not found: apt-get install chromium (scripts/setup.sh installs it)";
  const std::vector<std::string> analysis = {"--method-mapping", Mapping(), "--evil-threshold", "150",
                                             "--anr-threshold",  "1000",    "--lag-threshold",  "500"};
  std::vector<std::string> argv = {Looptrace(), "run", "--profile",          SampleProfile(), "-f",
                                   "html",      "-o",  dir_ / "report.html", "--save",        dir_ / "recording.jsonl"};
  argv.insert(argv.end(), analysis.begin(), analysis.end());
  for (const auto& a : {std::string("--"), SampleApp(), std::string("--scenario"), std::string("report-tour"),
                        std::string("--truth"), dir_ / "truth.jsonl"})
    argv.push_back(a);
  auto run = RunCommand(argv, 120);
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const std::string html = ReadAll(dir_ / "report.html");
  auto records = EmbeddedRecords(html);
  ASSERT_FALSE(records.empty());
  const size_t messages = OfType(records, "message").size() + OfType(records, "unfinished_message").size();
  auto frames = OfType(records, "frame");
  auto anrs = OfType(records, "anr");
  auto evil = OfType(records, "evil_method");
  auto stall = OfType(ReadJsonLines(dir_ / "truth.jsonl"), "stall");
  ASSERT_EQ(stall.size(), 1u);
  ASSERT_EQ(anrs.size(), 1u);
  ASSERT_GE(evil.size(), 1u) << "evil.jank (~224 ms) is over --evil-threshold 150";
  ASSERT_GE(frames.size(), 90u);
  const json* worst = &frames[0];
  for (const auto& f : frames)
    if (f["total_ns"].get<uint64_t>() > (*worst)["total_ns"].get<uint64_t>()) worst = &f;
  // The page embeds what `report -f json` says about the same recording.
  auto replay = RunCommand({Looptrace(), "report", dir_ / "recording.jsonl", "-f", "json", "--method-mapping",
                            Mapping(), "--evil-threshold", "150", "--anr-threshold", "1000", "--lag-threshold", "500"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_EQ(records, ParseJsonLines(replay.out));

  const std::string dom = browser_.DumpDom(dir_ / "report.html");
  ExpectRenderedCleanly(dom);
  // Every message is one bar on the timeline (the session is far under the bar budget).
  EXPECT_EQ(CountMatches(dom, std::regex(R"(<rect class="msg[ "])")), messages);
  // The worst frame has its bar on the timeline and in the frame-time chart.
  const std::string worst_id = std::to_string((*worst)["frame_id"].get<uint64_t>());
  EXPECT_EQ(CountMatches(dom, std::regex("<rect class=\"frame [^\"]*\"[^>]*data-frame-id=\"" + worst_id + "\"")), 1u)
      << "worst frame " << worst_id;
  EXPECT_EQ(CountMatches(dom, std::regex("<rect class=\"frame-bar [^\"]*\"[^>]*data-frame-id=\"" + worst_id + "\"")),
            1u);
  // The ANR section names the thread holding the lock.
  const std::string stalls = Section(dom, "stalls");
  const std::string holder = "held by tid " + std::to_string(stall[0]["holder_tid"].get<int>()) + " \"sample-holder\"";
  EXPECT_NE(stalls.find(holder), std::string::npos) << holder;
  EXPECT_NE(stalls.find("lock wait"), std::string::npos);
  // The slow message's call tree is drawn twice: flame graph and expandable tree.
  const std::string slow = Section(dom, "slow");
  EXPECT_NE(slow.find("class=\"icicle\""), std::string::npos);
  EXPECT_NE(slow.find("sample.app.TestTraceMainActivity"), std::string::npos);
  EXPECT_NE(Section(dom, "frames").find("class=\"frame-time\""), std::string::npos);
  EXPECT_NE(Section(dom, "startup").find("application create"), std::string::npos);

  // A screenshot for the build artifacts.
  const std::string artifacts = std::string(LOOPTRACE_BINARY_DIR) + "/artifacts";
  fs::create_directories(artifacts);
  const std::string png = artifacts + "/html-report.png";
  fs::remove(png);
  browser_.Screenshot(dir_ / "report.html", png, 1280, 1800);
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20'000u);
  EXPECT_EQ(ReadAll(png).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::cout << "screenshot: " << png << " (" << fs::file_size(png) << " bytes), page "
            << fs::file_size(dir_ / "report.html") << " bytes, " << messages << " messages, " << frames.size()
            << " frames\n";
}

// Matrix issues from phones (report ISSUES -f html): the page's fleet view draws them.
TEST_F(HtmlReportTest, MatrixFleetViewInChromium) {
  const std::string fixtures = std::string(LOOPTRACE_SOURCE_DIR) + "/tests/fixtures/matrix/";
  const std::string dom =
      ReplayToDom(fixtures + "fleet.jsonl", {"--method-mapping", fixtures + "fleet_methodMapping.txt"});
  ExpectRenderedCleanly(dom);
  EXPECT_NE(dom.find("looptrace report: Matrix issues"), std::string::npos);
  for (const char* want : {"Slow methods (Trace_EvilMethod NORMAL) by stackKey", "com.example.Feed.load()V",
                           "FPS by scene (Trace_FPS)", "Startup (Trace_StartUp)", "Issues one by one"})
    EXPECT_NE(dom.find(want), std::string::npos) << want;
}

// Sections without data are not drawn: one list says what the report lacks and why, once.
TEST_F(HtmlReportTest, NoFramesSaysSo) {
  const std::string dom = ReplayToDom(Golden("looper/basic/input.events.jsonl"));
  ExpectRenderedCleanly(dom);
  const std::string frames = Absent(dom, "frames");
  EXPECT_NE(frames.find("No frames."), std::string::npos) << frames;
  EXPECT_NE(frames.find("maps no frame roles"), std::string::npos) << frames;
  EXPECT_NE(Absent(dom, "jank").find("there are no frames"), std::string::npos);
  EXPECT_EQ(Absent(dom, "startup").find("<svg"), std::string::npos);
  EXPECT_EQ(CountMatches(Section(dom, "absent"), std::regex("maps no frame roles")), 1u) << "said once";
  EXPECT_EQ(dom.find("href=\"#frames\">Frames</a>"), std::string::npos) << "no link to a section not drawn";
  EXPECT_NE(dom.find("href=\"#messages\">Messages</a>"), std::string::npos);
  Section(dom, "messages");
  Section(dom, "quality");
  // The messages are there: 5 bars.
  EXPECT_EQ(CountMatches(dom, std::regex(R"(<rect class="msg[ "])")), 5u);
}

TEST_F(HtmlReportTest, EmptySessionSaysWhatIsMissing) {
  const std::string dom = ReplayToDom(Golden("html/empty/input.events.jsonl"));
  ExpectRenderedCleanly(dom);
  EXPECT_NE(Absent(dom, "timeline").find("Nothing to draw on the timeline"), std::string::npos);
  EXPECT_NE(Absent(dom, "messages").find("No message was dispatched"), std::string::npos);
  EXPECT_NE(Absent(dom, "frames").find("No frame was drawn"), std::string::npos);
  for (const char* id : {"timeline", "frames", "messages", "slow", "jank", "startup", "stalls"})
    EXPECT_EQ(Absent(dom, id).find("<svg"), std::string::npos) << id << ": no empty chart";
  EXPECT_NE(Section(dom, "quality").find("Complete: no loss"), std::string::npos);
}

TEST_F(HtmlReportTest, OnlyLossesSaysWhatWasLost) {
  const std::string dom = ReplayToDom(Golden("html/only-losses/input.events.jsonl"));
  ExpectRenderedCleanly(dom);
  EXPECT_NE(dom.find("Data was lost: "), std::string::npos);
  EXPECT_NE(dom.find("ringbuf_full 1,234"), std::string::npos);
  EXPECT_NE(Absent(dom, "messages").find("maps no dispatch roles"), std::string::npos);
  const std::string quality = Section(dom, "quality");
  EXPECT_NE(quality.find("ring buffer was full"), std::string::npos);
  EXPECT_NE(quality.find("thread tracking was off"), std::string::npos);
  EXPECT_EQ(CountMatches(quality, std::regex(R"(<tr class="nonzero )")), 3u);
}

TEST_F(HtmlReportTest, HostileNamesStayText) {
  const std::string dir = Golden("html/escaping");
  const std::string dom = ReplayToDom(dir + "/input.events.jsonl", {"--method-mapping", dir + "/methodMapping.txt"});
  ExpectRenderedCleanly(dom);
  // No name ran as code or became an element (the names hold the text "data-pwned", but no
  // element has the attribute).
  EXPECT_EQ(CountMatches(dom, std::regex(R"( data-pwned=)")), 0u);
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_EQ(CountMatches(dom, std::regex("<script")), 3u) << "only the page's own scripts";
  // They are shown as text, escaped by the DOM serializer.
  const std::string slow = Section(dom, "slow");
  EXPECT_NE(
      slow.find(
          "sample.app.&lt;/script&gt;&lt;script&gt;document.body.setAttribute('data-pwned','1')&lt;/script&gt;.A()V"),
      std::string::npos);
  EXPECT_NE(slow.find("sample.app.Img.&lt;img/src=x/onerror=document.body.setAttribute('data-pwned','2')&gt;()V"),
            std::string::npos);
  EXPECT_NE(slow.find("sample.app.Quotes.\"double\"'single'`back`()V"), std::string::npos);
  EXPECT_NE(slow.find("evil &lt;b&gt;jank&lt;/b&gt; \"double\" 'single' &amp;lt;entity&amp;gt;\nsecond line"),
            std::string::npos);
  EXPECT_NE(dom.find("&lt;/script&gt;&lt;script&gt;document.body.setAttribute('data-pwned','3')&lt;/script&gt;"),
            std::string::npos);
  EXPECT_NE(dom.find("<title>looptrace report: pid 28206 (&lt;sample&gt; &amp; 'app')</title>"), std::string::npos);
}

// Records and fields this page does not know yet (a newer looptrace) are still shown: a
// sampled call tree next to the instrumented one, a new record type, a new loss counter.
TEST_F(HtmlReportTest, UnknownRecordsAndFieldsAreShown) {
  const std::string golden = Golden("evil/id-hooks");
  ReplayToDom(golden + "/input.events.jsonl", {"--method-mapping", golden + "/../methodMapping.txt"});
  std::string html = ReadAll(dir_ / "report.html");
  const std::string open = "id=\"looptrace-data\">\n";
  const size_t begin = html.find(open) + open.size();
  const size_t end = html.find("</script>", begin);
  std::string data;
  for (json record : ParseJsonLines(html.substr(begin, end - begin))) {
    if (record["type"] == "evil_method")
      record["sampled_tree"] = json::array({{{"depth", 0}, {"name", ""}, {"cost_ns", 2000000000}},
                                            {{"depth", 1}, {"name", "sampled.Hot()"}, {"cost_ns", 1500000000}}});
    if (record["type"] == "stats") record["counters"]["future_loss"] = 7;
    data += record.dump() + "\n";
  }
  data += json{{"type", "future_thing"},
               {"what", "new"},
               {"tree", json::array({{{"depth", 0}, {"name", "future.Root()"}, {"cost_ns", 5}}})}}
              .dump() +
          "\n";
  html.replace(begin, end - begin, data);
  std::ofstream(dir_ / "future.html") << html;
  const std::string dom = browser_.DumpDom(dir_ / "future.html");
  ExpectRenderedCleanly(dom);
  const std::string slow = Section(dom, "slow");
  EXPECT_NE(slow.find("Call tree (method beats)"), std::string::npos);
  EXPECT_NE(slow.find("Call tree (sampled stacks)"), std::string::npos);
  EXPECT_NE(slow.find("sampled.Hot()"), std::string::npos);
  EXPECT_EQ(CountMatches(slow, std::regex("class=\"icicle\"")), 2u);
  const std::string other = Section(dom, "other");
  EXPECT_NE(other.find("future_thing"), std::string::npos);
  EXPECT_NE(other.find("future.Root()"), std::string::npos);
  EXPECT_NE(Section(dom, "quality").find("future_loss"), std::string::npos);
}

// Zoom and pan, driven by a script appended to the page: it double-clicks a bar, resets,
// zooms with Ctrl+wheel, pans with D and clicks a bar, writing what it saw after each step.
TEST_F(HtmlReportTest, TimelineZoomsPansAndSelects) {
  ReplayToDom(Golden("looper/basic/input.events.jsonl"));
  const std::string driver = R"JS(
<script>
(function () {
  var out = [];
  var box = document.querySelector('#timeline .timeline-box');
  function bars() { return document.querySelectorAll('#timeline rect.msg').length; }
  function view() { return document.querySelector('#timeline .timeline-tools .muted').textContent; }
  function bar(id) { return document.querySelector('#timeline rect.msg[data-msg-id="' + id + '"]'); }
  function note() { out.push(bars() + ' bars, ' + view()); }
  function later(fn) { setTimeout(fn, 250); }  // after the page's redraw
  var steps = [
    function () { bar(2).dispatchEvent(new MouseEvent('dblclick', {bubbles: true})); },
    function () { box.dispatchEvent(new KeyboardEvent('keydown', {key: '0', bubbles: true})); },
    function () {
      var r = box.getBoundingClientRect();
      box.dispatchEvent(new WheelEvent('wheel', {deltaY: -700, ctrlKey: true, clientX: r.left + 150, clientY: r.top + 40,
                                                 bubbles: true, cancelable: true}));
    },
    function () { box.dispatchEvent(new KeyboardEvent('keydown', {key: 'd', bubbles: true})); },
    function () {
      var b = bar(2) || bar(1);
      b.dispatchEvent(new MouseEvent('mousedown', {bubbles: true, button: 0, clientX: 300, clientY: 50}));
      window.dispatchEvent(new MouseEvent('mouseup', {bubbles: true, button: 0, clientX: 300, clientY: 50}));
    }
  ];
  note();
  (function run(i) {
    if (i === steps.length) {
      out.push('details: ' + document.querySelector('#timeline .details-panel').textContent);
      var pre = document.createElement('pre');
      pre.id = 'driver-out';
      pre.textContent = out.join('\n');
      document.body.appendChild(pre);
      return;
    }
    steps[i]();
    later(function () { note(); run(i + 1); });
  })(0);
})();
</script>
)JS";
  std::string html = ReadAll(dir_ / "report.html");
  html.insert(html.rfind("</body>"), driver);
  std::ofstream(dir_ / "driven.html") << html;
  const std::string dom = browser_.DumpDom(dir_ / "driven.html");
  ExpectRenderedCleanly(dom);
  size_t at = dom.find("<pre id=\"driver-out\">");
  ASSERT_NE(at, std::string::npos) << "the driver did not finish";
  std::vector<std::string> seen;
  std::istringstream lines(dom.substr(at + 21, dom.find("</pre>", at) - at - 21));
  for (std::string line; std::getline(lines, line);) seen.push_back(line);
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_EQ(seen[0], "5 bars, view +0.000000 s .. +0.100000 s (100.00 ms)");
  // msg.sleep (50 ms) fills the view with 15% on each side; msg.spin2/3 are out of view.
  EXPECT_EQ(seen[1], "4 bars, view +0.002500 s .. +0.067500 s (65.00 ms)");
  EXPECT_EQ(seen[2], seen[0]);
  EXPECT_NE(seen[3], seen[0]);
  EXPECT_NE(seen[3].find("view +0.000000 s"), std::string::npos) << "zoomed around the left edge: " << seen[3];
  EXPECT_EQ(seen[4].find("view +0.000000 s"), std::string::npos) << "panned right: " << seen[4];
  EXPECT_NE(seen[6].find("details: msg.sleep"), std::string::npos) << seen[6];
  EXPECT_NE(seen[6].find("cost50.00 ms"), std::string::npos) << seen[6];
}

}  // namespace
}  // namespace looptrace::testing
