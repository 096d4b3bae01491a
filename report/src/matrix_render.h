// How a Matrix issues report looks in text and in folded stacks (shared by those renderers).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "looptrace/report/matrix_issues.h"
#include "looptrace/report/sampled_call_tree.h"

namespace looptrace {

// The fleet first (what a team asks the morning after a release), then the issues one by
// one, then the data quality. Not yet escaped for a terminal (the text renderer does that).
void RenderMatrixText(const MatrixIssuesReport& matrix, size_t top_n, std::ostream& out);

// Folded stacks: each listed issue's tree under its label ("slow"), or every group's merged
// tree together ("session").
std::vector<FoldedStack> MatrixFolded(const MatrixIssuesReport& matrix, bool session);

}  // namespace looptrace
