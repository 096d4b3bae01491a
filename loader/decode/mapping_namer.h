// Names method ids in reports from a Matrix methodMapping.txt.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "looptrace/symbols/method_mapping.h"
#include "looptrace/tracers/evil_method.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

class MappingNamer : public MethodNamer {
 public:
  explicit MappingNamer(symbols::MethodMapping mapping) : mapping_(std::move(mapping)) {}
  std::optional<std::string> Name(MethodIdKind kind, uint64_t id) const override;

  // Loads the file; malformed lines are reported (up to five) as warnings on stderr.
  static Result<std::unique_ptr<MappingNamer>> Load(const std::string& path);

 private:
  symbols::MethodMapping mapping_;
};

}  // namespace looptrace::loader
