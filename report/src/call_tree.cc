#include "looptrace/report/call_tree.h"

namespace looptrace {

std::string_view MethodIdKindName(MethodIdKind kind) {
  switch (kind) {
    case MethodIdKind::kId:
      return "id";
    case MethodIdKind::kAddress:
      return "address";
    case MethodIdKind::kString:
      return "string";
    case MethodIdKind::kProbe:
      return "probe";
  }
  return "id";
}

std::optional<MethodIdKind> MethodIdKindFromName(std::string_view name) {
  for (auto kind : {MethodIdKind::kId, MethodIdKind::kAddress, MethodIdKind::kString, MethodIdKind::kProbe})
    if (MethodIdKindName(kind) == name) return kind;
  return std::nullopt;
}

}  // namespace looptrace
