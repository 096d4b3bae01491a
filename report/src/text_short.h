// The lines only the short text report has (short_view.h): the one-line data quality and
// cost, the hint that completes stacks, and the last line naming what was cut.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "looptrace/report/short_view.h"
#include "looptrace/report/stats.h"

namespace looptrace {

// "hint: --dwarf-unwind completes 40 of 52 incomplete stacks (libpython3.11.so keeps no
// frame pointers)\n", on a line of its own; "" when nothing would complete them.
std::string IncompleteStacksHint(const IncompleteStacks& incomplete);
// "  incomplete stacks: 52 (reason 40, reason 12)\n" under the data-quality table; "" if none.
std::string IncompleteStacksLine(const IncompleteStacks& incomplete);
// "data quality: complete (no losses counted)", or with the info counters that are not zero.
std::string QualityLine(const Stats& stats);
// "looptrace cost: ..." in one line; "" without cost figures.
std::string CostLine(const Stats& stats, uint64_t session_ns);
// "3 more sections with -v/--full or --html: 4 more evil methods, ...\n"; "" when nothing was cut.
std::string CutsLine(const std::vector<std::string>& cuts);

}  // namespace looptrace
