// Reader for Tencent Matrix's methodMapping.txt (the id -> method table written by the
// Matrix Gradle plugin, build/outputs/mapping/<variant>/methodMapping.txt).
//
// Line format (GP/item/TraceMethod.java toString):
//   <id>,<accessFlag>,<class> <method> <desc>
//   1,4,sample.tencent.matrix.battery.stats.BatteryStatsSubProcActivity onCreate (Landroid.os.Bundle;)V
//   1048574,1,android.os.Handler dispatchMessage (Landroid.os.Message;)V
// Native methods have no descriptor. Names are dotted and de-obfuscated.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::symbols {

struct MappedMethod {
  int id = 0;
  int access_flags = 0;     // decimal ASM access bits (1 public, 2 private, 8 static, ...)
  std::string class_name;   // dotted, e.g. sample.app.TestTraceMainActivity
  std::string method_name;  // e.g. onCreate
  std::string descriptor;   // e.g. (Landroid.os.Bundle;)V ; empty for native methods

  // "sample.app.TestTraceMainActivity.onCreate(Landroid.os.Bundle;)V" (class.method + desc).
  std::string Display() const;
};

class MethodMapping {
 public:
  // Largest id Matrix can record (20-bit id field; METHOD_ID_MAX = 0xFFFFF).
  static constexpr int kMaxId = 0xFFFFF;

  // Reads and parses `path`. A missing or unreadable file is an error naming the path;
  // malformed lines are reported in `warnings` (may be null) like Parse does.
  static Result<MethodMapping> Load(const std::string& path, std::vector<std::string>* warnings);

  // Parses "<id>,<accessFlag>,<class> <method> [<desc>]" lines. Blank lines are ignored;
  // CRLF endings and a UTF-8 BOM are accepted. Malformed lines (missing fields, id not a
  // decimal number in [0, 0xFFFFF], bad access flag, extra fields) are skipped, counted and
  // described in `warnings` (may be null) as "SOURCE:LINE: why". A duplicate id replaces the
  // earlier entry (last wins) with a warning.
  static MethodMapping Parse(std::string_view text, std::string_view source_name, std::vector<std::string>* warnings);

  // The method with `id`, or null.
  const MappedMethod* Find(int id) const;
  size_t size() const { return methods_.size(); }
  size_t malformed_lines() const { return malformed_lines_; }

 private:
  std::unordered_map<int, MappedMethod> methods_;
  size_t malformed_lines_ = 0;
};

}  // namespace looptrace::symbols
