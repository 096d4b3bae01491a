#include "looptrace/report/html_renderer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "html_assets.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {

std::string EscapeJsonForScript(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 16);
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xe2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
               (json[i + 2] == '\xa8' || json[i + 2] == '\xa9')) {
      out += json[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHtml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

using nlohmann::json;

// Message cost histogram edges (ns), shared by every thread: the page draws these
// buckets for all messages, also those not embedded one by one.
constexpr std::array<uint64_t, 18> kCostEdgesNs = {
    0,           100'000,     250'000,       500'000,       1'000'000,     2'000'000,
    4'000'000,   8'000'000,   16'000'000,    32'000'000,    64'000'000,    128'000'000,
    256'000'000, 512'000'000, 1'000'000'000, 2'000'000'000, 5'000'000'000, 10'000'000'000};

size_t CostBucket(uint64_t cost_ns) {
  auto it = std::upper_bound(kCostEdgesNs.begin(), kCostEdgesNs.end(), cost_ns);
  return static_cast<size_t>(it - kCostEdgesNs.begin()) - 1;
}

bool NotableFrame(const FrameRecord& f) {
  return f.deadline_missed || f.slow || f.frozen || !f.tree.empty() || !f.finished;
}

// Which records the page gets one by one; the rest go into per-bucket summaries.
struct Selection {
  std::vector<bool> keep;
  size_t kept = 0;
};

template <typename T, typename Less>
Selection Select(const std::vector<T>& items, size_t budget, Less less) {
  Selection s;
  s.keep.assign(items.size(), items.size() <= budget);
  if (items.size() <= budget) {
    s.kept = items.size();
    return s;
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return less(items[a], items[b]); });
  for (size_t i = 0; i < budget; ++i) s.keep[order[i]] = true;
  s.kept = budget;
  return s;
}

class HtmlRenderer : public Renderer {
 public:
  HtmlRenderer(RenderOptions options, HtmlOptions html) : options_(options), html_(html) {}

  void Render(const Report& report, std::ostream& out) const override {
    const MessagesReport& m = report.messages;
    const FramesReport& f = report.frames;
    Selection messages = Select(m.messages, html_.max_messages, [](const Message& a, const Message& b) {
      return std::tuple(b.cost_ns(), a.begin_ns, a.tid) < std::tuple(a.cost_ns(), b.begin_ns, b.tid);
    });
    Selection frames = Select(f.frames, html_.max_frames, [](const FrameRecord& a, const FrameRecord& b) {
      return std::tuple(!NotableFrame(a), b.total_ns(), a.begin_ns, a.tid) <
             std::tuple(!NotableFrame(b), a.total_ns(), b.begin_ns, b.tid);
    });

    // The JSON renderer draws the records: one source of truth for both formats. Only a
    // long session's timeline is thinned (the records not kept are summarised in meta).
    std::ostringstream lines;
    auto json_renderer = MakeRenderer("json", options_);
    if (messages.kept == m.messages.size() && frames.kept == f.frames.size()) {
      json_renderer->Render(report, lines);
    } else {
      Report thinned = report;
      thinned.messages.messages.clear();
      for (size_t i = 0; i < m.messages.size(); ++i)
        if (messages.keep[i]) thinned.messages.messages.push_back(m.messages[i]);
      thinned.frames.frames.clear();
      std::vector<size_t> new_index(f.frames.size(), SIZE_MAX);
      for (size_t i = 0; i < f.frames.size(); ++i) {
        if (!frames.keep[i]) continue;
        new_index[i] = thinned.frames.frames.size();
        thinned.frames.frames.push_back(f.frames[i]);
      }
      thinned.frames.worst.clear();
      for (size_t i : f.worst)
        if (new_index[i] != SIZE_MAX) thinned.frames.worst.push_back(new_index[i]);
      json_renderer->Render(thinned, lines);
    }

    const SessionInfo& s = report.session;
    // The command comes from the target: control characters as visible escapes, so the
    // page is also safe to print on a terminal.
    const std::string title = report.matrix.enabled
                                  ? fmt::format("looptrace report: Matrix issues ({})", report.matrix.issues)
                                  : fmt::format("looptrace report: pid {} ({})", s.pid,
                                                s.command.empty() ? "?" : EscapeForTerminal(s.command));
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        // Nothing may be fetched: the browser enforces it.
        << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
           "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
        << "<meta name=\"generator\" content=\"looptrace\">\n"
        << "<title>" << EscapeHtml(title) << "</title>\n"
        << "<style>\n"
        << html_assets::kReportCss << "</style>\n</head>\n<body>\n"
        << "<noscript><p class=\"noscript\">This report is drawn by its inline script. Enable "
           "JavaScript, or use <code>looptrace report RECORDING -f text</code>.</p></noscript>\n"
        << "<main id=\"report\" aria-busy=\"true\"><p class=\"loading\">Drawing the report&hellip;</p></main>\n"
        << "<script type=\"application/x-ndjson\" id=\"" << kHtmlDataId << "\">\n"
        << EscapeJsonForScript(lines.str()) << "</script>\n"
        << "<script type=\"application/json\" id=\"" << kHtmlMetaId << "\">"
        << EscapeJsonForScript(EscapeJsonForTerminal(
               Meta(report, messages, frames).dump(-1, ' ', false, json::error_handler_t::replace)))
        << "</script>\n"
        << "<script>\n"
        << html_assets::kReportJs << "</script>\n</body>\n</html>\n";
  }

  // The dump's text as a page (nothing to draw: it is one moment), its JSON record with it.
  void RenderDump(const ThreadDump& dump, std::ostream& out) const override {
    const std::string title = fmt::format("looptrace snapshot: pid {} ({})", dump.pid,
                                          dump.command.empty() ? "?" : EscapeForTerminal(dump.command));
    out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        << "<meta name=\"generator\" content=\"looptrace\">\n"
        << "<title>" << EscapeHtml(title) << "</title>\n"
        << "<style>\n"
        << html_assets::kReportCss << "</style>\n</head>\n<body>\n<main id=\"snapshot\">\n<h1>" << EscapeHtml(title)
        << "</h1>\n<pre>" << EscapeHtml(EscapeForTerminalKeepLayout(RenderThreadDumpText(dump))) << "</pre>\n</main>\n"
        << "<script type=\"application/json\" id=\"looptrace-thread-dump\">"
        << EscapeJsonForScript(EscapeJsonForTerminal(RenderThreadDumpJson(dump))) << "</script>\n</body>\n</html>\n";
  }

 private:
  // What the page needs beyond the JSON records: counter descriptions, what the profile
  // could see, and the summaries of records not embedded one by one.
  json Meta(const Report& report, const Selection& messages, const Selection& frames) const {
    json meta;
    meta["format"] = "looptrace-html";
    meta["version"] = 1;
    meta["top_n"] = options_.top_n;
    json counters = json::array();
    for (int i = 0; i < kStatCount; ++i) {
      auto id = static_cast<StatId>(i);
      counters.push_back({{"name", StatName(id)},
                          {"severity", SeverityName(StatSeverityOf(id))},
                          {"description", StatDescription(id)}});
    }
    meta["counters"] = counters;
    const std::set<std::string> roles(report.session.probe_roles.begin(), report.session.probe_roles.end());
    meta["coverage"] = {{"messages", report.messages.enabled},
                        {"frames", report.frames.enabled},
                        {"roles", roles},
                        {"probes", report.session.probe_roles.size()}};

    const MessagesReport& m = report.messages;
    const FramesReport& f = report.frames;
    const uint64_t begin = report.session.begin_ns;
    const uint64_t bucket_ns =
        std::max<uint64_t>(1, (report.session.duration_ns() + html_.buckets - 1) / std::max<size_t>(1, html_.buckets));
    auto bucket_of = [&](uint64_t ts) { return ts > begin ? (ts - begin) / bucket_ns : 0; };
    struct Agg {
      uint64_t count = 0, total = 0, max = 0, flagged = 0;
    };
    std::map<std::pair<uint32_t, uint64_t>, Agg> message_buckets, frame_buckets;
    for (size_t i = 0; i < m.messages.size(); ++i) {
      if (messages.keep[i]) continue;
      const Message& msg = m.messages[i];
      Agg& a = message_buckets[{msg.tid, bucket_of(msg.begin_ns)}];
      ++a.count;
      a.total += msg.cost_ns();
      a.max = std::max(a.max, msg.cost_ns());
    }
    for (size_t i = 0; i < f.frames.size(); ++i) {
      if (frames.keep[i]) continue;
      const FrameRecord& fr = f.frames[i];
      Agg& a = frame_buckets[{fr.tid, bucket_of(fr.vsync_ns)}];
      ++a.count;
      a.total += fr.total_ns();
      a.max = std::max(a.max, fr.total_ns());
      a.flagged += fr.deadline_missed ? 1 : 0;
    }
    json mb = json::array(), fb = json::array();
    for (const auto& [key, a] : message_buckets) mb.push_back({key.first, key.second, a.count, a.total, a.max});
    for (const auto& [key, a] : frame_buckets)
      fb.push_back({key.first, key.second, a.count, a.total, a.max, a.flagged});
    meta["timeline"] = {{"messages_total", m.messages.size()},
                        {"messages_embedded", messages.kept},
                        {"frames_total", f.frames.size()},
                        {"frames_embedded", frames.kept},
                        {"bucket_ns", bucket_ns},
                        {"message_buckets_fields", {"tid", "bucket", "count", "total_ns", "max_ns"}},
                        {"message_buckets", mb},
                        {"frame_buckets_fields", {"tid", "bucket", "count", "total_ns", "max_total_ns", "janky"}},
                        {"frame_buckets", fb}};

    std::map<uint32_t, std::vector<uint64_t>> histogram;
    for (const Message& msg : m.messages) {
      auto& counts = histogram[msg.tid];
      if (counts.empty()) counts.assign(kCostEdgesNs.size(), 0);
      ++counts[CostBucket(msg.cost_ns())];
    }
    json threads = json::array();
    for (const auto& [tid, counts] : histogram) threads.push_back({{"tid", tid}, {"counts", counts}});
    meta["cost_histogram"] = {{"edges_ns", kCostEdgesNs}, {"threads", threads}};
    return meta;
  }

  RenderOptions options_;
  HtmlOptions html_;
};

}  // namespace

std::unique_ptr<Renderer> MakeHtmlRenderer(RenderOptions options, HtmlOptions html) {
  return std::make_unique<HtmlRenderer>(options, html);
}

std::unique_ptr<Renderer> MakeHtmlRenderer(const RenderOptions& options) {
  return MakeHtmlRenderer(options, HtmlOptions{});
}

}  // namespace looptrace
