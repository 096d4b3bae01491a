// -f folded: one line per stack, "frame;frame;...;leaf WEIGHT" with the weight in
// microseconds, outermost frame first: the format FlameGraph's flamegraph.pl and speedscope
// read. Which stacks (each slow span's, or the session's; sampled or instrumented) the
// sampled_tree tracer chose (--folded-scope, --folded-source).
#include <cmath>

#include "looptrace/report/render.h"
#include "looptrace/util/text_safety.h"

namespace looptrace {
namespace {

// Frame names may hold anything a program names a function with: ';' separates frames and
// a line ends the stack, so both are replaced; control bytes are escaped (the output may be
// a terminal).
std::string Clean(const std::string& name) {
  std::string out = EscapeForTerminal(name);
  for (char& c : out) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

class FoldedRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override {
    for (const FoldedStack& stack : report.folded) {
      if (stack.frames.empty() || stack.weight_ns == 0) continue;
      std::string line;
      for (const std::string& frame : stack.frames) {
        if (!line.empty()) line += ';';
        line += Clean(frame);
      }
      // Never 0: a stack that was seen keeps at least one microsecond.
      const uint64_t us = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(stack.weight_ns / 1000.0)));
      out << line << ' ' << us << '\n';
    }
  }
};

}  // namespace

std::unique_ptr<Renderer> MakeFoldedRenderer(const RenderOptions&) { return std::make_unique<FoldedRenderer>(); }

}  // namespace looptrace
