// The HTML report: one self-contained page (styles and script inline, no network) that
// draws the JSON renderer's records (one source of truth) as a timeline, frame charts,
// tables and call trees.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "looptrace/report/render.h"

namespace looptrace {

struct HtmlOptions {
  // Long sessions: at most this many "message" / "frame" records are embedded for the
  // timeline (the costliest, janky frames first); the rest are summarised per time bucket.
  // Summary records (by name, per thread, FPS, stats) always cover every message and frame.
  size_t max_messages = 20000;
  size_t max_frames = 10000;
  size_t buckets = 2000;  // time buckets of the summarised rest, over the session
};

std::unique_ptr<Renderer> MakeHtmlRenderer(RenderOptions options, HtmlOptions html = {});

// JSON text made safe to sit inside <script>...</script>: '<', '>', '&', U+2028 and U+2029
// become \uXXXX escapes. They only occur inside JSON strings, so the value is unchanged
// (and "</script>" or "<!--" can never appear).
std::string EscapeJsonForScript(std::string_view json);

// Text made safe for HTML element content and attribute values.
std::string EscapeHtml(std::string_view text);

// The ids of the embedded blocks, for tests that read the page.
inline constexpr std::string_view kHtmlDataId = "looptrace-data";  // JSON lines (application/x-ndjson)
inline constexpr std::string_view kHtmlMetaId = "looptrace-meta";  // one JSON object

}  // namespace looptrace
