// Pieces of the text report that several of its sections use (text_renderer.cc, stall_text.cc).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/report/report.h"

namespace looptrace {

// A name from the target, a profile or a recording, on one line: control characters
// (newlines and tabs too) as visible escapes, so it can neither act on the terminal nor
// break the layout.
std::string Esc(std::string_view text);
// "4242" or, with its name known, "4242 \"gmain\"".
std::string ThreadLabel(const Report& report, uint32_t tid);
// "+1.250000" seconds from `base` ("-0.000100" before it).
std::string Relative(uint64_t ts, uint64_t base);
// "message \"on_tick\" (id 7)", or "message" for an unnamed one.
std::string MessageLabel(const Message& m);
// An instrumented call tree under `[message] root_label`, one line per node.
void RenderCallTree(const std::vector<NamedCallNode>& tree, const std::string& root_label, const std::string& indent,
                    std::ostream& out);
// "runtime stalls: ..." and one line per cause (at most 5 of each kind); nothing without causes.
void RenderCauses(const std::vector<StallCause>& causes, uint64_t base, std::string_view indent, std::ostream& out);

}  // namespace looptrace
