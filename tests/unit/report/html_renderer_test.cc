// The HTML report: the page embeds exactly the JSON report (golden test against every
// expected.json), escapes what could break out of <script>, fetches nothing, and thins
// only the timeline of long sessions. Drawing is checked in a real browser by
// tests/integration/html_report_test.cc.
#include "looptrace/report/html_renderer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "loader/decode/mapping_namer.h"
#include "loader/session/recording.h"
#include "looptrace/tracers/cost_accumulator.h"
#include "looptrace/util/text_safety.h"
#include "tests/unit/tracers/golden_case.h"

namespace looptrace {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text between <script ... id="ID"> and the next </script>. A missing block fails the
// test (checks of what a block does not contain must not pass on a page without it).
std::string Block(const std::string& html, std::string_view id) {
  const std::string open = "id=\"" + std::string(id) + "\">";
  size_t begin = html.find(open);
  size_t end = begin == std::string::npos ? begin : html.find("</script>", begin + open.size());
  if (end == std::string::npos) {
    ADD_FAILURE() << "the page has no complete <script id=\"" << id << "\"> block";
    return "";
  }
  begin += open.size();
  return html.substr(begin, end - begin);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

// Parsing and dumping again turns \u003c back into '<': the value, not the bytes, is what
// the page reads. (Dumped the way the JSON renderer does: C1 controls and bidi overrides,
// U+2028/9 too, as \u escapes.)
std::vector<std::string> Redumped(const std::string& ndjson) {
  std::vector<std::string> out;
  for (const auto& line : Lines(ndjson)) out.push_back(EscapeJsonForTerminal(json::parse(line).dump()));
  return out;
}

std::string Render(const Report& report, std::string_view format, RenderOptions options = {}) {
  std::ostringstream out;
  MakeRenderer(format, options)->Render(report, out);
  return out.str();
}

std::string RenderHtml(const Report& report, HtmlOptions html) {
  std::ostringstream out;
  MakeHtmlRenderer({}, html)->Render(report, out);
  return out.str();
}

Report ReplayGolden(const fs::path& dir, RenderOptions* render) { return testing::ReplayGoldenCase(dir, render); }

TEST(HtmlRenderer, FormatIsSelectableByName) { EXPECT_NE(MakeRenderer("html"), nullptr); }

// Golden: for every golden case, the page's data block is the case's expected.json.
TEST(HtmlRenderer, EmbeddedDataIsTheGoldenJsonReport) {
  int cases = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(LOOPTRACE_SOURCE_DIR) / "tests/golden")) {
    if (entry.path().filename() != "input.events.jsonl") continue;
    const fs::path dir = entry.path().parent_path();
    SCOPED_TRACE(dir.string());
    ++cases;
    RenderOptions render;
    Report report = ReplayGolden(dir, &render);
    const std::string html = Render(report, "html", render);
    const std::string data = Block(html, kHtmlDataId);
    ASSERT_FALSE(data.empty());
    EXPECT_EQ(Redumped(data), Lines(ReadFile(dir / "expected.json")));
    // And byte for byte what -f json writes, once the script escapes are undone.
    EXPECT_EQ(Redumped(data), Lines(Render(report, "json", render)));
    auto meta = json::parse(Block(html, kHtmlMetaId));
    EXPECT_EQ(meta["format"], "looptrace-html");
    EXPECT_EQ(meta["counters"].size(), static_cast<size_t>(kStatCount));
  }
  EXPECT_GE(cases, 5);
}

Report NastyReport() {
  Report r;
  r.session.pid = 42;
  r.session.command = "<b>app</b> & \"co\" 'x'";
  r.session.begin_ns = 1'000'000'000;
  r.session.end_ns = 2'000'000'000;
  r.messages.enabled = true;
  Message m;
  m.tid = 42;
  m.begin_ns = 1'100'000'000;
  m.end_ns = 1'200'000'000;
  m.msg_id = 1;
  m.name = "</script><script>document.body.dataset.pwned=1</script><!-- \"quoted\"\nline\xe2\x80\xa8sep\xe2\x80\xa9";
  r.messages.messages.push_back(m);
  return r;
}

TEST(HtmlRenderer, NamesCannotBreakOutOfTheScriptBlocks) {
  Report report = NastyReport();
  const std::string html = Render(report, "html");
  // Only the page's own three scripts close: data, meta, code.
  size_t closes = 0;
  for (size_t at = html.find("</script"); at != std::string::npos; at = html.find("</script", at + 1)) ++closes;
  EXPECT_EQ(closes, 3u);
  EXPECT_EQ(html.find("<script>document"), std::string::npos);
  EXPECT_EQ(html.find("<!-- "), std::string::npos);
  EXPECT_EQ(html.find("\xe2\x80\xa8"), std::string::npos);
  EXPECT_EQ(html.find("\xe2\x80\xa9"), std::string::npos);
  // The value survives: the page reads the same name the JSON report has.
  auto lines = Lines(Block(html, kHtmlDataId));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[1])["name"], report.messages.messages[0].name);
  // The title is HTML-escaped.
  EXPECT_NE(
      html.find("<title>looptrace report: pid 42 (&lt;b&gt;app&lt;/b&gt; &amp; &quot;co&quot; &#39;x&#39;)</title>"),
      std::string::npos);
}

// Names come from the target's memory: any bytes. They must not make the report throw.
TEST(HtmlRenderer, InvalidUtf8NamesAreReplacedNotFatal) {
  Report report = NastyReport();
  report.messages.messages[0].name = "latin1 caf\xe9 \xff";
  std::string html;
  ASSERT_NO_THROW(html = Render(report, "html"));
  auto lines = Lines(Block(html, kHtmlDataId));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[1])["name"], "latin1 caf\xef\xbf\xbd \xef\xbf\xbd");  // U+FFFD each
  EXPECT_EQ(Lines(Render(report, "json"))[1], json::parse(lines[1]).dump());
}

TEST(HtmlRenderer, EscapeJsonForScriptKeepsTheValue) {
  const std::string nasty = json{{"k", "</script> <!-- & > \xe2\x80\xa8\xe2\x80\xa9 \\u003c"}}.dump();
  const std::string escaped = EscapeJsonForScript(nasty);
  EXPECT_EQ(escaped.find('<'), std::string::npos);
  EXPECT_EQ(escaped.find('>'), std::string::npos);
  EXPECT_EQ(escaped.find('&'), std::string::npos);
  EXPECT_EQ(json::parse(escaped), json::parse(nasty));
  EXPECT_EQ(EscapeHtml("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(HtmlRenderer, PageIsSelfContained) {
  const std::string html = Render(NastyReport(), "html");
  // The only URL is the SVG namespace name (an identifier, never fetched).
  std::string rest = html;
  for (size_t at; (at = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;) rest.erase(at, 26);
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_EQ(rest.find("https://"), std::string::npos);
  EXPECT_EQ(rest.find("//cdn"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<(link|img|iframe)\b|\bsrc\s*=|@import|url\(\s*['"]?[a-z]+:)")));
  // The browser enforces it too.
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none';"), std::string::npos);
  // The assets are compiled in byte for byte.
  const fs::path assets = fs::path(LOOPTRACE_SOURCE_DIR) / "report/assets";
  std::vector<fs::path> files = {assets / "report.css"};
  for (const auto& entry : fs::directory_iterator(assets / "js")) files.push_back(entry.path());
  ASSERT_GT(files.size(), 2u);
  for (const fs::path& file : files) EXPECT_NE(html.find(ReadFile(file)), std::string::npos) << file;
  // The page's code is plain ASCII (it is compiled in as raw string literals).
  for (char c : Block(html, kHtmlMetaId) + html.substr(html.rfind("<script>")))
    ASSERT_TRUE(static_cast<unsigned char>(c) < 0x80) << "non-ASCII byte in the page code";
}

Report LongReport(size_t messages, size_t frames) {
  Report r;
  r.session.pid = 7;
  r.session.begin_ns = 0;
  r.session.end_ns = 10'000'000'000;
  r.messages.enabled = r.frames.enabled = true;
  for (size_t i = 0; i < messages; ++i) {
    Message m;
    m.tid = 7;
    m.begin_ns = 1'000 + i * 9'000'000;
    m.end_ns = m.begin_ns + 1'000'000 + (i % 97) * 10'000;  // 1.00 .. 1.96 ms
    m.msg_id = i;
    m.name = "m" + std::to_string(i % 5);
    r.messages.messages.push_back(m);
  }
  for (size_t i = 0; i < frames; ++i) {
    FrameRecord f;
    f.tid = 7;
    f.frame_id = i + 1;
    f.vsync_ns = f.intended_vsync_ns = i * 16'666'666;
    f.begin_ns = f.vsync_ns + 100'000;
    f.end_ns = f.begin_ns + (i % 50 == 0 ? 40'000'000 : 3'000'000);
    f.interval_ns = 16'666'666;
    f.deadline_missed = i % 50 == 0;
    r.frames.frames.push_back(f);
  }
  r.messages.by_name.push_back({"m0", SummarizeCosts({1, 2, 3})});
  return r;
}

TEST(HtmlRenderer, LongSessionsThinTheTimelineNotTheTables) {
  Report report = LongReport(1000, 600);
  const std::string html = RenderHtml(report, {.max_messages = 100, .max_frames = 50, .buckets = 40});
  std::vector<json> records;
  for (const auto& line : Lines(Block(html, kHtmlDataId))) records.push_back(json::parse(line));
  size_t message_lines = 0, frame_lines = 0, janky_lines = 0, name_lines = 0;
  uint64_t cheapest_kept = UINT64_MAX;
  for (const auto& r : records) {
    if (r["type"] == "message") {
      ++message_lines;
      cheapest_kept = std::min(cheapest_kept, r["cost_ns"].get<uint64_t>());
    }
    if (r["type"] == "frame") {
      ++frame_lines;
      if (r["deadline_missed"].get<bool>()) ++janky_lines;
    }
    if (r["type"] == "message_name_summary") ++name_lines;
  }
  EXPECT_EQ(message_lines, 100u);
  EXPECT_EQ(frame_lines, 50u);
  EXPECT_EQ(janky_lines, 12u);  // every janky frame (i % 50 == 0) is kept
  EXPECT_EQ(name_lines, 1u);
  // The costliest were kept: 1000 messages cycle through 97 costs; each of the 10 highest
  // (residues 87..96) has exactly 10 messages.
  EXPECT_EQ(cheapest_kept, 1'000'000u + 87 * 10'000u);
  auto meta = json::parse(Block(html, kHtmlMetaId));
  const json& t = meta["timeline"];
  EXPECT_EQ(t["messages_total"], 1000);
  EXPECT_EQ(t["messages_embedded"], 100);
  EXPECT_EQ(t["frames_total"], 600);
  EXPECT_EQ(t["frames_embedded"], 50);
  EXPECT_EQ(t["bucket_ns"], 250'000'000);
  uint64_t summarised = 0, summarised_frames = 0;
  for (const auto& b : t["message_buckets"]) summarised += b[2].get<uint64_t>();
  for (const auto& b : t["frame_buckets"]) summarised_frames += b[2].get<uint64_t>();
  EXPECT_EQ(summarised, 900u);
  EXPECT_EQ(summarised_frames, 550u);
  EXPECT_LE(t["message_buckets"].size(), 40u);
  // The cost histogram counts every message, embedded or not.
  uint64_t histogram = 0;
  for (const auto& th : meta["cost_histogram"]["threads"])
    for (const auto& c : th["counts"]) histogram += c.get<uint64_t>();
  EXPECT_EQ(histogram, 1000u);
}

TEST(HtmlRenderer, ShortSessionsEmbedEveryRecord) {
  Report report = LongReport(50, 20);
  const std::string html = Render(report, "html");
  EXPECT_EQ(Redumped(Block(html, kHtmlDataId)), Lines(Render(report, "json")));
  auto meta = json::parse(Block(html, kHtmlMetaId));
  EXPECT_EQ(meta["timeline"]["messages_embedded"], 50);
  EXPECT_TRUE(meta["timeline"]["message_buckets"].empty());
}

}  // namespace
}  // namespace looptrace
