#include "looptrace/report/frames_report.h"

namespace looptrace {

const std::vector<std::string>& DropBuckets() {
  static const std::vector<std::string> kBuckets = {"BEST", "NORMAL", "MIDDLE", "HIGH", "FROZEN"};
  return kBuckets;
}

}  // namespace looptrace
