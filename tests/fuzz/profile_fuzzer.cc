// libFuzzer harness for the profile parser (loader ParseProfile). Oracle: an accepted
// profile satisfies the documented rules (a name, at least one probe, each with a binary, a
// point, provider:name for USDT and at most LT_MAX_ARGS arguments) and parses the same
// way twice; a refused one is a profile error with a message. Only the parts of the
// Profile API that stay put are used, so the harness follows the parser as it grows.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "loader/plan/profile.h"
#include "looptrace/events.h"
#include "looptrace/util/log.h"

namespace {

using namespace looptrace;
using namespace looptrace::loader;

bool SameProfile(const Profile& a, const Profile& b) {
  if (a.name != b.name || a.description != b.description || a.probes.size() != b.probes.size()) {
    return false;
  }
  for (size_t i = 0; i < a.probes.size(); ++i) {
    const ProbeSpec& p = a.probes[i];
    const ProbeSpec& q = b.probes[i];
    if (p.role != q.role || p.kind != q.kind || p.binary != q.binary || p.point != q.point ||
        p.args.size() != q.args.size() || p.line != q.line) {
      return false;
    }
    for (size_t j = 0; j < p.args.size(); ++j) {
      if (p.args[j].name != q.args[j].name) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  log::Verbosity() = log::Level::kError;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = ParseProfile(text, "fuzz.profile");
  if (!profile) {
    if (profile.error().message.empty() || profile.error().code != ExitCode::kProfile) {
      std::abort();
    }
    return 0;
  }
  if (profile->probes.empty() || profile->name.empty()) std::abort();
  for (const ProbeSpec& probe : profile->probes) {
    if (probe.binary.empty() || probe.point.empty() || probe.args.size() > LT_MAX_ARGS) {
      std::abort();
    }
    if (probe.kind == ProbeKind::kUsdt) {
      const size_t colon = probe.point.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == probe.point.size()) std::abort();
    }
    for (const ArgSpec& arg : probe.args) {
      if (arg.name.empty()) std::abort();
    }
  }
  auto again = ParseProfile(text, "fuzz.profile");
  if (!again || !SameProfile(*profile, *again)) std::abort();
  return 0;
}
