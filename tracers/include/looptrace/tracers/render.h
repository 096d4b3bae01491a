// Renderers turn a Report into text or JSON lines on any std::ostream.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "looptrace/tracers/report.h"

namespace looptrace {

enum class OutputFormat { kText, kJson, kChrome, kHtml };

std::optional<OutputFormat> OutputFormatFromName(std::string_view name);

struct RenderOptions {
  size_t top_n = 10;  // rows in "slowest" / "by name" tables
};

class Renderer {
 public:
  virtual ~Renderer() = default;
  virtual void Render(const Report& report, std::ostream& out) const = 0;
};

std::unique_ptr<Renderer> MakeRenderer(OutputFormat format, RenderOptions options = {});

// "0.123 ms", "12.3 ms", "1.234 s": fixed precision so goldens are stable.
std::string FormatDuration(uint64_t ns);

}  // namespace looptrace
