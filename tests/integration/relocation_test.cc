// Probe relocation end to end (issue 16 item 3): an -O2 -fomit-frame-pointer
// -finstrument-functions event loop whose hooks all start with single-stepped
// instructions (tests/fixtures/hooked_loop). With relocation the probes fire on call
// sites, after calls and later in entry blocks; the messages, frames and call trees must
// be exactly those of the exact entries, and both must match the loop's truth.
#include <gtest/gtest.h>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

std::string HookedLoop() { return std::string(LOOPTRACE_BINARY_DIR) + "/tests/fixtures/hooked_loop"; }
std::string HookedProfile() {
  return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/fixtures/hooked_loop/hooked_loop.profile";
}

constexpr int64_t kToleranceNs = 200'000;

// The placement line printed under a probe by `looptrace probes` ("" if none).
std::string PlacementOf(const std::string& listing, const std::string& role) {
  std::istringstream in(listing);
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    if (found)
      return line.find("moved off the entry") != std::string::npos || line.find("entry kept") != std::string::npos
                 ? line
                 : "";
    found = line.find(" " + role + " ") != std::string::npos;
  }
  return "";
}

class RelocationTest : public BpfTest {
 protected:
  struct Run {
    std::vector<json> out, truth;
  };
  Run Trace(bool exact) {
    const std::string out = dir_ / (exact ? "exact.json" : "moved.json");
    const std::string truth = dir_ / (exact ? "exact-truth.jsonl" : "moved-truth.jsonl");
    std::vector<std::string> argv = {Looptrace(), "run", "--profile", HookedProfile(),    "-f",
                                     "json",      "-o",  out,         "--evil-threshold", "1.5"};
    if (exact) argv.push_back("--exact-entry");
    for (const std::string& a :
         {std::string("--"), HookedLoop(), std::string("--messages"), std::string("60"), std::string("--truth"), truth})
      argv.push_back(a);
    auto r = RunCommand(argv, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (exact)
      EXPECT_NE(r.err.find("single-steps"), std::string::npos) << r.err;
    else
      EXPECT_EQ(r.err.find("single-steps"), std::string::npos) << r.err;
    return {ReadJsonLines(out), ReadJsonLines(truth)};
  }

  // Messages match the truth one to one (id, name, cost within the tolerance).
  static void ExpectMessagesMatchTruth(const Run& run) {
    auto messages = OfType(run.out, "message");
    auto truth = OfType(run.truth, "message");
    ASSERT_EQ(messages.size(), truth.size());
    int64_t max_error = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
      SCOPED_TRACE(truth[i].dump());
      EXPECT_EQ(messages[i]["msg_id"], truth[i]["id"]);
      EXPECT_EQ(messages[i]["name"], truth[i]["name"]);
      const int64_t error =
          std::max(WindowError(messages[i], truth[i], "begin"), WindowError(messages[i], truth[i], "end"));
      EXPECT_LE(error, kToleranceNs);
      max_error = std::max(max_error, error);
    }
    std::cout << truth.size() << " messages, max timestamp error " << max_error << " ns\n";
  }

  static void ExpectFramesMatchTruth(const Run& run) {
    auto frames = OfType(run.out, "frame");
    auto truth = OfType(run.truth, "frame");
    ASSERT_EQ(frames.size(), truth.size());
    for (size_t i = 0; i < truth.size(); ++i) {
      SCOPED_TRACE(truth[i].dump().substr(0, 200));
      EXPECT_EQ(frames[i]["frame_id"], truth[i]["frame_id"]);
      EXPECT_LE(WindowError(frames[i], truth[i], "begin"), kToleranceNs);
      EXPECT_LE(WindowError(frames[i], truth[i], "end"), kToleranceNs);
      ASSERT_EQ(frames[i]["phases"].size(), truth[i]["phases"].size());
      for (size_t p = 0; p < truth[i]["phases"].size(); ++p) {
        const json& t = truth[i]["phases"][p];
        EXPECT_EQ(frames[i]["phases"][p]["phase"], t["phase"]);
        EXPECT_LE(WindowError(frames[i]["phases"][p], t, "begin"), kToleranceNs);
        EXPECT_LE(WindowError(frames[i]["phases"][p], t, "end"), kToleranceNs);
      }
    }
  }

  // The tree shapes (name, depth, count per node), message by message.
  // (Only msg.tree messages: whether a frame message also passes the threshold depends on
  // the machine's load and on the probes' own cost.)
  static std::vector<std::string> Trees(const Run& run) {
    std::vector<std::string> trees;
    for (const auto& report : OfType(run.out, "evil_method")) {
      if (report["name"] != "msg.tree") continue;
      std::string shape = report["name"].get<std::string>() + ":";
      for (const auto& node : report["tree"]) shape += fmt(node);
      trees.push_back(shape);
    }
    return trees;
  }
  static std::string fmt(const json& node) {
    return " " + std::to_string(node["depth"].get<int>()) + "/" + node["name"].get<std::string>() + "x" +
           std::to_string(node["count"].get<int>());
  }

  static void ExpectNoLosses(const Run& run) {
    auto stats = OfType(run.out, "stats");
    ASSERT_EQ(stats.size(), 1u);
    for (const char* counter : {"unmatched_dispatch_end", "dispatch_id_mismatch", "unmatched_method_exit",
                                "method_exit_missing", "ringbuf_full", "unknown_probe_id", "method_beats_overwritten"})
      EXPECT_EQ(Counter(run.out, counter), 0u) << counter;
  }

  TempDir dir_;
};

TEST_F(RelocationTest, ProbesShowsEachMovedPointAndWhy) {
  auto r = RunCommand({Looptrace(), "probes", "--exe", HookedLoop(), "--profile", HookedProfile()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("single-steps"), std::string::npos) << r.err;  // nothing left single-stepped
  SCOPED_TRACE(r.out);
  EXPECT_NE(PlacementOf(r.out, "dispatch.begin").find("call sites: all entries are direct calls"), std::string::npos);
  EXPECT_NE(PlacementOf(r.out, "dispatch.end").find("after calls"), std::string::npos);
  EXPECT_NE(PlacementOf(r.out, "method.enter").find("call sites"), std::string::npos);
  EXPECT_NE(PlacementOf(r.out, "method.exit").find("call sites"), std::string::npos);
  EXPECT_NE(PlacementOf(r.out, "frame.begin").find("call sites: all entries are direct calls (1;"), std::string::npos);
  // The -finstrument-functions hooks are exported (glibc defines them too), but no module
  // of the target imports them.
  EXPECT_NE(PlacementOf(r.out, "method.enter").find("imported by none of the target's"), std::string::npos);
  EXPECT_NE(PlacementOf(r.out, "phase.begin").find("call sites"), std::string::npos);
  EXPECT_NE(PlacementOf(r.out, "vsync").find("entry block"), std::string::npos);
  EXPECT_NE(r.out.find("-> call sites "), std::string::npos);
  EXPECT_NE(r.out.find("call in main"), std::string::npos);
  EXPECT_NE(r.out.find("call in flush"), std::string::npos);
  EXPECT_NE(r.out.find("-> after calls "), std::string::npos);
  EXPECT_NE(r.out.find("-> entry block"), std::string::npos);

  auto exact =
      RunCommand({Looptrace(), "probes", "--exe", HookedLoop(), "--profile", HookedProfile(), "--exact-entry"});
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  EXPECT_EQ(exact.out.find("moved off the entry"), std::string::npos) << exact.out;
  EXPECT_NE(exact.out.find("entry kept (single-stepped): --exact-entry"), std::string::npos) << exact.out;
  // loop_dispatch's uprobe and uretprobe trap on one instruction: 8 points for 9 probes.
  EXPECT_NE(exact.err.find("8 probe points start with an instruction the kernel single-steps"), std::string::npos)
      << exact.err;
}

TEST_F(RelocationTest, SameMessagesFramesAndTreesAsExactEntries) {
  Run exact = Trace(/*exact=*/true);
  Run moved = Trace(/*exact=*/false);
  ExpectMessagesMatchTruth(exact);
  ExpectMessagesMatchTruth(moved);
  ExpectFramesMatchTruth(exact);
  ExpectFramesMatchTruth(moved);
  ExpectNoLosses(exact);
  ExpectNoLosses(moved);

  // The message sequence, frames and call trees are identical.
  auto key = [](const std::vector<json>& lines, const std::string& type, const std::string& field) {
    std::vector<json> values;
    for (const auto& l : OfType(lines, type)) values.push_back(l[field]);
    return values;
  };
  EXPECT_EQ(key(exact.out, "message", "name"), key(moved.out, "message", "name"));
  EXPECT_EQ(key(exact.out, "frame", "frame_id"), key(moved.out, "frame", "frame_id"));
  auto exact_trees = Trees(exact), moved_trees = Trees(moved);
  EXPECT_EQ(exact_trees, moved_trees);
  // msg.tree runs work_a -> (work_b -> work_d), work_c x2 (merged): 20 of the 60 messages.
  ASSERT_EQ(moved_trees.size(), 20u);
  EXPECT_EQ(moved_trees.front(), "msg.tree: 0/x1 1/handle_treex1 2/work_ax1 3/work_bx1 4/work_dx1 3/work_cx2");
}

}  // namespace
}  // namespace looptrace::testing
