// One JSON record per report item, each with a "type" (schema in docs/output-formats.md):
// the JSON renderer writes them one a line, the HTML page embeds those lines, and the
// Chrome trace and the ClickHouse rows are made from them, so an item is serialized here
// and nowhere else. Matrix's keys come first in the records Matrix has (its issue
// envelope: the device block, tag, process, time).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>

#include "looptrace/report/report.h"

namespace looptrace {

// Parts several records share: a call tree (pre-order nodes with their share of the root;
// `marks`: the unfinished and exit_lost flags, which the thread dump leaves out) and a
// snapshot's /proc memory fields as one object.
nlohmann::json CallTreeJson(const std::vector<NamedCallNode>& tree, bool marks = true);
nlohmann::json MemoryKbJson(const std::vector<std::pair<std::string, uint64_t>>& memory_kb);

nlohmann::json SessionJson(const Report& report);
// "message", or "unfinished_message" for one still running at the session's end.
nlohmann::json MessageJson(const Message& message, bool finished);
nlohmann::json FrameJson(const FrameRecord& frame);
// A thread's on-CPU samples in a session without messages ("thread_profile").
nlohmann::json ThreadProfileJson(const ThreadProfile& profile);
// "fps" (a Matrix window) or "fps_scene".
nlohmann::json FpsJson(const Report& report, const FpsSummary& fps, const char* type);
nlohmann::json EvilMethodJson(const Report& report, const EvilMethodReport& evil);
nlohmann::json StallJson(const Report& report, const StallReport& stall);
nlohmann::json SignalAnrJson(const Report& report, const SignalAnrReport& signal);
nlohmann::json SpanLagJson(const Report& report, const SpanLagReport& lag);
nlohmann::json BarrierLeakJson(const BarrierLeakReport& leak);
// The cold start's "startup" record and a warm start's.
nlohmann::json ColdStartJson(const Report& report);
nlohmann::json WarmStartJson(const Report& report, const WarmStart& warm);

// Matrix issues read by `report ISSUES...` (matrix_records.cc): an issue with Matrix's keys
// (and every key it came with), a fleet group, and all the section's records in order.
std::string MatrixStackString(const std::vector<NamedCallNode>& tree);
nlohmann::json MatrixIssueJson(const MatrixIssue& issue);
nlohmann::json MatrixGroupJson(const MatrixIssueGroup& group);
void ForEachMatrixRecord(const MatrixIssuesReport& matrix, const std::function<void(const nlohmann::json&)>& emit);

// Every record of the report, in the order the JSON renderer writes them (a Matrix issues
// report: its records alone).
void ForEachRecord(const Report& report, const std::function<void(const nlohmann::json&)>& emit);

// A record as one line of text: invalid UTF-8 becomes U+FFFD, C1 controls and bidi
// overrides \u escapes (terminal-safe), no newline.
std::string RecordLine(const nlohmann::json& record);

}  // namespace looptrace
