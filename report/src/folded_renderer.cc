// -f folded: one line per stack, "frame;frame;...;leaf WEIGHT" with the weight in
// microseconds, outermost frame first: the format FlameGraph's flamegraph.pl and speedscope
// read. A projection of the report's trees (RenderOptions::folded_scope, folded_source): each
// slow message's, frame's and startup's sampled or instrumented tree, or the session's.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "looptrace/report/render.h"
#include "looptrace/util/text_safety.h"
#include "matrix_render.h"

namespace looptrace {
namespace {

using Stacks = std::map<std::vector<std::string>, uint64_t>;

// A span's label as the root frame of its folded stacks.
std::string Label(const std::string& what, uint64_t ts_ns, uint64_t base_ns) {
  return fmt::format("[{} +{:.6f}s]", what, ts_ns >= base_ns ? (ts_ns - base_ns) / 1e9 : 0.0);
}

std::string MessageName(const Message& m) {
  if (!m.name.empty()) return "message " + m.name;
  return m.msg_id ? fmt::format("message {}", *m.msg_id) : "message";
}

// A sampled tree's stacks under `label`.
void AddSampled(const std::string& label, const SampledCallTree& tree, std::vector<FoldedStack>* out) {
  for (const FoldedStack& f : tree.folded) {
    FoldedStack line;
    if (!label.empty()) line.frames.push_back(label);
    line.frames.insert(line.frames.end(), f.frames.begin(), f.frames.end());
    line.weight_ns = f.weight_ns;
    out->push_back(std::move(line));
  }
  // On-CPU time no sample caught stays with the span itself.
  if (!label.empty() && tree.unsampled_on_cpu_ns) out->push_back({{label}, tree.unsampled_on_cpu_ns});
}

// An instrumented tree's self times as folded stacks (root = `label`).
void AddInstrumented(const std::string& label, const std::vector<NamedCallNode>& tree, Stacks* out) {
  std::vector<std::string> path;
  for (size_t i = 0; i < tree.size(); ++i) {
    const NamedCallNode& n = tree[i];
    path.resize(n.node.depth);
    path.push_back(n.node.depth == 0 ? label : n.name);
    uint64_t children = 0;
    for (size_t j = i + 1; j < tree.size() && tree[j].node.depth > n.node.depth; ++j)
      if (tree[j].node.depth == n.node.depth + 1) children += tree[j].node.cost_ns;
    const uint64_t self = n.node.cost_ns > children ? n.node.cost_ns - children : 0;
    if (!self) continue;
    std::vector<std::string> frames;
    for (const auto& f : path)
      if (!f.empty()) frames.push_back(f);
    if (frames.empty()) frames.push_back("[message]");
    (*out)[frames] += self;
  }
}

// Calls `visit(label, instrumented tree, sampled tree)` for each slow span of the report.
template <typename Visit>
void ForEachSlowSpan(const Report& report, bool instrumented, Visit visit) {
  const uint64_t base = report.session.begin_ns;
  for (const EvilMethodReport& e : report.evil_methods)
    if (!instrumented || e.has_beats) visit(Label(MessageName(e.message), e.message.begin_ns, base), e.tree, e.sampled);
  for (const FrameRecord& f : report.frames.frames)
    visit(Label(fmt::format("frame {}", f.frame_id), f.begin_ns, base), f.tree, f.sampled);
  const StartupReport& s = report.startup;
  if (s.app_create_begin_ns) visit(Label("startup", *s.app_create_begin_ns, base), s.tree, s.sampled);
  for (const WarmStart& w : s.warm_starts)
    visit(Label("warm start " + w.activity, w.launch_ns, base), w.tree, w.sampled);
}

// The stacks the options choose.
std::vector<FoldedStack> Choose(const Report& report, const RenderOptions& options) {
  std::vector<FoldedStack> out;
  const bool session = options.folded_scope == "session";
  // Matrix issues have instrumented trees only (their `stack`), whatever the source says.
  if (report.matrix.enabled) return MatrixFolded(report.matrix, session);
  if (options.folded_source == "instrumented") {
    Stacks merged;
    ForEachSlowSpan(report, true,
                    [&](const std::string& label, const std::vector<NamedCallNode>& tree, const SampledCallTree&) {
                      if (tree.empty()) return;
                      if (session) {
                        AddInstrumented("", tree, &merged);
                        return;
                      }
                      Stacks one;
                      AddInstrumented(label, tree, &one);
                      for (auto& [frames, ns] : one) out.push_back({frames, ns});
                    });
    for (auto& [frames, ns] : merged) out.push_back({frames, ns});
    return out;
  }
  if (session) return report.session_stacks;
  ForEachSlowSpan(report, false,
                  [&](const std::string& label, const std::vector<NamedCallNode>&, const SampledCallTree& sampled) {
                    AddSampled(label, sampled, &out);
                  });
  // A session without messages (a JVM without method probes) has no slow span: its whole
  // session is what there is to draw.
  if (out.empty() && !report.session_profile.threads.empty()) return report.session_stacks;
  return out;
}

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
  explicit FoldedRenderer(RenderOptions options) : options_(std::move(options)) {}

  void Render(const Report& report, std::ostream& out) const override {
    for (const FoldedStack& stack : Choose(report, options_)) {
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

  // One line per thread, as py-spy's dump would fold it: the thread, its stack outermost
  // first, the kernel's under it; weight 1 (a dump is one moment).
  void RenderDump(const ThreadDump& dump, std::ostream& out) const override {
    for (const ThreadSnapshot& thread : dump.snapshot.threads) {
      std::string line = Clean(fmt::format("{} (tid {})", thread.name, thread.tid));
      for (auto frame = thread.user_stack.rbegin(); frame != thread.user_stack.rend(); ++frame)
        line += ';' + Clean(*frame);
      for (auto frame = thread.kernel_stack.rbegin(); frame != thread.kernel_stack.rend(); ++frame)
        line += ';' + Clean(*frame) + "_[k]";
      out << line << " 1\n";
    }
  }

 private:
  RenderOptions options_;
};

}  // namespace

std::unique_ptr<Renderer> MakeFoldedRenderer(const RenderOptions& options) {
  return std::make_unique<FoldedRenderer>(options);
}

}  // namespace looptrace
