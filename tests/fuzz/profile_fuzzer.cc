// libFuzzer harness for the profile parser (loader ParseProfile). Oracle: an accepted
// profile satisfies the documented rules and survives a round trip through its text form;
// a refused one names the source and line and exits with the profile code.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "looptrace/events.h"
#include "looptrace/loader/profile.h"

namespace {

using namespace looptrace;
using namespace looptrace::loader;

std::string ArgText(const ArgSpec& arg) {
  std::string source = arg.source == LT_ARG_SOURCE_RETVAL
                           ? std::string("ret")
                           : "arg" + std::to_string(static_cast<int>(arg.source) + 1);
  return arg.name + "=" + source + ":" + std::string(ArgTypeName(arg.type));
}

std::string ToText(const Profile& profile) {
  std::string text = "profile " + profile.name + "\n";
  if (!profile.description.empty()) text += "description " + profile.description + "\n";
  for (const ProbeSpec& probe : profile.probes) {
    text += "probe " + std::string(RoleName(probe.role)) + " " +
            std::string(ProbeKindName(probe.kind)) + " " + probe.binary + " " + probe.point;
    for (const ArgSpec& arg : probe.args) text += " " + ArgText(arg);
    text += "\n";
  }
  return text;
}

bool SameProfile(const Profile& a, const Profile& b) {
  if (a.name != b.name || a.description != b.description || a.probes.size() != b.probes.size()) {
    return false;
  }
  for (size_t i = 0; i < a.probes.size(); ++i) {
    const ProbeSpec& p = a.probes[i];
    const ProbeSpec& q = b.probes[i];
    if (p.role != q.role || p.kind != q.kind || p.binary != q.binary || p.point != q.point ||
        p.args.size() != q.args.size()) {
      return false;
    }
    for (size_t j = 0; j < p.args.size(); ++j) {
      if (ArgText(p.args[j]) != ArgText(q.args[j])) return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = ParseProfile(text, "fuzz.profile");
  if (!profile) {
    if (profile.error().message.rfind("fuzz.profile:", 0) != 0) std::abort();
    if (profile.error().code != ExitCode::kProfile) std::abort();
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
      const bool ret = arg.source == LT_ARG_SOURCE_RETVAL;
      if (!ret && arg.source > 5) std::abort();
      if (ret != (probe.kind == ProbeKind::kUretprobe)) std::abort();
    }
  }
  auto again = ParseProfile(ToText(*profile), "fuzz.profile");
  if (!again || !SameProfile(*profile, *again)) std::abort();
  return 0;
}
