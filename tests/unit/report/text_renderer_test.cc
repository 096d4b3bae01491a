// The text report, piece by piece: what a person reads first.
#include <gtest/gtest.h>

#include <sstream>

#include "looptrace/report/render.h"
#include "looptrace/report/report.h"

namespace looptrace {
namespace {

std::string Text(const Report& report) {
  std::ostringstream out;
  MakeRenderer("text", RenderOptions{})->Render(report, out);
  return out.str();
}

Report OneSlowMessage() {
  Report r;
  r.session.pid = 100;
  r.session.command = "app";
  r.session.begin_ns = 1'000'000'000;
  r.session.end_ns = 3'000'000'000;
  r.evil_threshold_ns = 100'000'000;
  EvilMethodReport e;
  e.message.tid = 100;
  e.message.begin_ns = 1'100'000'000;
  e.message.end_ns = 1'400'000'000;
  r.evil_methods.push_back(e);
  return r;
}

// The fix for incomplete stacks leads, on a short line of its own; the reasons follow, the
// most frequent first, a few of them.
TEST(TextReport, TheHintForIncompleteStacksComesFirstOnItsOwnLine) {
  Report r = OneSlowMessage();
  SampledCallTree& tree = r.evil_methods[0].sampled;
  SampledNode root;
  root.node.cost_ns = 300'000'000;
  tree.nodes.push_back(root);
  tree.span_ns = 300'000'000;
  tree.samples_on_cpu = 300;
  tree.sample_hz = 997;
  tree.walk_stops = {{"frame pointer invalid after g_main_loop_run", 2},
                     {"libglib-2.0.so.0 keeps no frame pointers (--dwarf-unwind unwinds it)", 120},
                     {"libgtk-3.so.0 keeps no frame pointers (--dwarf-unwind unwinds it)", 40},
                     {"a", 1},
                     {"b", 1},
                     {"c", 1}};
  const std::string text = Text(r);
  const std::string hint =
      "    hint: --dwarf-unwind completes 160 of 165 incomplete stacks (libglib-2.0.so.0, libgtk-3.so.0 keep no frame "
      "pointers)\n";
  const size_t at = text.find(hint);
  ASSERT_NE(at, std::string::npos) << text;
  const size_t stops = text.find("    incomplete stacks: 165 (libglib-2.0.so.0 keeps no frame pointers");
  ASSERT_NE(stops, std::string::npos) << text;
  EXPECT_LT(at, stops);
  EXPECT_NE(text.find(", 2 other reasons)\n"), std::string::npos) << text;
  // Already unwound with DWARF: nothing to suggest.
  tree.dwarf = true;
  EXPECT_EQ(Text(r).find("hint: --dwarf-unwind"), std::string::npos);
}

// A thread is named where its number is shown, once its name is known.
TEST(TextReport, ThreadsAreNamedNextToTheirNumber) {
  Report r = OneSlowMessage();
  EXPECT_NE(Text(r).find("] message on thread 100: "), std::string::npos);
  r.thread_names[100] = "gmain";
  EXPECT_NE(Text(r).find("] message on thread 100 \"gmain\": "), std::string::npos) << Text(r);
}

// GLib's named callback inside its g_main_context_dispatch message: one evil method, the
// callback shown nested in it.
TEST(TextReport, NestedSlowMessagesAreShownInTheirOuterOne) {
  Report r = OneSlowMessage();
  Message inner;
  inner.tid = 100;
  inner.begin_ns = 1'101'000'000;
  inner.end_ns = 1'391'000'000;
  inner.depth = 1;
  inner.name = "on_refresh";
  r.evil_methods[0].nested.push_back(inner);
  const std::string text = Text(r);
  EXPECT_NE(text.find("evil methods: 1 message of at least 100.00 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("    nested: on_refresh: 290.00 ms wall, began +0.101000 s\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace looptrace
