// The text report, piece by piece: what a person reads first.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "looptrace/report/render.h"
#include "looptrace/report/report.h"
#include "looptrace/report/short_view.h"

namespace looptrace {
namespace {

// The whole report (-v/--full).
std::string Text(const Report& report) {
  std::ostringstream out;
  RenderOptions full;
  full.full = true;
  MakeRenderer("text", full)->Render(report, out);
  return out.str();
}

// The default view.
std::string Short(const Report& report) {
  std::ostringstream out;
  MakeRenderer("text", RenderOptions{})->Render(report, out);
  return out.str();
}

size_t Lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

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

NamedCallNode Node(uint32_t depth, uint64_t cost_ns, std::string name) {
  NamedCallNode n;
  n.node.depth = depth;
  n.node.cost_ns = cost_ns;
  n.name = std::move(name);
  return n;
}

// Nodes under 5% of the root go with their subtrees; one node per parent counts them.
TEST(ShortView, TreesLoseTheirSmallNodesCountedUnderTheirParent) {
  std::vector<NamedCallNode> tree = {Node(0, 1000, "root"), Node(1, 600, "big"),   Node(2, 30, "tiny"),
                                     Node(3, 20, "tinier"), Node(2, 500, "inner"), Node(1, 40, "small"),
                                     Node(1, 300, "other")};
  EXPECT_EQ(TrimTree(tree, 0.05), 3u);
  std::vector<std::string> names;
  for (const auto& n : tree) names.push_back(std::string(2 * n.node.depth, ' ') + n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"root", "  big", "    inner", "    2 smaller frames", "  other",
                                             "  1 smaller frame"}));
  EXPECT_EQ(tree[3].node.cost_ns, 30u);  // the cut subtree's root cost, its children inside it
  EXPECT_EQ(tree[5].node.cost_ns, 40u);
}

Report ManySlowMessages(size_t n) {
  Report r = OneSlowMessage();
  r.evil_methods.clear();
  for (size_t i = 0; i < n; ++i) {
    EvilMethodReport e;
    e.message.tid = 100;
    e.message.begin_ns = 1'100'000'000 + i * 10'000'000;
    e.message.end_ns = e.message.begin_ns + 100'000'000 + i * 1'000'000;
    e.message.name = "m" + std::to_string(i);
    r.evil_methods.push_back(e);
  }
  return r;
}

// The default report keeps the slowest three evil methods and says, on its last line, what
// -v/--full adds; --full is the whole report.
TEST(ShortView, KeepsTheSlowestEvilMethodsAndNamesWhatItCut) {
  const Report r = ManySlowMessages(8);
  const std::string text = Short(r);
  EXPECT_NE(text.find("evil methods: 8 messages of at least 100.00 ms (the slowest 3 below)\n"), std::string::npos)
      << text;
  for (const char* kept : {"] m5 on", "] m6 on", "] m7 on"}) EXPECT_NE(text.find(kept), std::string::npos) << text;
  EXPECT_EQ(text.find("] m4 on"), std::string::npos) << text;
  const std::string last = "\n1 more section with -v/--full or --html: 5 more evil methods\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last) << text;
  const std::string full = Text(r);
  EXPECT_NE(full.find("] m0 on"), std::string::npos);
  EXPECT_EQ(full.find("more section"), std::string::npos);
  EXPECT_LT(Lines(text), Lines(full));
}

// Nothing wrong: one line. A loss: the whole table.
TEST(ShortView, DataQualityIsOneLineUnlessSomethingIsWrong) {
  Report r = OneSlowMessage();
  r.stats.Add(StatId::method_names_unknown, 24);
  EXPECT_NE(Short(r).find("\ndata quality: complete (no losses counted; method_names_unknown 24)\n"), std::string::npos)
      << Short(r);
  r.stats.Add(StatId::records_full, 3);
  const std::string text = Short(r);
  EXPECT_NE(text.find("\ndata quality\n"), std::string::npos) << text;
  EXPECT_NE(text.find("records_full"), std::string::npos) << text;
  EXPECT_NE(text.find("method_names_unknown"), std::string::npos) << text;
}

// The fix for incomplete stacks is the report's first hint, on a line of its own under the
// header; the table follows, with the reasons in one line.
TEST(ShortView, TheDwarfHintLeadsTheReport) {
  Report r = OneSlowMessage();
  SampledCallTree& tree = r.evil_methods[0].sampled;
  SampledNode root;
  root.node.cost_ns = 300'000'000;
  tree.nodes.push_back(root);
  tree.span_ns = 300'000'000;
  tree.walk_stops = {{"libglib-2.0.so.0 keeps no frame pointers (--dwarf-unwind unwinds it)", 120}, {"a", 3}};
  r.stats.Add(StatId::stack_walk_truncated, 123);
  const std::string text = Short(r);
  const std::string hint =
      "\nhint: --dwarf-unwind completes 120 of 123 incomplete stacks (libglib-2.0.so.0 keeps no frame pointers)\n";
  const size_t at = text.find(hint);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_LT(at, text.find("evil methods"));
  EXPECT_EQ(text.find("    hint:"), std::string::npos) << text;  // once, not per tree
  EXPECT_NE(text.find("\n  incomplete stacks: 123 (libglib-2.0.so.0 keeps no frame pointers (--dwarf-unwind "
                      "unwinds it) 120, a 3)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stack_walk_truncated"), std::string::npos) << text;
}

// A stall keeps the stalled thread (its innermost frames, no kernel stack); the other
// threads' dumps are --full's.
TEST(ShortView, StallsKeepTheStalledThreadAlone) {
  Report r = OneSlowMessage();
  StallReport s;
  s.message = r.evil_methods[0].message;
  s.snapshot.tid = 100;
  ThreadSnapshot main, other;
  main.tid = 100;
  main.name = "app";
  main.kernel_stack = {"__schedule"};
  for (int i = 0; i < 20; ++i) main.user_stack.push_back("frame" + std::to_string(i));
  other.tid = 101;
  other.name = "worker";
  s.snapshot.threads = {main, other};
  s.snapshot.memory_kb = {{"VmRSS", 100}};
  r.stalls.push_back(s);
  const std::string text = Short(r);
  EXPECT_NE(text.find("\"app\" tid=100"), std::string::npos) << text;
  EXPECT_NE(text.find("native: #07 frame7\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("frame8"), std::string::npos) << text;
  EXPECT_EQ(text.find("worker"), std::string::npos) << text;
  EXPECT_EQ(text.find("kernel: __schedule"), std::string::npos) << text;
  EXPECT_EQ(text.find("Memory:"), std::string::npos) << text;
  EXPECT_NE(text.find("1 other thread in the stall dumps, 12 more native frames"), std::string::npos) << text;
  EXPECT_NE(Text(r).find("worker"), std::string::npos);
}

// A session without messages (a flagless JVM): the three busiest threads, five top methods
// each; the rest are --full's, and the last line says so.
TEST(ShortView, TheSessionProfileKeepsTheBusiestThreadsAndTheirTopMethods) {
  Report r;
  r.session.pid = 100;
  r.session.begin_ns = 1'000'000'000;
  r.session.end_ns = 3'000'000'000;
  for (uint32_t t = 0; t < 5; ++t) {
    ThreadProfile thread;
    thread.tid = 100 + t;
    thread.samples = 100 - t;  // most samples first, as the report orders them
    for (int m = 0; m < 8; ++m) thread.top.push_back({"T" + std::to_string(t) + ".m" + std::to_string(m), 10, 10});
    SampledNode root;
    root.node.cost_ns = 1'000'000'000;
    thread.tree.nodes.push_back(root);
    thread.tree.sample_hz = 99;
    r.session_profile.threads.push_back(thread);
  }
  const std::string text = Short(r);
  EXPECT_NE(text.find("T2.m4"), std::string::npos) << text;
  EXPECT_EQ(text.find("T2.m5"), std::string::npos) << text;
  EXPECT_EQ(text.find("T3.m0"), std::string::npos) << text;
  EXPECT_NE(text.find("2 more profiled threads, 9 more top methods"), std::string::npos) << text;
  const std::string full = Text(r);
  EXPECT_NE(full.find("T4.m7"), std::string::npos) << full;
}

}  // namespace
}  // namespace looptrace
