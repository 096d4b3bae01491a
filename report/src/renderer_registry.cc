#include "looptrace/report/render.h"

namespace looptrace {

// Each renderer's factory, defined next to it.
std::unique_ptr<Renderer> MakeTextRenderer(const RenderOptions& options);
std::unique_ptr<Renderer> MakeJsonRenderer(const RenderOptions& options);
std::unique_ptr<Renderer> MakeChromeRenderer(const RenderOptions& options);
std::unique_ptr<Renderer> MakeHtmlRenderer(const RenderOptions& options);
std::unique_ptr<Renderer> MakeFoldedRenderer(const RenderOptions& options);

const std::vector<RendererEntry>& RendererRegistry() {
  static const std::vector<RendererEntry> kRenderers = {
      {"text", "text report for a terminal (default)", MakeTextRenderer},
      {"json", "JSON lines: one record per message, report, summary (Matrix keys first)", MakeJsonRenderer, true},
      {"chrome", "Chrome trace event JSON for Perfetto UI / chrome://tracing", MakeChromeRenderer, true},
      {"html", "one self-contained HTML page: timeline, frame charts, call trees", MakeHtmlRenderer},
      {"folded", "folded stacks (FlameGraph, speedscope): one line per stack, weight in microseconds",
       MakeFoldedRenderer},
  };
  return kRenderers;
}

const RendererEntry* FindRenderer(std::string_view format) {
  for (const auto& entry : RendererRegistry())
    if (entry.name == format) return &entry;
  return nullptr;
}

std::unique_ptr<Renderer> MakeRenderer(std::string_view format, const RenderOptions& options) {
  const RendererEntry* entry = FindRenderer(format);
  return entry ? entry->make(options) : nullptr;
}

std::string RendererNames() {
  std::string names;
  for (const auto& entry : RendererRegistry()) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

}  // namespace looptrace
