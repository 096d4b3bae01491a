// One Matrix issue's JSON text decoded into a MatrixIssue (matrix_input.h reads the inputs and
// finds the issues in them). Parsed with simdjson: a fleet's day is millions of issues, and
// parsing was most of the time it took to read one.
#pragma once

#include <string>
#include <string_view>

#include "looptrace/report/matrix_issues.h"
#include "looptrace/symbols/proguard_mapping.h"
#include "looptrace/tracers/method_tree.h"

namespace looptrace::loader {

struct MatrixNaming {
  const MethodNamer* methods = nullptr;                // --method-mapping (Matrix methodMapping.txt)
  const symbols::ProguardMapping* proguard = nullptr;  // --proguard-mapping (thread stacks' frames)
};

// Decodes one issue object's JSON text (a Matrix issue or a looptrace record with Matrix's
// keys) into `builder`. `logcat_tag`: the tag Matrix logged it under, when read from logcat.
void AddMatrixIssueJson(std::string_view text, std::string_view source, std::string_view logcat_tag,
                        const MatrixNaming& naming, MatrixFleetBuilder& builder);

// `text` as a JSON string's contents, escaped as nlohmann::json's dump() escapes valid UTF-8
// (so kept keys read the same whichever parser read them).
void AppendJsonEscaped(std::string_view text, std::string* out);

}  // namespace looptrace::loader
