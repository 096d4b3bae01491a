// Renderers turn a Report into text, JSON lines, a Chrome trace, ... on any std::ostream.
// Output formats are found by name in the renderer registry (renderer_registry.cc).
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/report/report.h"
#include "looptrace/report/thread_dump.h"

namespace looptrace {

struct RenderOptions {
  size_t top_n = 10;     // rows in "slowest" / "by name" tables
  bool verbose = false;  // -v: also the filter counters (hits filtered in BPF on purpose)
  // -v/--full: every section of the text report whole; otherwise its short view
  // (short_view.h), what fits on a screen or two.
  bool full = false;
  // -f folded: each slow message's, frame's and startup's stacks ("slow"), or the session's
  // ("session"); from their sampled trees ("sampled") or method-beat trees ("instrumented").
  std::string folded_scope = "slow";
  std::string folded_source = "sampled";
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual void Render(const Report& report, std::ostream& out) const = 0;
  // `looptrace snapshot`'s thread dump in the same format.
  virtual void RenderDump(const ThreadDump& dump, std::ostream& out) const = 0;
};

struct RendererEntry {
  std::string_view name;         // the -f value
  std::string_view description;  // one line for --help
  std::function<std::unique_ptr<Renderer>(const RenderOptions&)> make;
  bool json = false;  // the output is JSON (its strings escaped for a terminal inside the JSON)
};

// Every output format; adding one is its file plus one line in renderer_registry.cc.
const std::vector<RendererEntry>& RendererRegistry();
// Null for an unknown name.
const RendererEntry* FindRenderer(std::string_view format);
std::unique_ptr<Renderer> MakeRenderer(std::string_view format, const RenderOptions& options = {});
// "text, json, chrome"
std::string RendererNames();

// "0.123 ms", "12.3 ms", "1.234 s": fixed precision so goldens are stable.
std::string FormatDuration(uint64_t ns);

// A /proc state letter in words: 'S' -> "sleeping", 'D' -> "uninterruptible (disk I/O)".
std::string ThreadStateText(char state);

}  // namespace looptrace
