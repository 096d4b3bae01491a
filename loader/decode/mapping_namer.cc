#include "loader/decode/mapping_namer.h"

#include "looptrace/util/log.h"

namespace looptrace::loader {

std::optional<std::string> MappingNamer::Name(MethodIdKind kind, uint64_t id) const {
  if (kind != MethodIdKind::kId || id > static_cast<uint64_t>(symbols::MethodMapping::kMaxId)) return std::nullopt;
  if (const auto* m = mapping_.Find(static_cast<int>(id))) return m->Display();
  return std::nullopt;
}

Result<std::unique_ptr<MappingNamer>> MappingNamer::Load(const std::string& path) {
  std::vector<std::string> warnings;
  auto mapping = symbols::MethodMapping::Load(path, &warnings);
  if (!mapping) {
    Error e = mapping.error();
    e.code = ExitCode::kUsage;
    return std::unexpected(e);
  }
  for (size_t i = 0; i < warnings.size() && i < 5; ++i) log::Warning("{}", warnings[i]);
  if (warnings.size() > 5) log::Warning("{}: {} more malformed lines skipped", path, warnings.size() - 5);
  return std::make_unique<MappingNamer>(std::move(*mapping));
}

}  // namespace looptrace::loader
