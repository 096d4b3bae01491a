// The Prometheus/OpenMetrics exposition of background sessions (metrics_text.h): every
// family declared once, samples well-formed, histograms cumulative with +Inf, counters with
// _total, label values escaped, and OpenMetrics ending with # EOF.
#include "looptrace/report/metrics_text.h"

#include "looptrace/tracers/live_stats.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace looptrace {
namespace {

LiveStatus Sample() {
  LiveStatus s;
  s.pid = 4242;
  s.command = "my \"app\"\\x\n";
  s.profile = "sample";
  s.wall_time_ns = 1'700'000'000'123'000'000;
  LiveThread t;
  t.tid = 4242;
  t.messages = 6;
  t.busy_ns = 2'500'000'000;
  t.total_ns = 3'000'000'000;
  t.buckets[0] = 2;  // <= 1 ms
  t.buckets[MessageBucketOf(30'000'000)] = 3;
  t.buckets[kMessageBuckets - 1] = 1;  // > 10 s
  s.threads.push_back(t);
  s.frames = 10;
  s.frames_by_jank = {7, 2, 1};
  s.frames_by_bucket = {{"BEST", 7}, {"NORMAL", 2}, {"FROZEN", 1}};
  s.anrs = 1;
  s.lags = 2;
  s.state = "lag";
  s.current_running_ns = 2'500'000'000;
  s.stats.Add(StatId::records_full, 5);
  s.stats.Add(StatId::cost_loader_cpu_ns, 250'000'000);
  s.stats.Add(StatId::cost_probe_hits, 2000);
  s.stats.Add(StatId::cost_uprobe_hit_ns, 1000);
  s.stats.Add(StatId::cost_probe_bpf_ns, 1'000'000);  // 2 ms of traps + 1 ms in BPF
  return s;
}

std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$)");
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, kSample)) << line;
    if (!m.empty()) out[m[1].str() + "{" + m[2].str() + "}"] = m[3] == "+Inf" ? 1e300 : std::stod(m[3]);
  }
  return out;
}

TEST(MetricsText, OpenMetricsIsWellFormed) {
  std::string text = RenderMetrics({{"host-a", Sample()}}, {}, "host-a", true);
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
  // Every family declared once; counter families without _total.
  std::set<std::string> families;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("# TYPE ")) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(families.insert(name).second) << name;
      EXPECT_FALSE(name.ends_with("_total")) << name;
    }
  EXPECT_TRUE(families.contains("looptrace_message_duration_seconds"));
  EXPECT_TRUE(families.contains("looptrace_anrs"));
  EXPECT_NE(text.find("# TYPE looptrace_session info"), std::string::npos);
  EXPECT_NE(text.find("# UNIT looptrace_message_duration_seconds seconds"), std::string::npos);

  auto samples = Samples(text);
  const std::string target = R"(pid="4242",comm="my \"app\"\\x\n",profile="sample",host="host-a")";
  EXPECT_EQ(samples.at("looptrace_anrs_total{" + target + "}"), 1);
  EXPECT_EQ(samples.at("looptrace_lags_total{" + target + "}"), 2);
  EXPECT_EQ(samples.at("looptrace_stall_level{" + target + "}"), 1);
  EXPECT_EQ(samples.at("looptrace_message_duration_seconds_count{" + target + ",tid=\"4242\"}"), 6);
  EXPECT_EQ(samples.at("looptrace_message_duration_seconds_sum{" + target + ",tid=\"4242\"}"), 3);
  EXPECT_EQ(samples.at("looptrace_message_duration_seconds_bucket{" + target + ",tid=\"4242\",le=\"0.001\"}"), 2);
  EXPECT_EQ(samples.at("looptrace_message_duration_seconds_bucket{" + target + ",tid=\"4242\",le=\"0.05\"}"), 5);
  EXPECT_EQ(samples.at("looptrace_message_duration_seconds_bucket{" + target + ",tid=\"4242\",le=\"10.0\"}"), 5);
  EXPECT_EQ(samples.at("looptrace_message_duration_seconds_bucket{" + target + ",tid=\"4242\",le=\"+Inf\"}"), 6);
  EXPECT_EQ(samples.at("looptrace_frames_total{" + target + ",class=\"janky\"}"), 2);
  EXPECT_EQ(samples.at("looptrace_frames_by_bucket_total{" + target + ",bucket=\"HIGH\"}"), 0);
  EXPECT_EQ(samples.at("looptrace_data_quality_total{" + target + ",counter=\"records_full\",severity=\"data_loss\"}"),
            5);
  EXPECT_EQ(samples.at("looptrace_busy_seconds_total{" + target + ",tid=\"4242\"}"), 2.5);
  EXPECT_EQ(samples.at("looptrace_cost_seconds_total{" + target + ",part=\"loader\"}"), 0.25);
  EXPECT_EQ(samples.at("looptrace_cost_seconds_total{" + target + ",part=\"probes\"}"), 0.003);
  EXPECT_EQ(samples.at("looptrace_session_info{" + target + ",message_definition=\"dispatch\"}"), 1);
}

TEST(MetricsText, EventLoopDelayOnlyWhereTheProfileHasTimersDueTimes) {
  EXPECT_EQ(RenderMetrics({{"h", Sample()}}, {}, "h", true).find("looptrace_event_loop_delay"), std::string::npos);
  LiveStatus node = Sample();
  node.loop_delay.count = 3;
  node.loop_delay.p50_ns = 1'000'000;
  node.loop_delay.p99_ns = 40'000'000;
  node.loop_delay.max_ns = 40'000'000;
  auto samples = Samples(RenderMetrics({{"h", node}, {"h", Sample()}}, {}, "h", true));
  const std::string target = R"(pid="4242",comm="my \"app\"\\x\n",profile="sample",host="h")";
  EXPECT_EQ(samples.at("looptrace_event_loop_delay_seconds{" + target + ",stat=\"p50\"}"), 0.001);
  EXPECT_EQ(samples.at("looptrace_event_loop_delay_seconds{" + target + ",stat=\"max\"}"), 0.04);
  size_t delays = 0;
  for (const auto& [name, value] : samples) delays += name.starts_with("looptrace_event_loop_delay_seconds{");
  EXPECT_EQ(delays, 3u);  // the session without delays has none
}

TEST(MetricsText, HistogramBucketsAreCumulativeAndOrdered) {
  std::string text = RenderMetrics({{"h", Sample()}}, {}, "h", false);
  std::istringstream in(text);
  std::string line;
  double previous = -1;
  int buckets = 0;
  while (std::getline(in, line)) {
    if (!line.starts_with("looptrace_message_duration_seconds_bucket")) continue;
    double v = std::stod(line.substr(line.rfind(' ') + 1));
    EXPECT_GE(v, previous) << line;
    previous = v;
    ++buckets;
  }
  EXPECT_EQ(buckets, static_cast<int>(kMessageBuckets));
  EXPECT_NE(text.find("le=\"+Inf\"} 6"), std::string::npos);
}

TEST(MetricsText, ClassicFormatDeclaresSampleNamesAndHasNoEof) {
  std::string text = RenderMetrics({{"h", Sample()}}, {}, "h", false);
  EXPECT_NE(text.find("# TYPE looptrace_anrs_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE looptrace_session_info gauge"), std::string::npos);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  EXPECT_EQ(text.find("# UNIT"), std::string::npos);
  Samples(text);  // every sample line parses
}

TEST(MetricsText, ManySessionsShareFamiliesAndExportersAreShownOnce) {
  LiveStatus a = Sample(), b = Sample();
  b.pid = 5000;
  b.command = "other";
  ExporterCounters exporters;
  exporters.clickhouse = true;
  exporters.rows_sent = 12;
  exporters.rows_dropped = 3;
  std::string text = RenderMetrics({{"h", a}, {"h", b}}, exporters, "h", true);
  size_t families = 0;
  for (size_t at = 0; (at = text.find("# TYPE looptrace_anrs ", at)) != std::string::npos; ++at) ++families;
  EXPECT_EQ(families, 1u);
  auto samples = Samples(text);
  EXPECT_TRUE(samples.contains(R"(looptrace_anrs_total{pid="5000",comm="other",profile="sample",host="h"})"));
  EXPECT_EQ(samples.at(R"(looptrace_clickhouse_rows_total{host="h",outcome="dropped"})"), 3);
  EXPECT_EQ(samples.at(R"(looptrace_clickhouse_rows_total{host="h",outcome="sent"})"), 12);
}

TEST(MetricsText, NegotiatesTheFormatPrometheusPrefers) {
  EXPECT_TRUE(
      WantsOpenMetrics("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                       "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
  EXPECT_FALSE(WantsOpenMetrics("text/plain;version=0.0.4"));
  EXPECT_FALSE(WantsOpenMetrics(""));
  EXPECT_FALSE(WantsOpenMetrics("*/*"));
}

TEST(MetricsText, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  // A target named with terminal escapes (ESC, C1 CSI, a bidi override) shows them as text,
  // as every other output does: the label holds a backslash, written \\.
  EXPECT_EQ(EscapeLabelValue("evil\x1b]0;pwned\x07"), "evil\\\\x1b]0;pwned\\\\x07");
  EXPECT_EQ(EscapeLabelValue("a\u009b31mb\u202e"), "a\\\\u009b31mb\\\\u202e");
}

}  // namespace
}  // namespace looptrace
